"""GDPR erasure and export of one user ``(app, user)``.

The erasure is a sequence of small idempotent steps (the workflow ``delete_user.asl.json`` runs them;
see docs/adr/0500): each one does a bounded amount of work and can be repeated safely, so a failed run
is finished by starting another. The API side (:meth:`DeletionService.begin`, :meth:`status`,
:meth:`export`) never deletes anything itself.

Where things are: every item of a scope lives in the scope's partition; the user partition holds id
pointers, idempotency records, the scope registry (``SCOPE#``, with its shards ``SCOPEK#``) and the
deletion mark (``DELETION``, with its shards). The registry is kept until the end (verification needs
it), the mark is removed last of all, and the
receipt lives in the tenant partition, which erasure never touches.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections import Counter as Tally
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentmem import users
from agentmem.agentcore import records as agentcore_records
from agentmem.budget import Budget
from agentmem.clock import format_timestamp, new_id, parse_timestamp, utc_now
from agentmem.deletion import exported as export_shapes
from agentmem.deletion import records
from agentmem.errors import ConditionFailed, InvalidInput, MalformedRequest, NotFound
from agentmem.extraction import work as extraction_work
from agentmem.graph import records as graph_records
from agentmem.keys import Scope, UserRef, unescape
from agentmem.memory import records as memory_records
from agentmem.search.snapshots import SnapshotStore
from agentmem.store import records as store_records
from agentmem.stores.table import Condition, Item, Key, Page, Put, Table, prefix_upper_bound
from agentmem.vectors.port import VectorIndex

DEFAULT_BATCH_SIZE = 500
DEFAULT_MAX_SWEEPS = 6
DEFAULT_SCOPE_PAGE = 200
"""Scopes per Map run: 200 project ids of at most 256 bytes keep a state far below 256 KiB."""
EXPORT_PAGE_ITEMS = 500
"""Items one export page holds at most; its bytes on the wire stay within the response budget."""
EXPORT_PAGE_READS = 1000
"""Items one export page reads at most, each table call counting as one at least (so a page that crosses
many empty scopes is bounded too): twice what a full page returns, which leaves room for the scope
registry and for the few items of an exported prefix that are not returned. A page that reaches it ends
with a cursor at the last item read, whatever it holds."""
EXPORTED_PREFIXES = tuple(
    sorted(
        (
            memory_records.ENTRY,
            memory_records.EVENT,
            memory_records.VERSION,
            graph_records.ENTITY,
            graph_records.OBSERVATION,
            graph_records.EPISODE,
            graph_records.RELATION,
            store_records.KEY_ROW,
        )
    )
)
"""The sort-key prefixes of what the export returns (:mod:`agentmem.deletion.exported`), in sort-key order: a scope is
read prefix by prefix, never its derived rows (keyword postings, the graph's bookkeeping, the change
log), which can outnumber its entries a hundred to one."""
MAX_CAUSE_CHARS = 1000


@dataclass(frozen=True, slots=True)
class DeletionStart:
    deletion_id: str
    status: str
    started: bool
    """True when this call created the request (the caller must start the workflow)."""


class DeletionService:
    def __init__(
        self,
        table: Table,
        *,
        receipt_key: bytes,
        vectors: VectorIndex | None = None,
        snapshots: SnapshotStore | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_sweeps: int = DEFAULT_MAX_SWEEPS,
        scope_page: int = DEFAULT_SCOPE_PAGE,
        export_page_reads: int = EXPORT_PAGE_READS,
        drain_seconds: int = 0,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._table = table
        self._key = receipt_key
        self._vectors = vectors
        self._snapshots = snapshots
        self._batch_size = batch_size
        self._max_sweeps = max_sweeps
        self._scope_page = scope_page
        self._export_page_reads = export_page_reads
        self._drain_seconds = drain_seconds
        self._clock = clock

    # -- API side ----------------------------------------------------------------------------------

    def begin(self, user: UserRef, *, is_active: Callable[[str], bool]) -> DeletionStart:
        """Record a deletion request and mark the user (writes get 409 from here on).

        A deletion already running for the user is returned instead of a new one (a FAILED one too while a
        re-driven attempt of it waits its backoff: agentmem/deletion/redrive.py); a request left RUNNING by a
        runner that no longer knows it (a local server restarted) or a FAILED one nothing re-drives is
        superseded by a new request: the steps are idempotent, so the new run finishes the work.
        """
        mark = self._table.get(*users.deletion_mark_key(user))
        if mark is not None and mark.get("deletion_id"):
            current = self._table.get(*records.request_key(user.app, mark["deletion_id"]))
            unfinished = current is not None and current["status"] in ("RUNNING", "FAILED")
            if unfinished and is_active(mark["deletion_id"]):
                return DeletionStart(mark["deletion_id"], "RUNNING", started=False)
        deletion_id = new_id()
        request = records.request_item(
            user.app,
            deletion_id,
            user=user.user,
            hashed_user=records.user_hash(self._key, user),
            started_at=self._now(),
        )
        self._table.put(request)
        # Claim the mark only if nobody changed it since we looked: of two simultaneous requests, one wins.
        pk, sk = users.deletion_mark_key(user)
        claim = Condition(exists=False) if mark is None else Condition(equals={"deletion_id": mark.get("deletion_id")})
        marked, *shards = users.mark_items(self._mark_item(user, deletion_id))
        try:
            self._table.transact_write([Put(marked, claim), *(Put(shard) for shard in shards)])
        except ConditionFailed:
            self._table.delete(request["pk"], request["sk"])
            winner = self._table.get(pk, sk)
            if winner is None or not winner.get("deletion_id"):
                raise
            return DeletionStart(winner["deletion_id"], "RUNNING", started=False)
        if mark is not None and mark.get("deletion_id"):
            self._forget_user(user.app, mark["deletion_id"])  # the superseded request will not run again
        return DeletionStart(deletion_id, "RUNNING", started=True)

    def abandon(self, user: UserRef, deletion_id: str, error: str, cause: str) -> None:
        """The workflow could not be started: record the failure and lift the mark again."""
        self.record_failure(user, deletion_id, error, cause)
        self._forget_user(user.app, deletion_id)
        mark = self._table.get(*users.deletion_mark_key(user))
        if mark is not None and mark.get("deletion_id") == deletion_id:
            self._lift_mark(user)

    def status(self, user: UserRef, deletion_id: str) -> dict[str, Any]:
        """The request's status and counts; "not found" for an id of another user or app."""
        item = self._request(user.app, deletion_id)
        if item is None or item.get("user_hash") != records.user_hash(self._key, user):
            raise NotFound("no such deletion for this user", code="deletion_not_found")
        return records.request_to_json(item)

    def user_of(self, app: str, deletion_id: str) -> UserRef | None:
        """The user a running erasure is erasing (what the steps are given instead of the user id); None
        once it has finished or was superseded."""
        item = self._request(app, deletion_id)
        if item is None or not item.get(records.USER_ID):
            return None
        return UserRef.of(app, item[records.USER_ID])

    def _forget_user(self, app: str, deletion_id: str) -> None:
        """Drop the user id from a request whose run is over (its receipt keeps the keyed hash only)."""
        item = self._request(app, deletion_id)
        if item is not None and records.USER_ID in item:
            self._table.put({k: v for k, v in item.items() if k != records.USER_ID})

    # -- workflow steps (each idempotent) ------------------------------------------------------------

    def mark(self, user: UserRef, deletion_id: str) -> dict[str, Any]:
        """Mark the user; return how long the workflow waits before sweeping (``drain_seconds``).

        From the mark on, every write for the user is refused in its own transaction. A request that
        passed its early check just before the mark may still be writing: waiting for as long as a
        request can run (the API's timeout) before sweeping means the sweep and the final verification
        come after anything such a request could still land. The wait counts from when this erasure's mark was
        placed (by the API's request, or by an earlier attempt: a re-driven attempt waits only what is left of it),
        and an attempt after a failed one sets the request RUNNING again. Where the process knows the user's
        requests in flight (the local server: :func:`agentmem.users.settle`), this step waits only until none is,
        within what is left of the bound, and the workflow waits no more."""
        mark = self._mark_item(user, deletion_id)
        held = self._table.get(*users.deletion_mark_key(user))
        if held is not None and held.get("deletion_id") == deletion_id and held.get("marked_at"):
            mark["marked_at"] = held["marked_at"]
        self._table.transact_write([Put(item) for item in users.mark_items(mark)])
        request = self._request(user.app, deletion_id)
        if request is None:
            hashed = records.user_hash(self._key, user)
            request = records.request_item(
                user.app, deletion_id, user=user.user, hashed_user=hashed, started_at=self._now()
            )
            self._table.put(request)
        elif request.get("status") == "FAILED":
            retried = {k: v for k, v in request.items() if k not in ("error", "cause")}
            self._table.put({**retried, "status": "RUNNING", "finished_at": None})
        elapsed = (self._clock() - parse_timestamp(str(mark["marked_at"]))).total_seconds()
        remaining = max(0, math.ceil(self._drain_seconds - max(0.0, elapsed)))
        if users.settle(user, remaining):
            return {"drain_seconds": 0}
        return {"drain_seconds": remaining}

    def list_scopes(self, user: UserRef, after: str | None = None) -> dict[str, Any]:
        """One page of the user's scopes (global first), so the workflow's state stays small however
        many projects the user has; ``next`` goes back as ``after``. The registry is kept until the
        mark is cleared, so paging over it is stable while the sweep runs."""
        scopes = users.registered_scopes(self._table, user)
        if after is not None:
            scopes = [s for s in scopes if _scope_order(s) > after]
        page = scopes[: self._scope_page]
        more = len(scopes) > len(page)
        return {
            "scopes": [{"project_id": scope.project_id} for scope in page],
            "next": _scope_order(page[-1]) if more else None,
            "more": more,
        }

    def delete_scope_batch(self, scope: Scope, deletion_id: str) -> dict[str, Any]:
        """Delete at most one batch of the scope partition's items; ``more`` says whether to call again."""
        page = self._table.query(scope.partition, limit=self._batch_size, include_expired=True)
        tally: Tally[str] = Tally()
        for item in page.items:
            kind = records.classify(item)
            if kind is not None:
                tally[kind] += 1
            if kind == "entries" and self._vectors is None and records.carries_vector(item):
                tally["vectors"] += 1
        self._table.batch_write(deletes=[(item["pk"], item["sk"]) for item in page.items])
        self._count(user_app=scope.app, deletion_id=deletion_id, tally=tally)
        return {"deleted": len(page.items), "more": page.next_start is not None}

    def delete_user_items_batch(self, user: UserRef, deletion_id: str) -> dict[str, Any]:
        """Delete at most one batch of the user partition, keeping the scope registry and the mark, and the
        rows naming the user in the app's partitions (:meth:`_app_rows`)."""
        keys = self._user_items(user, keep_registry=True, limit=self._batch_size)
        self._table.batch_write(deletes=[*keys, *self._app_rows(user)])
        return {"deleted": len(keys), "more": len(keys) >= self._batch_size}

    def _app_rows(self, user: UserRef) -> list[Key]:
        """What names the user outside the user's own partitions: its rows in the app's AgentCore actor
        index (agentmem/agentcore/records.py), the app's user list (agentmem/users.py) and the app's parked
        extraction jobs (agentmem/extraction/work.py)."""
        keys = agentcore_records.actor_keys(self._table, user)
        keys += extraction_work.user_parked_keys(self._table, user)
        listed = users.app_user_key(user)
        if self._table.get(*listed) is not None:
            keys.append(listed)
        return keys

    def delete_vectors(self, user: UserRef, deletion_id: str) -> dict[str, Any]:
        """The user's vectors in a derived index, and the snapshots of the user's search indexes (one written
        while the sweep ran is found by :meth:`verify`, and deleted by the sweep after)."""
        if self._snapshots is not None:
            self._snapshots.delete(scope.partition for scope in users.registered_scopes(self._table, user))
        if self._vectors is None:
            return {"deleted": 0}
        removed = self._vectors.delete_user(user)
        self._count(user_app=user.app, deletion_id=deletion_id, tally=Tally({"vectors": removed}))
        return {"deleted": removed}

    def verify(self, user: UserRef, deletion_id: str) -> dict[str, Any]:
        """Both stores hold nothing for the user (the registry and the mark aside, removed last)."""
        remaining = sum(
            len(self._table.query(scope.partition, limit=1, include_expired=True).items)
            for scope in users.registered_scopes(self._table, user)
        )
        remaining += len(self._user_items(user, keep_registry=True, limit=1))
        remaining += len(self._app_rows(user))
        if self._snapshots is not None:
            snapshots = self._snapshots
            remaining += sum(snapshots.exists(scope.partition) for scope in users.registered_scopes(self._table, user))
        if self._vectors is not None:
            remaining += self._vectors.count_user(user)
        pk, sk = records.request_key(user.app, deletion_id)
        sweeps = int(self._table.increment(pk, sk, {"sweeps": 1}).get("sweeps", 0))
        clean = remaining == 0
        return {
            "clean": clean,
            "give_up": not clean and sweeps >= self._max_sweeps,
            "sweeps": sweeps,
            "resweep_seconds": self._resweep_seconds(sweeps) if not clean else 0,
        }

    def _resweep_seconds(self, sweeps: int) -> int:
        """The wait before sweep ``sweeps + 1``: doubling from 2 s, up to how late the index shows deletes.

        Deletes on OpenSearch Serverless show in counts only after its refresh (about a minute): the
        waits 2, 4, 8, 16 and 32 s let the sixth count see them. An index that shows them at once waits
        2 s per sweep, time for a write that raced the mark to land before it is swept again."""
        late = self._vectors.visibility_seconds if self._vectors is not None else 0
        return min(int(2**sweeps), max(2, late))

    def write_receipt(self, user: UserRef, deletion_id: str) -> None:
        self._update_request(user.app, deletion_id, status="SUCCEEDED", finished_at=self._now())

    def clear_mark(self, user: UserRef, deletion_id: str) -> dict[str, Any]:
        """Delete the registry in batches, then the mark itself: the user may write again."""
        keys = self._user_items(user, keep_registry=False, limit=self._batch_size)
        if keys:
            self._table.batch_write(deletes=keys)
            return {"more": True}
        mark = self._table.get(*users.deletion_mark_key(user))
        if mark is not None and mark.get("deletion_id") in (None, deletion_id):
            self._lift_mark(user)
        self._forget_user(user.app, deletion_id)
        return {"more": False}

    def _lift_mark(self, user: UserRef) -> None:
        """Delete the mark's shards, then the mark (a write is refused until the shard it checks is gone)."""
        self._table.batch_write(deletes=users.mark_keys(user)[1:])
        self._table.delete(*users.deletion_mark_key(user))

    def record_failure(self, user: UserRef, deletion_id: str, error: str, cause: str) -> None:
        """The request becomes FAILED; the mark stays, so nothing is written into a half-erased user."""
        self._update_request(
            user.app,
            deletion_id,
            status="FAILED",
            finished_at=self._now(),
            error=str(error)[:200],
            cause=str(cause)[:MAX_CAUSE_CHARS],
        )

    # -- export ------------------------------------------------------------------------------------

    def export(self, user: UserRef, cursor: str | None = None) -> dict[str, Any]:
        """One page of everything held for the user, in every scope; follow ``next_cursor`` until null.

        Scopes are read in registry order (the global scope first), each by :data:`EXPORTED_PREFIXES`; a page
        ends when it holds :data:`EXPORT_PAGE_ITEMS` items, fills the response budget or has read its budget
        (:data:`EXPORT_PAGE_READS` items by default), with a cursor naming the scope and the sort key read up
        to: a page may hold fewer items than that, or none, and still be followed by another."""
        scope, after = _decode_cursor(user, cursor) if cursor else (user.scope(None), None)
        page: dict[str, Any] = {
            "entries": [],
            "graph": {"entities": [], "relations": [], "observations": []},
            "episodes": [],
            "store": [],
            "events": [],
            "memory_history": [],
            "next_cursor": None,
        }
        count = 0
        budget = Budget()  # the bytes as the page travels (non-ASCII escaped by the Lambda runtime)
        reads = _ReadBudget(self._table, self._export_page_reads)
        while True:
            for prefix in EXPORTED_PREFIXES:
                end = prefix_upper_bound(prefix)
                if after is not None and after >= end:
                    continue  # read on an earlier page
                start = after if after is not None and after >= prefix else None  # resume inside it
                while True:
                    if reads.spent:
                        page["next_cursor"] = _encode_cursor(_scope_order(scope), after or "")
                        return page
                    # Expired entries still held are exported too, with their expires_at (API.md).
                    result = reads.query(scope.partition, prefix, start_after=start, limit=200)
                    for item in result.items:
                        exported = export_shapes.exported(item, reads.get)
                        if exported is not None:
                            section, value = exported
                            if count >= EXPORT_PAGE_ITEMS or not budget.take(value):  # resume at this item
                                page["next_cursor"] = _encode_cursor(_scope_order(scope), after or "")
                                return page
                            target = page["graph"][section] if section in page["graph"] else page[section]
                            target.append(value)
                            count += 1
                        after = item["sk"]
                    if result.next_start is None:
                        break
                    start = after = result.next_start
                after = end  # the prefix is done, even when it held nothing
            if reads.spent:
                page["next_cursor"] = _encode_cursor(_scope_order(scope), after or "")
                return page
            following = reads.query(
                user.partition, users.SCOPE_REGISTRY, start_after=users.registry_sk(scope.project_id), limit=1
            )
            if not following.items:
                return page
            project = unescape(str(following.items[0]["sk"])[len(users.SCOPE_REGISTRY) :])
            scope, after = Scope(user.app, user.user, project or None), None

    # -- helpers -----------------------------------------------------------------------------------

    def _now(self) -> str:
        return format_timestamp(self._clock())

    def _mark_item(self, user: UserRef, deletion_id: str) -> Item:
        pk, sk = users.deletion_mark_key(user)
        return {"pk": pk, "sk": sk, "deletion_id": deletion_id, "marked_at": self._now()}

    def _request(self, app: str, deletion_id: str) -> Item | None:
        return self._table.get(*records.request_key(app, deletion_id))

    def _update_request(self, app: str, deletion_id: str, **changes: Any) -> None:
        item = self._request(app, deletion_id)
        if item is None:
            raise NotFound("no such deletion", code="deletion_not_found")
        self._table.put({**item, **changes})

    def _count(self, *, user_app: str, deletion_id: str, tally: Tally[str]) -> None:
        deltas: dict[str, int] = {name: tally[name] for name in records.COUNTERS if tally[name]}
        if deltas:
            pk, sk = records.request_key(user_app, deletion_id)
            self._table.increment(pk, sk, deltas)

    def _user_items(self, user: UserRef, *, keep_registry: bool, limit: int) -> list[Key]:
        """Keys of the user partition's items, except the mark and its shards (and the registry with its
        shards, when asked)."""
        keys: list[Key] = []
        start: str | None = None
        while len(keys) < limit:
            page = self._table.query(user.partition, limit=limit, start_after=start, include_expired=True)
            for item in page.items:
                sk = item["sk"]
                if users.is_guard_item(sk, registry=keep_registry):
                    continue
                keys.append((item["pk"], sk))
            if page.next_start is None:
                break
            start = page.next_start
        return keys[:limit]


def _scope_order(scope: Scope) -> str:
    """A cursor position per scope that sorts like :func:`users.registered_scopes` (global first)."""
    return "" if scope.project_id is None else "~" + scope.project_id


class _ReadBudget:
    """The items one request may still read, each query counting as one at least; queries include what
    has expired but is still held (erasure and export reach everything held)."""

    def __init__(self, table: Table, items: int) -> None:
        self._table = table
        self.left = items

    @property
    def spent(self) -> bool:
        return self.left <= 0

    def query(self, pk: str, prefix: str, *, start_after: str | None, limit: int) -> Page:
        page = self._table.query(pk, prefix, limit=min(limit, self.left), start_after=start_after, include_expired=True)
        self.left -= max(1, len(page.items))
        return page

    def get(self, pk: str, sk: str) -> Item | None:
        """The item, expired or not (a query of its key as a prefix, the first sort key in it)."""
        found = self._table.query(pk, sk, limit=1, include_expired=True).items
        self.left -= 1
        return found[0] if found and found[0]["sk"] == sk else None


def _encode_cursor(scope_order: str, after: str) -> str:
    raw = json.dumps([scope_order, after], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_cursor(user: UserRef, cursor: str) -> tuple[Scope, str | None]:
    """The scope an export cursor resumes in, and the sort key read up to there (None: from the start)."""
    refused = MalformedRequest("cursor is not one this API returned", code="invalid_cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        scope_order, after = json.loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        raise refused from None
    if not isinstance(scope_order, str) or not isinstance(after, str):
        raise refused
    if scope_order == "":
        return user.scope(None), after or None
    if not scope_order.startswith("~"):
        raise refused
    try:
        return user.scope(scope_order[1:]), after or None  # a valid project id, within the key limits
    except InvalidInput:
        raise refused from None
