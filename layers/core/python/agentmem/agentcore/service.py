"""The AgentCore Memory data plane on this service's memory (the mapping is agentmem/agentcore/records.py's).

Each method takes the app a memory id names and answers the operation's output shape as botocore reads it
(camelCase members, timestamps in epoch seconds). Events and records are memory entries, written, read,
searched, metered, exported and erased by :class:`~agentmem.memory.service.MemoryService`, except the events
that hold no conversational item, kept as events only (agentmem/agentcore/state_events.py); this module
adds the event and record views, the actor index and the paging of AgentCore's list operations.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import random
import re
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agentmem import held_items, users
from agentmem.agentcore import models, state_events
from agentmem.agentcore import records as ac
from agentmem.budget import Budget
from agentmem.clock import format_timestamp, new_id, parse_timestamp, utc_now
from agentmem.errors import (
    ConditionFailed,
    InvalidInput,
    MemoryServiceError,
    NotFound,
    PayloadTooLarge,
    UserDeletionInProgress,
)
from agentmem.idempotency import IdempotencyStore, StoredResponse
from agentmem.keys import Scope, UserRef, escape, scope_of_partition, unescape, validate_id
from agentmem.memory import filters
from agentmem.memory import records as memory_records
from agentmem.memory.service import MemoryService
from agentmem.models.content import Content
from agentmem.models.memory import MemoryEntry
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import MAX_SORT_KEY_BYTES, Check, Condition, Item, Put, Table

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agentmem.extraction.config import AppMemories

MAX_BRANCHES = 100
"""Branches a ListEvents token carries at most (the branches met on the pages read so far)."""
LIST_READ = 1_000
"""Entries one page of ``ListEvents`` reads at most (a filter that matches few answers fewer, with a token)."""


@dataclass(frozen=True, slots=True)
class _Actor:
    user: UserRef

    @property
    def scope(self) -> Scope:
        return self.user.scope(None)


class AgentCoreService:
    def __init__(
        self,
        table: Table,
        memory: MemoryService,
        idempotency: IdempotencyStore,
        *,
        memories: AppMemories | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``memories``: the apps' memories (CreateMemory's), whose ``eventExpiryDuration`` events keep."""
        self._table = users.guarded(table)
        self._memory = memory
        self._idempotency = idempotency
        self._memories = memories
        self._clock = clock

    def _once(
        self, user: UserRef, token: str | None, request: BaseModel, work: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """``work``'s answer, once per ``clientToken`` (botocore sends one with every call and the same one
        with its retries): a retry replays the first answer instead of writing again (agentmem/idempotency.py,
        the store of the REST API's Idempotency-Key, in the user's partition). The record holds the keys of
        ``user``'s items only: a batch's records of other actors are not named in it, so nothing of theirs
        outlives their erasure (their record ids in the answer name a random ref, gone with them)."""
        if not token:
            return work()
        key = "agentcore:" + token
        fingerprint = hashlib.sha256(request.model_dump_json(exclude={"client_token"}).encode("utf-8")).hexdigest()
        stored = self._idempotency.begin(user, key, fingerprint)
        if stored is not None:
            answer: dict[str, Any] = json.loads(stored.body)
            return answer
        started_ms = int(time.time() * 1000)
        try:
            with held_items.collecting() as held:
                answer = work()
        except BaseException:
            self._idempotency.release(user, key)
            raise
        own = [(pk, sk) for pk, sk in held if _owned_by(user, pk)]  # the record names no other actor (erasure)
        try:
            recorded = StoredResponse(200, json.dumps(answer), "application/json")
            self._idempotency.complete(user, key, fingerprint, recorded, started_ms=started_ms, holds=own)
        except PayloadTooLarge:  # an answer too large to keep: the write stands, a retry runs again
            self._idempotency.release(user, key)
        return answer

    # -- events ------------------------------------------------------------------------------------

    def create_event(self, memory_id: str, body: models.CreateEventRequest) -> dict[str, Any]:
        actor = self._actor(memory_id, body.actor_id)
        session = body.session_id or new_id().lower()
        parts, kinds = ac.payload_parts(body.payload)
        metadata = {ac.check_key(k): v.string_value for k, v in (body.metadata or {}).items()}
        metadata[ac.KIND] = ac.EVENT
        if kinds:
            metadata[ac.PAYLOAD] = " ".join(kinds)
        if body.branch is not None:
            metadata[ac.BRANCH] = body.branch.name
            if body.branch.root_event_id is not None:
                metadata[ac.BRANCH_ROOT] = body.branch.root_event_id
        role = next((ac.ROLES[k] for k in kinds if k in ac.ROLES), None)
        entry = _entry({"role": role, "parts": parts}, author=role, timestamp=body.event_timestamp, metadata=metadata)
        self._memory.ensure_writable(actor.user)

        config = self._memories.get(actor.user.app) if self._memories is not None else None
        ttl = config.event_expiry_days * 86_400 if config is not None and config.event_expiry_days else None

        def create() -> dict[str, Any]:
            if state_events.is_state(kinds):  # no conversational item: an event only, never a memory
                item = state_events.write(self._table, actor.scope, session, entry, self._clock(), ttl)
            else:
                item = _item_of(self._memory.add_entry(actor.scope, entry, session, ttl_seconds=ttl))
            self._register(actor.user)
            return {"event": _event(memory_id, actor.user.user, item, include_payload=True)}

        return self._once(actor.user, body.client_token, body, create)

    def get_event(self, memory_id: str, actor_id: str, session_id: str, event_id: str) -> dict[str, Any]:
        actor = self._actor(memory_id, actor_id)
        item = self._event_item(actor, session_id, event_id)
        return {"event": _event(memory_id, actor_id, item, include_payload=True)}

    def delete_event(self, memory_id: str, actor_id: str, session_id: str, event_id: str) -> dict[str, Any]:
        actor = self._actor(memory_id, actor_id)
        item = self._event_item(actor, session_id, event_id)
        if str(item["sk"]).startswith(memory_records.EVENT):
            self._table.batch_write(deletes=state_events.keys(item))
        else:
            self._memory.delete_entry(actor.user, item["id"])
        return {"eventId": event_id}

    def _event_item(self, actor: _Actor, session_id: str, event_id: str) -> Item:
        entry_id = ac.entry_of_event(event_id)
        item = self._memory.entry_item_of(actor.scope, entry_id) if entry_id is not None else None
        if item is None and entry_id is not None:
            item = state_events.get(self._table, actor.scope, entry_id)
        if item is None or not memory_records.is_live(item, self._now()) or item.get("session_id") != session_id:
            raise NotFound(f"no event {event_id!r} in this session of this actor")
        return item

    def list_events(
        self, memory_id: str, actor_id: str, session_id: str, body: models.ListEventsRequest
    ) -> dict[str, Any]:
        """The session's events newest first (as AgentCore lists them), filtered by branch and metadata."""
        actor = self._actor(memory_id, actor_id)
        state = _decode_token(body.next_token, "", branches=True) if body.next_token else {}
        branch = body.filter.branch if body.filter else None
        allowed: dict[str, str | None] = state.get("branches") or {}
        if branch is not None and not allowed:
            allowed = {_branch_key(branch.name): None}
        where = _event_filter(body.filter.event_metadata if body.filter else None)
        prefix = memory_records.session_prefix(session_id)
        start = prefix + state["after"] if state.get("after") else None
        now = self._now()
        events: list[dict[str, Any]] = []
        last: str | None = None
        exhausted = True
        budget = Budget()  # a page's events within the response budget, however large their payloads
        page = body.max_results + 1 if where is None and branch is None else 100  # a filter reads more to match
        for read, item in enumerate(self._session_items(actor.scope, prefix, start, page), 1):
            if memory_records.matches(item, where, now) and self._on_branch(actor, item, branch, allowed):
                event = _event(memory_id, actor_id, item, include_payload=body.include_payloads)
                if not budget.take(event):  # the next page starts with this event
                    exhausted = False
                    break
                events.append(event)
            last = item["id"]
            if len(events) >= body.max_results or read >= LIST_READ:
                exhausted = False
                break
        answer: dict[str, Any] = {"events": events}
        if not exhausted and last is not None:
            answer["nextToken"] = _encode_token({"after": last, "branches": allowed})
        return answer

    def _on_branch(
        self, actor: _Actor, item: Item, wanted: models.BranchFilter | None, allowed: dict[str, str | None]
    ) -> bool:
        """Whether an event is on the branch asked for (or, with its parents, before the branch's fork).
        Events come newest first, so a branch's events come before its root, whose branch is added then."""
        if wanted is None:
            return True
        metadata = memory_records.entry_metadata(item)
        branch = _branch_key(metadata.get(ac.BRANCH))
        if branch not in allowed:
            return False
        upto = allowed[branch]
        if upto is not None and item["id"] > upto:
            return False
        root = metadata.get(ac.BRANCH_ROOT)
        if wanted.include_parent_branches and isinstance(root, str):
            root_id = ac.entry_of_event(root)
            root_item = self._memory.entry_item_of(actor.scope, root_id) if root_id else None
            if root_item is not None:
                parent = _branch_key(memory_records.entry_metadata(root_item).get(ac.BRANCH))
                allowed.setdefault(parent, root_item["id"])
        return True

    def _session_items(self, scope: Scope, prefix: str, start: str | None, size: int) -> Iterator[Item]:
        """The session's entry items, newest first, from its index rows (memory/records.py), ``size`` a read."""
        while True:
            page = self._table.query(scope.partition, prefix, limit=size, descending=True, start_after=start)
            ids = [row["sk"][len(prefix) :] for row in page.items]
            wanted = [state_events.item_key(scope.partition, row, prefix) for row in page.items]
            found = {item["id"]: item for item in self._table.batch_get(wanted)}
            yield from (found[i] for i in ids if i in found)
            if page.next_start is None:
                return
            start = page.next_start

    def list_sessions(self, memory_id: str, actor_id: str, body: models.ListSessionsRequest) -> dict[str, Any]:
        """The actor's sessions in id order, each with when its first entry was written (one read each)."""
        actor = self._actor(memory_id, actor_id)
        start = _decode_token(body.next_token, memory_records.SESSION_INDEX)["after"] if body.next_token else None
        summaries: list[dict[str, Any]] = []
        more = False
        while True:
            page = self._table.query(actor.scope.partition, memory_records.SESSION_INDEX, limit=1, start_after=start)
            if not page.items:
                break
            if len(summaries) >= body.max_results:
                more = True
                break
            escaped, _, first = page.items[0]["sk"][len(memory_records.SESSION_INDEX) :].rpartition("#")
            summaries.append({"sessionId": unescape(escaped), "actorId": actor_id, "createdAt": ac.created_at(first)})
            start = f"{memory_records.SESSION_INDEX}{escaped}#~"  # past every row of this session
        answer: dict[str, Any] = {"sessionSummaries": summaries}
        if more and start is not None:
            answer["nextToken"] = _encode_token({"after": start})
        return answer

    def list_actors(self, memory_id: str, body: models.ListActorsRequest) -> dict[str, Any]:
        app = ac.app_of_memory(memory_id)
        start = _decode_token(body.next_token, ac.ACTOR_ROW)["after"] if body.next_token else None
        page = self._table.query(ac.index_partition(app), ac.ACTOR_ROW, limit=body.max_results, start_after=start)
        answer: dict[str, Any] = {"actorSummaries": [{"actorId": row["actor"]} for row in page.items]}
        if page.next_start is not None:
            answer["nextToken"] = _encode_token({"after": page.next_start})
        return answer

    # -- memory records ----------------------------------------------------------------------------

    def batch_create_records(self, memory_id: str, body: models.BatchCreateRecordsRequest) -> dict[str, Any]:
        """Every record is checked before the first is written (a bad one refuses the batch); a record that
        cannot be written then (its actor being erased) is reported failed, as AgentCore reports them."""
        expires = self._expiry(body.record_expiry_specification)
        planned: list[tuple[models.RecordCreate, _Actor, MemoryEntry]] = []
        for record in body.records:
            if len(record.namespaces) != 1:
                raise InvalidInput("a record needs one namespace, which names its actor")
            namespace = record.namespaces[0]
            actor = self._namespace_actor(memory_id, namespace)
            entry = _record_entry(
                namespace,
                record.content.text or "",
                record.timestamp,
                record.memory_strategy_id,
                record.metadata or {},
                expires,
            )
            self._memory.prepare_entry(actor.scope, entry)  # every bound checked before anything is written
            planned.append((record, actor, entry))

        def create() -> dict[str, Any]:
            successful: list[dict[str, Any]] = []
            failed: list[dict[str, Any]] = []
            for record, actor, entry in planned:
                try:
                    self._memory.ensure_writable(actor.user)
                    ref = self._register(actor.user)
                    stored = self._memory.add_entry(actor.scope, entry)
                except MemoryServiceError as error:
                    failed.append(_outcome("", "FAILED", record.request_identifier, error))
                    continue
                successful.append(_outcome(ac.record_id(stored.id, ref), "SUCCEEDED", record.request_identifier))
            return {"successfulRecords": successful, "failedRecords": failed}

        if not planned:
            return create()
        return self._once(planned[0][1].user, body.client_token, body, create)  # kept with the first record's owner

    def batch_update_records(self, memory_id: str, body: models.BatchUpdateRecordsRequest) -> dict[str, Any]:
        """Each record rewritten in place (same id, same creation time, new text, namespace, strategy or
        metadata); a record that is not found, or whose new namespace names another actor, is reported failed."""
        expires = self._expiry(body.record_expiry_specification)
        successful: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for update in body.records:
            try:
                retry_on_conflict(functools.partial(self._update_record, memory_id, update, expires), what="the record")
            except MemoryServiceError as error:
                failed.append(_outcome(update.memory_record_id, "FAILED", None, error))
                continue
            successful.append(_outcome(update.memory_record_id, "SUCCEEDED", None))
        return {"successfulRecords": successful, "failedRecords": failed}

    def _update_record(self, memory_id: str, update: models.RecordUpdate, expires: datetime | None) -> None:
        """One attempt: the record as stored now, rewritten in place if it is still so when written. A delete
        that lands first makes the record not found (a delete that answered is never undone)."""
        actor, item = self._record_item(memory_id, update.memory_record_id, None)
        metadata = memory_records.entry_metadata(item)
        if update.source_namespaces and metadata.get(ac.NAMESPACE) not in update.source_namespaces:
            raise NotFound(f"no record {update.memory_record_id!r} in those source namespaces")
        namespace = update.namespaces[0] if update.namespaces else str(metadata.get(ac.NAMESPACE))
        if actor.user.user not in ac.owners_of(namespace):
            raise InvalidInput("a record cannot move to a namespace of another actor")
        text = update.content.text if update.content else memory_records.entry_text(item)
        entry = _record_entry(
            namespace,
            text or "",
            update.timestamp,
            update.memory_strategy_id or metadata.get(ac.STRATEGY),
            update.metadata if update.metadata is not None else {},
            expires if expires is not None else _expires_at(item),
            kept=None if update.metadata is not None else metadata,
        )
        self._memory.replace_entry(actor.scope, item, entry)

    def batch_delete_records(self, memory_id: str, body: models.BatchDeleteRecordsRequest) -> dict[str, Any]:
        successful: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for record in body.records:
            try:
                actor, item = self._record_item(memory_id, record.memory_record_id, record.namespace)
                self._memory.delete_entry(actor.user, item["id"])
            except MemoryServiceError as error:
                failed.append(_outcome(record.memory_record_id, "FAILED", None, error))
                continue
            successful.append(_outcome(record.memory_record_id, "SUCCEEDED", None))
        return {"successfulRecords": successful, "failedRecords": failed}

    def get_record(self, memory_id: str, record: str, namespace: str | None) -> dict[str, Any]:
        _, item = self._record_item(memory_id, record, namespace)
        return {"memoryRecord": _record(record, item, None, with_expiry=True)}

    def delete_record(self, memory_id: str, record: str, namespace: str | None) -> dict[str, Any]:
        actor, item = self._record_item(memory_id, record, namespace)
        self._memory.delete_entry(actor.user, item["id"])
        return {"memoryRecordId": record}

    def list_records(self, memory_id: str, body: models.ListRecordsRequest) -> dict[str, Any]:
        """The records of a namespace (or under a namespace path) newest first."""
        actor, where = self._record_scope(memory_id, body.namespace, body.namespace_path)
        where = filters.both(where, _record_filter(body.memory_strategy_id, body.metadata_filters))
        ref = self._ref_or_none(actor.user)
        if ref is None:  # the actor never had a record
            return {"memoryRecordSummaries": []}
        page = self._memory.query(actor.scope, where, limit=body.max_results, cursor=body.next_token)
        # The memory service's page is within the response budget; a record is shorter than its entry.
        summaries = [_record(ac.record_id(e.id, ref), _item_of(e), None) for e in page.entries]
        answer: dict[str, Any] = {"memoryRecordSummaries": summaries}
        if page.next_cursor:
            answer["nextToken"] = page.next_cursor
        return answer

    def retrieve_records(self, memory_id: str, body: models.RetrieveRecordsRequest) -> dict[str, Any]:
        """The records of a namespace (or under a path) that best answer the query, by this service's
        ranking (hybrid where there is an embedder), each with its score in [0, 1]."""
        actor, where = self._record_scope(memory_id, body.namespace, body.namespace_path)
        criteria = body.search_criteria
        where = filters.both(where, _record_filter(criteria.memory_strategy_id, criteria.metadata_filters))
        top_k = min(criteria.top_k, body.max_results or criteria.top_k)
        ref = self._ref_or_none(actor.user)
        if ref is None:
            return {"memoryRecordSummaries": []}
        result = self._memory.search(actor.scope, criteria.search_query, top_k=top_k, where=where)
        budget = Budget()
        summaries = [_record(ac.record_id(e.id, ref), _item_of(e), e.score) for e in result.entries]
        return {"memoryRecordSummaries": [s for s in summaries if budget.take(s)]}

    def _record_scope(
        self, memory_id: str, namespace: str | None, path: str | None
    ) -> tuple[_Actor, filters.Node | None]:
        if (namespace is None) == (path is None):
            raise InvalidInput("give exactly one of namespace and namespacePath; it names the actor")
        if namespace is not None:
            condition: dict[str, Any] = {ac.NAMESPACE: namespace}
        else:
            assert path is not None
            condition = {ac.PATHS: ac.path_of(path)}
        actor = self._namespace_actor(memory_id, namespace or path or "")
        current = {ac.VALID_TO: {"$exists": False}}  # a record a newer one replaced stays, unlisted
        return actor, filters.parse({"$and": [{ac.KIND: ac.RECORD}, condition, current]})

    def _record_item(self, memory_id: str, record: str, namespace: str | None) -> tuple[_Actor, Item]:
        parsed = ac.parse_record_id(record)
        app = ac.app_of_memory(memory_id)
        row = self._table.get(ac.index_partition(app), ac.REF_ROW + parsed[1]) if parsed else None
        if parsed is None or row is None:
            raise NotFound(f"no memory record {record!r} in this memory")
        actor = _Actor(UserRef.of(app, row["actor"]))
        item = self._memory.entry_item_of(actor.scope, parsed[0])
        metadata = memory_records.entry_metadata(item) if item is not None else {}
        if (
            item is None
            or not memory_records.is_live(item, self._now())
            or metadata.get(ac.KIND) != ac.RECORD
            or (namespace is not None and metadata.get(ac.NAMESPACE) != namespace)
        ):
            raise NotFound(f"no memory record {record!r} in this memory")
        return actor, item

    # -- the actor index ---------------------------------------------------------------------------

    def actor_ref(self, user: UserRef) -> str:
        """The user's ref in the app's actor index (what its record ids end with), written on first use."""
        return self._register(user)

    def known_ref(self, user: UserRef) -> str | None:
        """The user's ref, or None when the user has none yet (no record was ever written for them)."""
        return self._ref_or_none(user)

    def _register(self, user: UserRef) -> str:
        """The user's ref in the app's actor index, written on first use, unless the user is being erased."""
        found = self._ref_or_none(user)
        if found is not None:
            return found
        ref = ac.new_ref()
        mark = Check(*users.mark_shard_key(user, random.randrange(users.GUARD_SHARDS)), Condition(exists=False))
        absent = Condition(exists=False)
        try:
            self._table.transact_write([mark, Put(ac.actor_row(user, ref), absent), Put(ac.ref_row(user, ref), absent)])
        except ConditionFailed:
            found = self._ref_or_none(user)
            if found is None:
                raise UserDeletionInProgress("this user's data is being deleted; writes are refused") from None
            return found
        return ref

    def _ref_or_none(self, user: UserRef) -> str | None:
        row = self._table.get(ac.index_partition(user.app), ac.ACTOR_ROW + escape(user.user))
        return str(row["ref"]) if row is not None else None

    # -- helpers -----------------------------------------------------------------------------------

    def _actor(self, memory_id: str, actor_id: str) -> _Actor:
        if not models.ACTOR_ID.fullmatch(actor_id) or len(actor_id) > 255:
            raise InvalidInput(f"actorId {actor_id!r} must match {models.ACTOR_ID.pattern} (1..255 characters)")
        return _Actor(UserRef.of(ac.app_of_memory(memory_id), validate_id(actor_id, "actorId")))

    def _namespace_actor(self, memory_id: str, namespace: str) -> _Actor:
        """The actor whose records a namespace holds: of the actors it may name (``org`` or ``org/alice`` in
        ``/actors/org/alice/``), the longest this memory knows (one that wrote an event or had a record), else
        the first segment. One batch read, only when the namespace may name more than one."""
        candidates = [c for c in ac.owners_of(namespace) if models.ACTOR_ID.fullmatch(c) and len(c) <= 255]
        if len(candidates) > 1:
            index = ac.index_partition(ac.app_of_memory(memory_id))
            rows = self._table.batch_get([(index, ac.ACTOR_ROW + escape(c)) for c in candidates])
            known = {row["actor"] for row in rows}
            return self._actor(memory_id, next((c for c in reversed(candidates) if c in known), candidates[0]))
        return self._actor(memory_id, candidates[0] if candidates else ac.owner_of(namespace))

    def _expiry(self, spec: models.RecordExpiry | None) -> datetime | None:
        if spec is None or spec.record_expiry_duration_days is None:
            return None
        return self._clock() + timedelta(days=spec.record_expiry_duration_days)

    def _now(self) -> str:
        return format_timestamp(self._clock())


def _owned_by(user: UserRef, partition: str) -> bool:
    """A partition of ``user``'s: its own, or one of its scopes."""
    scope = scope_of_partition(partition)
    return partition == user.partition or (scope is not None and scope.user_ref == user)


# -- conversions -----------------------------------------------------------------------------------


def _entry(
    content: dict[str, Any],
    *,
    author: str | None,
    timestamp: datetime,
    metadata: dict[str, Any],
    expires: datetime | None = None,
) -> MemoryEntry:
    try:
        return MemoryEntry(
            content=Content.model_validate(content),
            author=author,
            timestamp=timestamp,
            metadata=metadata,
            expires_at=expires,
        )
    except ValueError as error:
        raise InvalidInput(f"this cannot be stored: {error}") from None


def _record_entry(
    namespace: str,
    text: str,
    timestamp: datetime,
    strategy: str | None,
    given: dict[str, models.RecordMetadataValue],
    expires: datetime | None,
    *,
    kept: dict[str, Any] | None = None,
) -> MemoryEntry:
    if len(ac.segments(namespace)) > ac.MAX_NAMESPACE_SEGMENTS:
        raise InvalidInput(f"a namespace holds at most {ac.MAX_NAMESPACE_SEGMENTS} segments here")
    if kept is not None:
        metadata = ac.user_metadata(kept)
        dates = list(kept.get(ac.DATES) or [])
    else:
        metadata = {ac.check_key(k): ac.stored_value(v) for k, v in given.items()}
        dates = sorted(k for k, v in given.items() if v.date_time_value is not None)
    metadata.update({ac.KIND: ac.RECORD, ac.NAMESPACE: namespace, ac.PATHS: ac.paths_of(namespace)})
    if strategy:
        metadata[ac.STRATEGY] = strategy
    if dates:
        metadata[ac.DATES] = dates
    return _entry({"parts": [{"text": text}]}, author=None, timestamp=timestamp, metadata=metadata, expires=expires)


def _expires_at(item: Item) -> datetime | None:
    stamp = item.get(memory_records.EXPIRES_AT)
    return parse_timestamp(stamp) if isinstance(stamp, str) else None


def _item_of(entry: Any) -> Item:
    """A stored entry (as the service returns it) in the item shape the conversions read."""
    return {
        "id": entry.id,
        "session_id": entry.session_id,
        "content": json.dumps(entry.content),
        "author": entry.author,
        "timestamp": entry.timestamp,
        memory_records.METADATA: json.dumps(entry.metadata),
        memory_records.EXPIRES_AT: entry.expires_at,
    }


def _event(memory_id: str, actor_id: str, item: Item, *, include_payload: bool) -> dict[str, Any]:
    metadata = memory_records.entry_metadata(item)
    content = json.loads(item["content"])
    event: dict[str, Any] = {
        "memoryId": memory_id,
        "actorId": actor_id,
        "sessionId": item.get("session_id"),
        "eventId": ac.event_id(item["id"]),
        "eventTimestamp": ac.epoch(item["timestamp"]),
        "payload": ac.payload_of(content, metadata, item.get("author")) if include_payload else [],
    }
    if isinstance(metadata.get(ac.BRANCH), str):
        branch: dict[str, Any] = {"name": metadata[ac.BRANCH]}
        if isinstance(metadata.get(ac.BRANCH_ROOT), str):
            branch["rootEventId"] = metadata[ac.BRANCH_ROOT]
        event["branch"] = branch
    own = {k: {"stringValue": v} for k, v in ac.user_metadata(metadata).items() if isinstance(v, str)}
    if own:
        event["metadata"] = own
    return event


MAX_RECORD_METADATA = 20
"""Metadata entries a MemoryRecord holds at most (AgentCore's model)."""


def _learnt_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """What a learnt record says of where it came from and whether it still holds, as AgentCore's record allows
    it (metadata): ``agentcore.sources``, the events it was learnt from; ``agentcore.supersededBy`` and
    ``agentcore.validTo`` once a newer record replaced it (AgentCore marks such a record no longer valid)."""
    learnt: dict[str, Any] = {}
    sources = metadata.get(ac.SOURCES)
    if isinstance(sources, list) and sources:
        events = [ac.event_id(str(s)) for s in sources if ac.is_entry_id(str(s))]
        if events:
            learnt["agentcore.sources"] = {"stringListValue": events}
    if isinstance(metadata.get(ac.SUPERSEDED_BY), str):
        learnt["agentcore.supersededBy"] = {"stringValue": metadata[ac.SUPERSEDED_BY]}
        if isinstance(metadata.get(ac.VALID_TO), str):
            learnt["agentcore.validTo"] = {"dateTimeValue": ac.epoch(metadata[ac.VALID_TO])}
    return learnt


def _record(record: str, item: Item, score: float | None, *, with_expiry: bool = False) -> dict[str, Any]:
    metadata = memory_records.entry_metadata(item)
    dates = list(metadata.get(ac.DATES) or [])
    summary: dict[str, Any] = {
        "memoryRecordId": record,
        "content": {"text": memory_records.entry_text(item)},
        "memoryStrategyId": metadata.get(ac.STRATEGY) or ac.MANUAL_STRATEGY,
        "namespaces": [metadata[ac.NAMESPACE]] if isinstance(metadata.get(ac.NAMESPACE), str) else [],
        "createdAt": ac.created_at(item["id"]),
        "timestamp": ac.epoch(item["timestamp"]),
    }
    learnt = _learnt_metadata(metadata)
    typed = {k: ac.typed_value(v, dates, k) for k, v in ac.user_metadata(metadata).items()}
    own = [(k, v) for k, v in typed.items() if v is not None][: MAX_RECORD_METADATA - len(learnt)]
    if own or learnt:
        summary["metadata"] = {**dict(own), **learnt}
    if score is not None:
        summary["score"] = score
    expires = item.get(memory_records.EXPIRES_AT)
    if with_expiry and isinstance(expires, str):
        summary["expiresAt"] = ac.epoch(expires)
    return summary


def _outcome(record: str, status: str, request: str | None, error: MemoryServiceError | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"memoryRecordId": record, "status": status}
    if request is not None:
        out["requestIdentifier"] = request
    if error is not None:
        out["errorCode"] = error.http_status
        out["errorMessage"] = error.message
    return out


def _branch_key(name: Any) -> str:
    """Events without a branch are on ``main``."""
    return name if isinstance(name, str) and name != "main" else ""


def _event_filter(expressions: Sequence[models.EventMetadataFilter] | None) -> filters.Node | None:
    conditions = [
        _condition(e.left.metadata_key or "", e.operator, e.right.metadata_value if e.right else None)
        for e in expressions or ()
    ]
    return filters.parse({"$and": conditions} if conditions else None)


def _record_filter(
    strategy: str | None, expressions: Sequence[models.RecordMetadataFilter] | None
) -> filters.Node | None:
    conditions = [
        _condition(e.left.metadata_key or "", e.operator, e.right.metadata_value if e.right else None)
        for e in expressions or ()
    ]
    if strategy is not None:
        manual = strategy == ac.MANUAL_STRATEGY
        conditions.append({ac.STRATEGY: {"$exists": False}} if manual else {ac.STRATEGY: strategy})
    return filters.parse({"$and": conditions}) if conditions else None


_ORDER = {
    "BEFORE": "$lt",
    "AFTER": "$gt",
    "GREATER_THAN": "$gt",
    "GREATER_THAN_OR_EQUALS": "$gte",
    "LESS_THAN": "$lt",
    "LESS_THAN_OR_EQUALS": "$lte",
}


def _condition(key: str, operator: str, value: Any) -> dict[str, Any]:
    """An AgentCore metadata filter expression in this service's filter language (docs/search.md#filters)."""
    ac.check_key(key)
    if operator in ("EXISTS", "NOT_EXISTS"):
        return {key: {"$exists": operator == "EXISTS"}}
    if value is None:
        raise InvalidInput(f"the {operator} filter on {key!r} needs a right-hand value")
    wanted = ac.stored_value(value) if isinstance(value, models.RecordMetadataValue) else value.string_value
    if operator in _ORDER:
        if isinstance(wanted, list):
            raise InvalidInput(f"the {operator} filter on {key!r} compares one value, not a list")
        return {key: {_ORDER[operator]: wanted}}
    if isinstance(wanted, list):  # EQUALS_TO: one of them; CONTAINS: the list holds all of them
        return {key: {"$in": wanted}} if operator == "EQUALS_TO" else {"$and": [{key: v} for v in wanted]}
    return {key: wanted}


def _encode_token(state: dict[str, Any]) -> str:
    raw = json.dumps(state, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


_FORGED = "nextToken is not one this API returned"


_ENTRY_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def _decode_token(token: str, after_prefix: str, *, branches: bool = False) -> dict[str, Any]:
    """A page token this API gave: ``after``, a sort key beginning with ``after_prefix`` (and, for ListEvents,
    ``branches``, branch key -> entry id or null); any other token is a ValidationException, never a read."""
    try:
        state = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput(_FORGED, code="invalid_cursor") from None
    after = state.get("after") if isinstance(state, dict) else None
    allowed = {"after", "branches"} if branches else {"after"}
    if (
        not isinstance(state, dict)
        or set(state) - allowed
        or not isinstance(after, str)
        or not after.startswith(after_prefix)
        or len(after.encode("utf-8", "surrogatepass")) > MAX_SORT_KEY_BYTES
        or any(unicodedata.category(ch) == "Cc" for ch in after)
    ):
        raise InvalidInput(_FORGED, code="invalid_cursor")
    kept = state.get("branches") or {}
    if branches and not _ENTRY_ID.fullmatch(after):  # ListEvents: the last entry id read
        raise InvalidInput(_FORGED, code="invalid_cursor")
    if branches and (
        not isinstance(kept, dict)
        or len(kept) > MAX_BRANCHES
        or not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in kept.items())
    ):
        raise InvalidInput(_FORGED, code="invalid_cursor")
    return state
