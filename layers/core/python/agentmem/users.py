"""Per-user bookkeeping shared by every capability, kept in the user's own partition ``U#app#user``:

- the registry of the user's scopes (``SCOPE#<project>``), written with every write, so erasure and
  export list a user's projects without scanning the table; only an erasure removes it;
- the deletion mark (``DELETION``, with :data:`GUARD_SHARDS` shards ``DELETION#<k>`` set and cleared with
  it): while it exists, every write for the user is refused (409), in the same atomic operation as the
  write (:class:`GuardedTable`);
- ``FORGOTTEN``, when something of the user's was deleted, as deletes wrote it before an
  ``Idempotency-Key`` record listed the items its answer holds (agentmem/idempotency.py): nothing writes
  it any more; it is read only for the records kept before (at most a day: their TTL), which it still
  stops from being replayed after a delete.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from agentmem import in_flight
from agentmem.errors import ConditionFailed, DeadlineExceeded, UserDeletionInProgress
from agentmem.keys import Scope, UserRef, escape, scope_of_partition, unescape, user_of_partition
from agentmem.stores.table import (
    MAX_TRANSACTION_ITEMS,
    Add,
    Check,
    Condition,
    Delete,
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
REGISTRY_SHARD = "SCOPEK#"
DELETION_MARK = "DELETION"
MARK_SHARD = "DELETION#"
FORGOTTEN = "FORGOTTEN"
"""Written by the deletes of earlier versions; read only for the ``Idempotency-Key`` records they kept."""
GUARD_SHARDS = 16
"""The deletion mark and each scope's registry have this many shards, items of their own that exist with
them. A write's transaction checks one shard of each, drawn at random: DynamoDB cancels two concurrent
transactions that hold one item (a condition check included), and if every write of a user checked the
one mark and the one registry, a user's concurrent writes would cancel each other (docs/adr/0503)."""


APP_USERS = "AU#"
"""The partition ``AU#<app>`` lists every user of an app (``<user>``), written once with the user's first
registered scope (:data:`LISTED`): what deleting a whole memory (an app) erases, user by user, and what
``GET /v1/apps/{app}/users`` pages through (agentmem/app_users.py)."""


LISTED = "listed"
"""Set on a scope's registry shards written with the user's row in the app's user list. A shard without it
was written before the list existed: the first write that reads it lists the user, then sets it (so a user of
earlier data is listed from their next write on, each shard costing one transaction once)."""


def app_users_partition(app: str) -> str:
    return APP_USERS + escape(app)


def app_user_item(user: UserRef) -> Item:
    return {"pk": app_users_partition(user.app), "sk": escape(user.user), "user": user.user}


def app_user_key(user: UserRef) -> Key:
    return app_users_partition(user.app), escape(user.user)


def app_users(table: Table, app: str, *, after: str | None = None, limit: int = 100) -> tuple[list[str], str | None]:
    """A page of the app's users (in key order) and where the next page starts (None on the last)."""
    page = table.query(app_users_partition(app), limit=limit, start_after=after)
    return [str(item["user"]) for item in page.items], page.next_start


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


def list_projects(
    table: Table, user: UserRef, *, after: str | None = None, limit: int = 100
) -> tuple[list[str], str | None]:
    """A page of the projects the user has written to (in key order, global scope aside), and the cursor
    of the next page (the last project of this one; None on the last page). A project stays listed after
    its data was deleted, until the user is erased."""
    start = registry_sk(after) if after is not None else None
    # limit + 2: the global scope's item (first, when ``after`` is None) and one to tell whether more follow
    page = table.query(user.partition, SCOPE_REGISTRY, limit=limit + 2, start_after=start)
    projects = [p for p in (unescape(i["sk"][len(SCOPE_REGISTRY) :]) for i in page.items) if p]
    if len(projects) > limit:  # one more than the page (the global scope's item aside): another page follows
        return projects[:limit], projects[limit - 1]
    return projects, None


def forgotten_at(table: Table, user: UserRef) -> int:
    """When a delete of an earlier version last wrote the user's watermark (epoch milliseconds; 0: never).

    Only for an ``Idempotency-Key`` record kept before records listed what their answer holds: such a
    record is not replayed if recorded before this. Nothing writes the watermark any more (deletes of one
    user would all contend on this one item on DynamoDB, and any delete stopped every replay)."""
    item = table.get(user.partition, FORGOTTEN)
    return int(item["at"]) if item else 0


def deletion_mark_key(user: UserRef) -> Key:
    return user.partition, DELETION_MARK


def mark_shard_key(user: UserRef, shard: int) -> Key:
    return user.partition, f"{MARK_SHARD}{shard:02d}"


def mark_items(mark: Item) -> list[Item]:
    """The deletion mark item and its shards (put together, in one transaction)."""
    user = user_of_partition(mark["pk"])
    assert user is not None
    return [mark, *({"pk": pk, "sk": sk} for pk, sk in (mark_shard_key(user, k) for k in range(GUARD_SHARDS)))]


def mark_keys(user: UserRef) -> list[Key]:
    """The keys of the deletion mark and its shards."""
    return [deletion_mark_key(user), *(mark_shard_key(user, k) for k in range(GUARD_SHARDS))]


def registry_shard_key(scope: Scope, shard: int) -> Key:
    return scope.user_ref.partition, f"{REGISTRY_SHARD}{shard:02d}#{escape(scope.project_id or '')}"


def is_guard_item(sk: str, *, registry: bool) -> bool:
    """A deletion mark item (or, with ``registry``, a registry item): what erasure keeps until the end."""
    if sk == DELETION_MARK or sk.startswith(MARK_SHARD):
        return True
    return registry and sk.startswith((SCOPE_REGISTRY, REGISTRY_SHARD))


def ensure_writable(table: Table, user: UserRef) -> None:
    """Refuse a write early (before any embedding or write) while the user's erasure runs.

    A plain read: it only saves work. What makes erasure safe is :class:`GuardedTable`, which conditions
    the writes themselves on the mark."""
    hold(user)
    if table.get(*deletion_mark_key(user)) is not None:
        raise UserDeletionInProgress(_MARKED)


_MARKED = "this user's data is being deleted; writes are refused until it finishes"
_ERASED_MEANWHILE = "this user's data was erased while the request ran; nothing of it was kept"
_TRANSACTION_BYTES = 3_000_000
"""Items per transaction stay under DynamoDB's 4 MB aggregate limit (sizes are estimated generously)."""


WRITE_MARGIN_SECONDS = 1.0
"""A request's writes end this long before its time does, so that none starts too late to finish."""
_writes_end: ContextVar[float | None] = ContextVar("agentmem_writes_end", default=None)
_wrote: ContextVar[list[bool] | None] = ContextVar("agentmem_request_wrote", default=None)
_holding: ContextVar[dict[UserRef, Any] | None] = ContextVar("agentmem_request_holds", default=None)


def hold(user: UserRef) -> None:
    """The request (:func:`writes_end_with`) is one of the user's in flight until it ends, when the process
    tracks them (the local server: :mod:`agentmem.in_flight`). Called before the deletion mark is read, so an
    erasure that waits for the user's requests after writing its mark waits for every one that could have
    read no mark."""
    held = _holding.get()
    locks = in_flight.tracker()
    if held is None or locks is None or user in held:
        return
    held[user] = locks.hold(user)


def _hold_writers(ops: Sequence[WriteOp]) -> None:
    if _holding.get() is None or in_flight.tracker() is None:
        return
    for op in ops:
        if _can_create(op):
            pk = op_key(op)[0]
            scope = scope_of_partition(pk)
            user = scope.user_ref if scope is not None else user_of_partition(pk)
            if user is not None:
                hold(user)


def settle(user: UserRef, seconds: float) -> bool:
    """Wait until no request of the user is in flight in any process of this machine, at most ``seconds``;
    True when this process tracks them (the wait is done: nothing more to wait), False when it cannot tell."""
    locks = in_flight.tracker()
    if locks is None:
        return False
    locks.wait_idle(user, seconds)
    return True


@contextlib.contextmanager
def writes_end_with(context: Any) -> Iterator[None]:
    """Within, a request whose time is nearly up starts no write: :class:`GuardedTable` refuses its *first*
    write (503 ``deadline_exceeded``, nothing written) once the invocation of ``context`` (Lambda's, or the
    local server's :class:`~agentmem.local.events.LocalContext`) has less than :data:`WRITE_MARGIN_SECONDS`
    left. A request that has begun writing finishes, whatever the time: what it announces (the change log
    row every other process reads) lands with what it wrote, so a 503 always means nothing was written.
    Every write remains checked against the user's deletion mark and scope registry, so none of them lands
    in a user an erasure has marked. A thread started within (the local erasure runner's) starts in an empty
    context: the deadline does not follow it."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    end = time.monotonic() + remaining() / 1000 - WRITE_MARGIN_SECONDS if remaining is not None else None
    token = _writes_end.set(end)
    wrote = _wrote.set([False])
    held: dict[UserRef, Any] = {}
    holding = _holding.set(held)
    try:
        yield
    finally:
        _holding.reset(holding)
        _wrote.reset(wrote)
        _writes_end.reset(token)
        for handle in held.values():
            in_flight.UserLocks.release(handle)


def _refuse_late_writes() -> None:
    """Refuse a request's first write once its time is nearly up (:func:`writes_end_with`)."""
    end = _writes_end.get()
    wrote = _wrote.get()
    if wrote is not None and wrote[0]:
        return
    if end is not None and time.monotonic() >= end:
        raise DeadlineExceeded("the request's time ran out before it could write; nothing was written; retry it")


def _began_writing() -> None:
    wrote = _wrote.get()
    if wrote is not None:
        wrote[0] = True


def _only_deletes(ops: Sequence[WriteOp]) -> bool:
    """A delete may run after the request's writes have ended: it cannot bring back what an erasure removed."""
    return all(isinstance(op, Delete | Check) for op in ops)


def guarded(table: Table) -> Table:
    """``table`` behind :class:`GuardedTable` (once)."""
    return table if isinstance(table, GuardedTable) else GuardedTable(table)


class GuardedTable:
    """The Table the memory, graph and idempotency services write through: no write lands for a user
    once their erasure has begun, nor in a scope the erasure has already unregistered.

    Every write that could create an item of a user (a put or an add, unless its condition requires the
    item to exist) goes in a transaction that also checks, atomically, one shard (drawn at random, the
    same for both) of:

    - the user's deletion mark, absent: the workflow sets the mark before its sweep, so every item that
      will ever land is already there when the sweep and the final verification read;
    - for an item of a scope partition, the scope's registry, present: the registry is removed only at
      the very end of an erasure, so a request paused across a whole erasure fails its later writes
      instead of landing them in a partition no erasure or export would visit.

    Registering a scope (a put of its registry item, as every service write does first) writes the
    registry item and all its shards once, while the mark is absent; afterwards it is a read. A write
    refused by a check raises UserDeletionInProgress (409) and wrote nothing. Deletes, and writes that
    require their item to exist, cannot bring back what an erasure removed: they pass unchanged.
    Unconditional batches become transactions of up to 100 items (the checks included).

    Within a request (:func:`writes_end_with`), no write but a delete starts once the request's time is up:
    it raises DeadlineExceeded (503) and writes nothing.
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

    def _register(self, registry: Item) -> None:
        """Make sure the scope of a registry item is registered, with its shards (one transaction, checked
        against the mark itself, when a shard is missing)."""
        scope = scope_of_registry(registry)
        hold(scope.user_ref)
        mark = Check(*deletion_mark_key(scope.user_ref), Condition(exists=False))
        listed = Put(app_user_item(scope.user_ref))
        shard = self._table.get(*registry_shard_key(scope, random.randrange(GUARD_SHARDS)))
        if shard is not None:
            if not shard.get(LISTED):  # registered before the app's user list: list the user now, once a shard
                try:
                    self._table.transact_write([mark, listed, Put({**shard, LISTED: 1}, Condition(exists=True))])
                except ConditionFailed:
                    raise UserDeletionInProgress(_MARKED) from None
            return
        shards = [
            {"pk": pk, "sk": sk, LISTED: 1} for pk, sk in (registry_shard_key(scope, k) for k in range(GUARD_SHARDS))
        ]
        try:
            self._table.transact_write([mark, Put(registry), listed, *(Put(shard) for shard in shards)])
        except ConditionFailed:
            raise UserDeletionInProgress(_MARKED) from None

    def _registered(self, puts: Sequence[Item]) -> list[Item]:
        """``puts`` without its registry items, each of whose scope is registered first."""
        rest = []
        for item in puts:
            if str(item["sk"]).startswith(SCOPE_REGISTRY) and user_of_partition(str(item["pk"])) is not None:
                self._register(item)
            else:
                rest.append(item)
        return rest

    def put(self, item: Item, condition: Condition | None = None) -> None:
        _refuse_late_writes()
        if not self._registered([item]):
            return
        op = Put(item, condition)
        _hold_writers([op])
        if _guards([op], 0):
            self.transact_write([op])
        else:
            self._table.put(item, condition)
            _began_writing()

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None:
        self._table.delete(pk, sk, condition)
        _began_writing()

    def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        if puts:
            _refuse_late_writes()
        if deletes:
            self._table.batch_write(deletes=deletes)
            _began_writing()
        unique = self._registered(list({(item["pk"], item["sk"]): item for item in puts}.values()))
        ops = [Put(item) for item in unique]
        _hold_writers(ops)
        if not _guards(ops, 0):
            self._table.batch_write(puts=unique)
            _began_writing()
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
        refused = [outcome for outcome in self.transact_write_each(chunks) if outcome is not None]
        if refused:
            raise refused[0]

    def transact_write(self, ops: Sequence[WriteOp]) -> None:
        if not _only_deletes(ops):
            _refuse_late_writes()
        _hold_writers(ops)
        checks = _guards(ops, random.randrange(GUARD_SHARDS))
        if not checks:
            self._table.transact_write(ops)
            _began_writing()
            return
        try:
            self._table.transact_write([*checks, *ops])
        except ConditionFailed:
            self._raise_if_guarded(checks)
            raise
        _began_writing()

    def transact_write_each(self, batches: Sequence[Sequence[WriteOp]]) -> list[ConditionFailed | None]:
        """Each batch with its own checks; a batch refused by a check raises UserDeletionInProgress."""
        if not all(_only_deletes(ops) for ops in batches):
            _refuse_late_writes()
        _hold_writers([op for ops in batches for op in ops])
        checks = [_guards(ops, random.randrange(GUARD_SHARDS)) for ops in batches]
        outcomes = self._table.transact_write_each([[*c, *ops] for c, ops in zip(checks, batches, strict=True)])
        if any(outcome is None for outcome in outcomes):
            _began_writing()
        for guard, outcome in zip(checks, outcomes, strict=True):
            if outcome is not None:
                self._raise_if_guarded(guard)
        return outcomes

    def _raise_if_guarded(self, checks: Sequence[Check]) -> None:
        for check in checks:
            present = self._table.get(check.pk, check.sk) is not None
            if present != check.condition.exists:
                raise UserDeletionInProgress(_MARKED if present else _ERASED_MEANWHILE)

    def increment(
        self,
        pk: str,
        sk: str,
        deltas: Mapping[str, int],
        condition: Condition | None = None,
        *,
        expires_at: int | None = None,
    ) -> Item:
        _refuse_late_writes()
        op = Add(pk, sk, deltas, condition)
        _hold_writers([op])
        if not _guards([op], 0):
            expiring = {"expires_at": expires_at} if expires_at is not None else {}  # (tables that set no expiry)
            added = self._table.increment(pk, sk, deltas, condition, **expiring)
            _began_writing()
            return added
        self.transact_write([op])
        return self._table.get(pk, sk) or {"pk": pk, "sk": sk}


def scope_of_registry(item: Item) -> Scope:
    user = user_of_partition(str(item["pk"]))
    assert user is not None
    return user.scope(unescape(str(item["sk"])[len(SCOPE_REGISTRY) :]) or None)


def _can_create(op: WriteOp) -> bool:
    if not isinstance(op, Put | Add):
        return False
    condition = op.condition
    return condition is None or not (condition.exists is True or condition.equals or condition.absent)


def _guards(ops: Sequence[WriteOp], shard: int) -> list[Check]:
    """The checks (of mark and registry shard ``shard``) that make ``ops`` refuse to land for a user being
    (or just) erased; [] when none apply."""
    marks: dict[Key, None] = {}
    registries: dict[Key, None] = {}
    partitions = dict.fromkeys(op_key(op)[0] for op in ops if _can_create(op))
    for pk in partitions:
        scope = scope_of_partition(pk)
        if scope is not None:
            marks[mark_shard_key(scope.user_ref, shard)] = None
            registries[registry_shard_key(scope, shard)] = None
        user = user_of_partition(pk)
        if user is not None:
            marks[mark_shard_key(user, shard)] = None
    checks = [Check(pk, sk, Condition(exists=False)) for pk, sk in marks]
    checks += [Check(pk, sk, Condition(exists=True)) for pk, sk in registries]
    return checks
