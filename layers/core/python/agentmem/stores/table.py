"""The Table port: the few key-value operations every store of this project needs.

Items are plain dicts with string keys ``pk`` and ``sk``; values are str, int, bool, None, bytes,
lists and dicts of those (no floats: DynamoDB would need Decimals; store them as strings or bytes).
An item whose ``ttl`` (epoch seconds) has passed reads as absent in every adapter (unless a query
asks for ``include_expired``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentmem.capacity import item_size, value_size
from agentmem.errors import ConditionFailed, InvalidInput, PayloadTooLarge

Item = dict[str, Any]
Key = tuple[str, str]

TTL_ATTRIBUTE = "ttl"


@dataclass(frozen=True, slots=True)
class Condition:
    """A precondition on one item. ``exists``: True must exist, False must not. ``equals``: attribute values.
    ``absent``: attributes the (existing) item must not have."""

    exists: bool | None = None
    equals: Mapping[str, Any] = field(default_factory=dict)
    absent: tuple[str, ...] = ()


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
MAX_ITEM_BYTES = 400 * 1024
"""DynamoDB's item size limit (attribute names and values), enforced on every adapter alike."""
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024


@runtime_checkable
class Table(Protocol):
    batches_in_order: bool
    """True when :meth:`transact_write_each` applies its batches one after another, each seeing those before
    it, in one commit (SQLite); False when they may land in any order (DynamoDB sends them concurrently)."""

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

    def transact_write_each(self, batches: Sequence[Sequence[WriteOp]]) -> list[ConditionFailed | None]:
        """Each batch as one :meth:`transact_write`, independently of the others (the DynamoDB adapter
        sends them concurrently): per batch, None once written or the ConditionFailed that refused it.
        Any other error is raised (some batches may then be written, as with separate calls)."""
        ...

    def increment(
        self,
        pk: str,
        sk: str,
        deltas: Mapping[str, int],
        condition: Condition | None = None,
        *,
        expires_at: int | None = None,
    ) -> Item:
        """Atomically add ``deltas`` to integer attributes (missing ones count as 0); return the new item.
        ``expires_at``: the item's expiry (:data:`TTL_ATTRIBUTE`, epoch seconds) when it has none yet.

        Raise ConditionFailed when ``condition`` does not hold (``Condition(exists=True)``: never create it)."""
        ...

    def ping(self) -> None:
        """Raise Unavailable when the store cannot be reached."""
        ...


def size_bound(item: Mapping[str, Any]) -> int:
    """At least :func:`item_size`, computed in C: four bytes per character of repr(), which spells every
    name and value with at least one character per byte or small number DynamoDB counts (a test checks
    the bound on arbitrary items)."""
    return 4 * len(repr(item))


def check_items(items: Iterable[Mapping[str, Any]]) -> None:
    """Refuse items no adapter may store: keys or items over DynamoDB's limits.

    Services call this on everything a request will write, before its first write, so a refused
    request leaves nothing behind and gets the same answer from every table.
    """
    for item in items:
        check_item(item)


def check_item(item: Mapping[str, Any], bound: int | None = None) -> None:
    """:func:`check_items` for one item; ``bound``: an upper bound of its size already at hand (else
    :func:`size_bound`), so that only an item near the limit is measured exactly."""
    pk, sk = item["pk"], item["sk"]
    # A character is at most 4 bytes of UTF-8: only keys longer than a quarter of a limit are measured.
    if len(pk) > MAX_PARTITION_KEY_BYTES // 4 or len(sk) > MAX_SORT_KEY_BYTES // 4:
        pk_bytes, sk_bytes = value_size(pk), value_size(sk)
        if pk_bytes > MAX_PARTITION_KEY_BYTES or sk_bytes > MAX_SORT_KEY_BYTES:
            raise InvalidInput(
                f"the ids of this request are too long once encoded (a key of {max(pk_bytes, sk_bytes)} bytes)",
                code="key_too_long",
            )
    if (size_bound(item) if bound is None else bound) <= MAX_ITEM_BYTES:
        return  # the exact count walks every value in Python: only for items near the limit
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise PayloadTooLarge(
            f"an item of this request would be {size} bytes stored; the limit is {MAX_ITEM_BYTES}",
            code="item_too_large",
        )


def write_outcome(write: Callable[[Sequence[WriteOp]], None], ops: Sequence[WriteOp]) -> ConditionFailed | None:
    """``write(ops)``; the ConditionFailed it raised, or None (for ``transact_write_each``)."""
    try:
        write(ops)
    except ConditionFailed as refused:
        return refused
    return None


def is_expired(item: Mapping[str, Any], now: float | None = None) -> bool:
    expires = item.get(TTL_ATTRIBUTE)
    return isinstance(expires, int) and expires <= (time.time() if now is None else now)


def prefix_upper_bound(prefix: str) -> str:
    """The smallest string greater than every string that starts with ``prefix`` (code-point order)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def query_all(table: Table, pk: str, prefix: str = "", *, page_size: int = 500, limit: int | None = None) -> list[Item]:
    """Every item of a partition prefix, following pages; at most ``limit`` of them when given."""
    items: list[Item] = []
    start: str | None = None
    while limit is None or len(items) < limit:
        size = page_size if limit is None else min(page_size, limit - len(items))
        page = table.query(pk, prefix, limit=size, start_after=start)
        items.extend(page.items)
        if page.next_start is None:
            break
        start = page.next_start
    return items
