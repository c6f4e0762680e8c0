"""The AgentCore wire shapes and this service's entries, each way: an event or a record as botocore reads it
from an entry item (camelCase members, timestamps in epoch seconds), the entry a CreateEvent or a record
writes, and a batch's per-record outcome (agentmem/agentcore/records.py holds the mapping they follow)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from agentmem.agentcore import models
from agentmem.agentcore import records as ac
from agentmem.clock import parse_timestamp
from agentmem.errors import InvalidInput, MemoryServiceError
from agentmem.memory import records as memory_records
from agentmem.models.content import Content
from agentmem.models.memory import MemoryEntry
from agentmem.stores.table import Item

MAX_RECORD_METADATA = 20
"""Metadata entries a MemoryRecord holds at most (AgentCore's model)."""


def entry(
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


def record_entry(
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
    return entry({"parts": [{"text": text}]}, author=None, timestamp=timestamp, metadata=metadata, expires=expires)


def expires_at(item: Item) -> datetime | None:
    stamp = item.get(memory_records.EXPIRES_AT)
    return parse_timestamp(stamp) if isinstance(stamp, str) else None


def item_of(entry: Any) -> Item:
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


def event(memory_id: str, actor_id: str, item: Item, *, include_payload: bool) -> dict[str, Any]:
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


def record(record: str, item: Item, score: float | None, *, with_expiry: bool = False) -> dict[str, Any]:
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


def outcome(record: str, status: str, request: str | None, error: MemoryServiceError | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"memoryRecordId": record, "status": status}
    if request is not None:
        out["requestIdentifier"] = request
    if error is not None:
        out["errorCode"] = error.http_status
        out["errorMessage"] = error.message
    return out
