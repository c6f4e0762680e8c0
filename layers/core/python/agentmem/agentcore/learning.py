"""Records extraction learnt, written as AgentCore memory records (agentmem/extraction/sinks.py's port).

A learnt record is a record as BatchCreateMemoryRecords writes one (an entry of the actor's scope, its kind,
namespace and strategy in the entry's metadata, docs/agentcore.md), plus the entries it came from
(:data:`~agentmem.agentcore.records.SOURCES`), what it is about and its session. When a newer record replaces
it, its valid time ends: :data:`~agentmem.agentcore.records.VALID_TO` and
:data:`~agentmem.agentcore.records.SUPERSEDED_BY` are set on it and the AgentCore views stop showing it;
nothing is deleted (the REST routes, export and history keep it). A record of a session in a project goes
to that project's scope, never wider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentmem.agentcore import records as ac
from agentmem.clock import format_timestamp, utc_now
from agentmem.errors import ConditionFailed, InvalidInput
from agentmem.extraction.consolidation import Existing
from agentmem.extraction.sinks import NewRecord
from agentmem.keys import Scope
from agentmem.memory import filters
from agentmem.memory import records as memory_records
from agentmem.models.content import Content
from agentmem.models.memory import MemoryEntry, StoredEntry
from agentmem.stores.table import Item, WriteOp

if TYPE_CHECKING:
    from agentmem.agentcore.service import AgentCoreService
    from agentmem.memory.service import MemoryService


def current_records(namespace: str) -> filters.Node | None:
    """The records of ``namespace`` whose valid time has not ended."""
    return filters.parse({"$and": [{ac.KIND: ac.RECORD}, {ac.NAMESPACE: namespace}, {ac.VALID_TO: {"$exists": False}}]})


class LearnedRecords:
    """:class:`~agentmem.extraction.sinks.RecordSink` on the AgentCore records of this service."""

    def __init__(self, agentcore: AgentCoreService, memory: MemoryService) -> None:
        self._agentcore = agentcore
        self._memory = memory

    def similar(self, scope: Scope, namespace: str, text: str, limit: int) -> list[Existing]:
        found = self._memory.search(scope, text, top_k=limit, where=current_records(namespace))
        return self._existing(scope, found.entries)

    def newest(self, scope: Scope, namespace: str, limit: int) -> list[Existing]:
        page = self._memory.query(scope, current_records(namespace), limit=limit)
        return self._existing(scope, page.entries)

    def commit(self, scope: Scope, records: Sequence[NewRecord], extra: Sequence[WriteOp]) -> list[str]:
        for record in records:
            if scope.user not in ac.owners_of(record.namespace):
                raise InvalidInput(f"the namespace {record.namespace!r} belongs to another actor than {scope.user!r}")
        ref = self._agentcore.actor_ref(scope.user_ref)
        prepared = [self._memory.prepare_entry(scope, _entry(record)) for record in records]
        now = format_timestamp(utc_now())
        rewrites: list[tuple[Item, Item]] = []
        for record, new in zip(records, prepared, strict=True):
            if record.replaces is not None:
                rewrites.append(self._ended(scope, record.replaces, ac.record_id(new.item["id"], ref), now))
        stored = self._memory.commit_entries(scope, prepared, rewrites, extra)
        return [ac.record_id(entry.id, ref) for entry in stored]

    def _ended(self, scope: Scope, old: Existing, successor: str, now: str) -> tuple[Item, Item]:
        """The replaced record as read, and as it is once its valid time ended (only if still current)."""
        parsed = ac.parse_record_id(old.record_id)
        item = self._memory.entry_item_of(scope, parsed[0]) if parsed else None
        if item is None:
            raise ConditionFailed("the record to replace is gone")
        metadata = memory_records.entry_metadata(item)
        if ac.VALID_TO in metadata or memory_records.entry_text(item) != old.text:
            raise ConditionFailed("the record to replace changed")
        metadata.update({ac.VALID_TO: now, ac.SUPERSEDED_BY: successor})
        ended = {**item, memory_records.METADATA: memory_records.encoded_metadata(metadata)}
        return item, ended

    def _existing(self, scope: Scope, entries: Sequence[StoredEntry]) -> list[Existing]:
        ref = self._agentcore.known_ref(scope.user_ref)
        if ref is None:
            return []
        found: list[Existing] = []
        for entry in entries:
            if entry.project_id != scope.project_id:  # a project's job never touches a global record
                continue
            about = entry.metadata.get(ac.ABOUT)
            text = Content.model_validate(entry.content).text()
            found.append(Existing(ac.record_id(entry.id, ref), text, about if isinstance(about, str) else None))
        return found


def _entry(record: NewRecord) -> MemoryEntry:
    metadata: dict[str, Any] = {
        ac.KIND: ac.RECORD,
        ac.NAMESPACE: record.namespace,
        ac.PATHS: ac.paths_of(record.namespace),
        ac.STRATEGY: record.strategy_id,
    }
    if record.sources:
        metadata[ac.SOURCES] = list(record.sources)
    if record.about:
        metadata[ac.ABOUT] = record.about[:256]
    try:
        return MemoryEntry(
            content=Content.model_validate({"parts": [{"text": record.text}]}),
            author=None,
            timestamp=record.said_at,
            metadata=metadata,
        )
    except ValueError as error:
        raise InvalidInput(f"a learnt record cannot be stored: {error}") from None
