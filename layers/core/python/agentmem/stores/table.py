"""The Table port: the few key-value operations every store of this project needs.

Items are plain dicts with string keys ``pk`` and ``sk``; values are str, int, bool, None, bytes,
lists and dicts of those (no floats: DynamoDB would need Decimals; store them as strings or bytes).
An item whose ``ttl`` (epoch seconds) has passed reads as absent in every adapter (unless a query
asks for ``include_expired``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Item = dict[str, Any]
Key = tuple[str, str]

TTL_ATTRIBUTE = "ttl"


@dataclass(frozen=True, slots=True)
class Condition:
    """A precondition on one item. ``exists``: True must exist, False must not. ``equals``: attribute values."""

    exists: bool | None = None
    equals: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Put:
    item: Item
    condition: Condition | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    pk: str
    sk: str
    condition: Condition | None = None


@dataclass(frozen=True, slots=True)
class Check:
    pk: str
    sk: str
    condition: Condition


@dataclass(frozen=True, slots=True)
class Add:
    """Add ``deltas`` to integer attributes (missing ones count as 0), creating the item if it is absent."""

    pk: str
    sk: str
    deltas: Mapping[str, int]
    condition: Condition | None = None


WriteOp = Put | Delete | Check | Add


def op_key(op: WriteOp) -> Key:
    return (op.item["pk"], op.item["sk"]) if isinstance(op, Put) else (op.pk, op.sk)


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Item]
    next_start: str | None = None
    """The sort key to pass as ``start_after`` for the next page; None when the query is exhausted."""


MAX_TRANSACTION_ITEMS = 100


@runtime_checkable
class Table(Protocol):
    def get(self, pk: str, sk: str) -> Item | None: ...

    def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        """The items that exist among ``keys``, in no particular order."""
        ...

    def put(self, item: Item, condition: Condition | None = None) -> None:
        """Write ``item``; raise ConditionFailed when ``condition`` does not hold."""
        ...

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None: ...

    def query(
        self,
        pk: str,
        prefix: str = "",
        *,
        limit: int | None = None,
        descending: bool = False,
        start_after: str | None = None,
        include_expired: bool = False,
    ) -> Page:
        """Items of partition ``pk`` whose sort key starts with ``prefix``, in sort-key order.

        ``include_expired``: also the items whose ``ttl`` has passed but which the store still holds
        (erasure and export must reach everything held)."""
        ...

    def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        """Unconditional puts and deletes, in any number; each item is written atomically, the batch is not."""
        ...

    def transact_write(self, ops: Sequence[WriteOp]) -> None:
        """All of ``ops`` or none (at most 100); raise ConditionFailed when a condition does not hold."""
        ...

    def increment(self, pk: str, sk: str, deltas: Mapping[str, int], condition: Condition | None = None) -> Item:
        """Atomically add ``deltas`` to integer attributes (missing ones count as 0); return the new item.

        Raise ConditionFailed when ``condition`` does not hold (``Condition(exists=True)``: never create it)."""
        ...

    def ping(self) -> None:
        """Raise Unavailable when the store cannot be reached."""
        ...


def is_expired(item: Mapping[str, Any], now: float | None = None) -> bool:
    expires = item.get(TTL_ATTRIBUTE)
    return isinstance(expires, int) and expires <= (time.time() if now is None else now)


def prefix_upper_bound(prefix: str) -> str:
    """The smallest string greater than every string that starts with ``prefix`` (code-point order)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def query_all(table: Table, pk: str, prefix: str = "", *, page_size: int = 500) -> list[Item]:
    """Every item of a partition prefix, following pages."""
    items: list[Item] = []
    start: str | None = None
    while True:
        page = table.query(pk, prefix, limit=page_size, start_after=start)
        items.extend(page.items)
        if page.next_start is None:
            return items
        start = page.next_start
