"""Per-user bookkeeping shared by every capability, kept in the user's own partition ``U#app#user``:

- the registry of the user's scopes (``SCOPE#<project>``), written with every write, so erasure and
  export list a user's projects without scanning the table; only an erasure removes it;
- the deletion mark (``DELETION``): while it exists, every write for the user is refused (409), in the
  same atomic operation as the write (:class:`GuardedTable`);
- when something of the user's was last deleted (``FORGOTTEN``): an ``Idempotency-Key`` answer recorded
  before it is not replayed (it may hold what was deleted).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence

from agentmem.errors import ConditionFailed, UserDeletionInProgress
from agentmem.keys import Scope, UserRef, escape, scope_of_partition, unescape, user_of_partition
from agentmem.stores.table import (
    MAX_TRANSACTION_ITEMS,
    Add,
    Check,
    Condition,
    Item,
    Key,
    Page,
    Put,
    Table,
    WriteOp,
    op_key,
    query_all,
    size_bound,
)

SCOPE_REGISTRY = "SCOPE#"
DELETION_MARK = "DELETION"
FORGOTTEN = "FORGOTTEN"


def registry_sk(project_id: str | None) -> str:
    return SCOPE_REGISTRY + escape(project_id or "")


def registry_item(scope: Scope) -> Item:
    """Write this with any item stored in ``scope`` (an idempotent put)."""
    return {"pk": scope.user_ref.partition, "sk": registry_sk(scope.project_id), "project_id": scope.project_id}


def registered_scopes(table: Table, user: UserRef) -> list[Scope]:
    """Every scope the user has written to: always the global scope, then each project."""
    projects = {
        unescape(item["sk"][len(SCOPE_REGISTRY) :]) for item in query_all(table, user.partition, SCOPE_REGISTRY)
    }
    projects.discard("")
    return [user.scope(None), *(Scope(user.app, user.user, p) for p in sorted(projects))]


def forgot(table: Table, scope: Scope) -> None:
    """Note that something of the user's was just deleted from ``scope`` (call after the delete): an
    ``Idempotency-Key`` answer of a request that began before now must not be replayed. Only while the
    scope is registered: after an erasure (which removed the records too) nothing of the user comes back."""
    user = scope.user_ref
    note = Put({"pk": user.partition, "sk": FORGOTTEN, "at": int(time.time() * 1000)})
    with contextlib.suppress(ConditionFailed):
        table.transact_write([Check(user.partition, registry_sk(scope.project_id), Condition(exists=True)), note])


def forgotten_at(table: Table, user: UserRef) -> int:
    """When something of the user's was last deleted (epoch milliseconds; 0: never)."""
    item = table.get(user.partition, FORGOTTEN)
    return int(item["at"]) if item else 0


def deletion_mark_key(user: UserRef) -> Key:
    return user.partition, DELETION_MARK


def ensure_writable(table: Table, user: UserRef) -> None:
    """Refuse a write early (before any embedding or write) while the user's erasure runs.

    A plain read: it only saves work. What makes erasure safe is :class:`GuardedTable`, which conditions
    the writes themselves on the mark."""
    if table.get(*deletion_mark_key(user)) is not None:
        raise UserDeletionInProgress(_MARKED)


_MARKED = "this user's data is being deleted; writes are refused until it finishes"
_ERASED_MEANWHILE = "this user's data was erased while the request ran; nothing of it was kept"
_TRANSACTION_BYTES = 3_000_000
"""Items per transaction stay under DynamoDB's 4 MB aggregate limit (sizes are estimated generously)."""


def guarded(table: Table) -> Table:
    """``table`` behind :class:`GuardedTable` (once)."""
    return table if isinstance(table, GuardedTable) else GuardedTable(table)


class GuardedTable:
    """The Table the memory, graph and idempotency services write through: no write lands for a user
    once their erasure has begun, nor in a scope the erasure has already unregistered.

    Every write that could create an item of a user (a put or an add, unless its condition requires the
    item to exist) goes in a transaction that also checks, atomically:

    - that the user's deletion mark is absent: the workflow sets the mark before its sweep, so every
      item that will ever land is already there when the sweep and the final verification read;
    - for an item of a scope partition, that the scope's registry item exists (unless the same
      transaction puts it): the registry is removed only at the very end of an erasure, so a request
      paused across a whole erasure fails its later writes instead of landing them in a partition no
      erasure or export would visit.

    A write refused this way raises UserDeletionInProgress (409) and wrote nothing. Deletes, and writes
    that require their item to exist, cannot bring back what an erasure removed: they pass unchanged.
    Unconditional batches become transactions of up to 100 items (the checks included).
    """

    def __init__(self, table: Table) -> None:
        self._table = table
        self.batches_in_order = table.batches_in_order

    # -- reads pass through ----------------------------------------------------------------------

    def get(self, pk: str, sk: str) -> Item | None:
        return self._table.get(pk, sk)

    def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        return self._table.batch_get(keys)

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
        return self._table.query(
            pk, prefix, limit=limit, descending=descending, start_after=start_after, include_expired=include_expired
        )

    def ping(self) -> None:
        self._table.ping()

    # -- writes ----------------------------------------------------------------------------------

    def put(self, item: Item, condition: Condition | None = None) -> None:
        op = Put(item, condition)
        if _guards([op]):
            self.transact_write([op])
        else:
            self._table.put(item, condition)

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None:
        self._table.delete(pk, sk, condition)

    def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        if deletes:
            self._table.batch_write(deletes=deletes)
        unique = list({(item["pk"], item["sk"]): item for item in puts}.values())
        unique.sort(key=lambda item: not str(item["sk"]).startswith(SCOPE_REGISTRY))  # registries first
        ops = [Put(item) for item in unique]
        if not _guards(ops):
            self._table.batch_write(puts=unique)
            return
        chunks: list[list[WriteOp]] = [[]]
        size = 0
        owners: set[str] = set()
        for op in ops:
            item_size = size_bound(op.item)
            owners.add(op.item["pk"])
            # At most one mark and one registry check per partition owner: keep room for them.
            if chunks[-1] and (
                len(chunks[-1]) + 2 * len(owners) >= MAX_TRANSACTION_ITEMS or size + item_size > _TRANSACTION_BYTES
            ):
                chunks.append([])
                size, owners = 0, {op.item["pk"]}
            chunks[-1].append(op)
            size += item_size
        # The first chunk holds the registries the others' checks require: it lands first, then the rest
        # together (concurrently on DynamoDB; on SQLite all of them in order, in one commit).
        if self.batches_in_order:
            together = chunks
        else:
            self.transact_write(chunks[0])
            together = chunks[1:]
        refused = [outcome for outcome in self.transact_write_each(together) if outcome is not None]
        if refused:
            raise refused[0]

    def transact_write(self, ops: Sequence[WriteOp]) -> None:
        checks = _guards(ops)
        if not checks:
            self._table.transact_write(ops)
            return
        try:
            self._table.transact_write([*checks, *ops])
        except ConditionFailed:
            self._raise_if_guarded(checks)
            raise

    def transact_write_each(self, batches: Sequence[Sequence[WriteOp]]) -> list[ConditionFailed | None]:
        """Each batch with its own checks; a batch refused by a check raises UserDeletionInProgress."""
        outcomes = self._table.transact_write_each([[*_guards(ops), *ops] for ops in batches])
        for ops, outcome in zip(batches, outcomes, strict=True):
            if outcome is not None:
                self._raise_if_guarded(_guards(ops))
        return outcomes

    def _raise_if_guarded(self, checks: Sequence[Check]) -> None:
        for check in checks:
            present = self._table.get(check.pk, check.sk) is not None
            if present != check.condition.exists:
                raise UserDeletionInProgress(_MARKED if present else _ERASED_MEANWHILE)

    def increment(self, pk: str, sk: str, deltas: Mapping[str, int], condition: Condition | None = None) -> Item:
        op = Add(pk, sk, deltas, condition)
        if not _guards([op]):
            return self._table.increment(pk, sk, deltas, condition)
        self.transact_write([op])
        return self._table.get(pk, sk) or {"pk": pk, "sk": sk}


def _can_create(op: WriteOp) -> bool:
    if not isinstance(op, Put | Add):
        return False
    condition = op.condition
    return condition is None or not (condition.exists is True or condition.equals)


def _guards(ops: Sequence[WriteOp]) -> list[Check]:
    """The checks that make ``ops`` refuse to land for a user being (or just) erased; [] when none apply."""
    keys = [op_key(op) for op in ops]
    written = set(keys)
    marks: dict[Key, None] = {}
    registries: dict[Key, None] = {}
    partitions = dict.fromkeys(key[0] for op, key in zip(ops, keys, strict=True) if _can_create(op))
    for pk in partitions:
        scope = scope_of_partition(pk)
        if scope is not None:
            marks[deletion_mark_key(scope.user_ref)] = None
            registries[(scope.user_ref.partition, registry_sk(scope.project_id))] = None
        user = user_of_partition(pk)
        if user is not None:
            marks[deletion_mark_key(user)] = None
    checks = [Check(pk, sk, Condition(exists=False)) for pk, sk in marks if (pk, sk) not in written]
    checks += [Check(pk, sk, Condition(exists=True)) for pk, sk in registries if (pk, sk) not in written]
    return checks
