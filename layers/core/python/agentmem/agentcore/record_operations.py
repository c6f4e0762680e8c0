"""AgentCore's memory records (BatchCreate/Update/DeleteMemoryRecords, Get/DeleteMemoryRecord,
ListMemoryRecords, RetrieveMemoryRecords): a record is a memory entry of its actor's scope, its kind, namespace
and strategy in the entry's metadata (agentmem/agentcore/records.py), its id the entry's and its actor's ref."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any

from agentmem.agentcore import metadata_filters, models, wire
from agentmem.agentcore import records as ac
from agentmem.agentcore.actors import Actor
from agentmem.agentcore.plane import DataPlane
from agentmem.budget import Budget
from agentmem.errors import InvalidInput, MemoryServiceError, NotFound
from agentmem.keys import UserRef
from agentmem.memory import filters
from agentmem.memory import records as memory_records
from agentmem.models.memory import MemoryEntry
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import Item


class RecordOperations(DataPlane):
    def batch_create_records(self, memory_id: str, body: models.BatchCreateRecordsRequest) -> dict[str, Any]:
        """Every record is checked before the first is written (a bad one refuses the batch); a record that
        cannot be written then (its actor being erased) is reported failed, as AgentCore reports them."""
        expires = self._expiry(body.record_expiry_specification)
        planned: list[tuple[models.RecordCreate, Actor, MemoryEntry]] = []
        for record in body.records:
            if len(record.namespaces) != 1:
                raise InvalidInput("a record needs one namespace, which names its actor")
            namespace = record.namespaces[0]
            actor = self._actors.namespace_actor(memory_id, namespace)
            entry = wire.record_entry(
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
                    ref = self._actors.register(actor.user)
                    stored = self._memory.add_entry(actor.scope, entry)
                except MemoryServiceError as error:
                    failed.append(wire.outcome("", "FAILED", record.request_identifier, error))
                    continue
                successful.append(wire.outcome(ac.record_id(stored.id, ref), "SUCCEEDED", record.request_identifier))
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
                failed.append(wire.outcome(update.memory_record_id, "FAILED", None, error))
                continue
            successful.append(wire.outcome(update.memory_record_id, "SUCCEEDED", None))
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
        entry = wire.record_entry(
            namespace,
            text or "",
            update.timestamp,
            update.memory_strategy_id or metadata.get(ac.STRATEGY),
            update.metadata if update.metadata is not None else {},
            expires if expires is not None else wire.expires_at(item),
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
                failed.append(wire.outcome(record.memory_record_id, "FAILED", None, error))
                continue
            successful.append(wire.outcome(record.memory_record_id, "SUCCEEDED", None))
        return {"successfulRecords": successful, "failedRecords": failed}

    def get_record(self, memory_id: str, record: str, namespace: str | None) -> dict[str, Any]:
        _, item = self._record_item(memory_id, record, namespace)
        return {"memoryRecord": wire.record(record, item, None, with_expiry=True)}

    def delete_record(self, memory_id: str, record: str, namespace: str | None) -> dict[str, Any]:
        actor, item = self._record_item(memory_id, record, namespace)
        self._memory.delete_entry(actor.user, item["id"])
        return {"memoryRecordId": record}

    def list_records(self, memory_id: str, body: models.ListRecordsRequest) -> dict[str, Any]:
        """The records of a namespace (or under a namespace path) newest first."""
        actor, where = self._record_scope(memory_id, body.namespace, body.namespace_path)
        where = filters.both(where, metadata_filters.record_filter(body.memory_strategy_id, body.metadata_filters))
        ref = self._actors.ref_or_none(actor.user)
        if ref is None:  # the actor never had a record
            return {"memoryRecordSummaries": []}
        page = self._memory.query(actor.scope, where, limit=body.max_results, cursor=body.next_token)
        # The memory service's page is within the response budget; a record is shorter than its entry.
        summaries = [wire.record(ac.record_id(e.id, ref), wire.item_of(e), None) for e in page.entries]
        answer: dict[str, Any] = {"memoryRecordSummaries": summaries}
        if page.next_cursor:
            answer["nextToken"] = page.next_cursor
        return answer

    def retrieve_records(self, memory_id: str, body: models.RetrieveRecordsRequest) -> dict[str, Any]:
        """The records of a namespace (or under a path) that best answer the query, by this service's
        ranking (hybrid where there is an embedder), each with its score in [0, 1]."""
        actor, where = self._record_scope(memory_id, body.namespace, body.namespace_path)
        criteria = body.search_criteria
        where = filters.both(
            where, metadata_filters.record_filter(criteria.memory_strategy_id, criteria.metadata_filters)
        )
        top_k = min(criteria.top_k, body.max_results or criteria.top_k)
        ref = self._actors.ref_or_none(actor.user)
        if ref is None:
            return {"memoryRecordSummaries": []}
        result = self._memory.search(actor.scope, criteria.search_query, top_k=top_k, where=where)
        budget = Budget()
        summaries = [wire.record(ac.record_id(e.id, ref), wire.item_of(e), e.score) for e in result.entries]
        return {"memoryRecordSummaries": [s for s in summaries if budget.take(s)]}

    def _record_scope(
        self, memory_id: str, namespace: str | None, path: str | None
    ) -> tuple[Actor, filters.Node | None]:
        if (namespace is None) == (path is None):
            raise InvalidInput("give exactly one of namespace and namespacePath; it names the actor")
        if namespace is not None:
            condition: dict[str, Any] = {ac.NAMESPACE: namespace}
        else:
            assert path is not None
            condition = {ac.PATHS: ac.path_of(path)}
        actor = self._actors.namespace_actor(memory_id, namespace or path or "")
        current = {ac.VALID_TO: {"$exists": False}}  # a record a newer one replaced stays, unlisted
        return actor, filters.parse({"$and": [{ac.KIND: ac.RECORD}, condition, current]})

    def _record_item(self, memory_id: str, record: str, namespace: str | None) -> tuple[Actor, Item]:
        parsed = ac.parse_record_id(record)
        app = ac.app_of_memory(memory_id)
        row = self._table.get(ac.index_partition(app), ac.REF_ROW + parsed[1]) if parsed else None
        if parsed is None or row is None:
            raise NotFound(f"no memory record {record!r} in this memory")
        actor = Actor(UserRef.of(app, row["actor"]))
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

    def _expiry(self, spec: models.RecordExpiry | None) -> datetime | None:
        if spec is None or spec.record_expiry_duration_days is None:
            return None
        return self._clock() + timedelta(days=spec.record_expiry_duration_days)
