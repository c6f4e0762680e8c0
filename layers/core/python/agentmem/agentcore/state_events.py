"""Events that are not memories: an event whose payload holds no conversational item (only ``blob`` or JSON
items, as the Strands session manager writes its session and agent state and the messages too long for a
conversational item) is kept as an event only (docs/agentcore.md#what-is-a-memory).

It is an item of the actor's scope shaped as a memory entry (so the event views and the export read it as
they read an entry), under :data:`~agentmem.memory.records.EVENT` instead of ``E#``, with a session row that
says so (:data:`~agentmem.memory.records.EVENT_ROW`). ``ListEvents``, ``GetEvent``, ``DeleteEvent`` and
``ListSessions`` see it; the export returns it (``events``) and erasure, which sweeps the whole scope, removes
it; memory search, lists, the entry count (and its limit), the console and extraction, which read ``E#``
items, never do. It expires with the memory's event expiry as any event does (its item and row carry the
TTL). It is written with the scope's registry item, through the guarded table: never for a user being erased.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agentmem import held_items, users
from agentmem.clock import format_timestamp, new_id
from agentmem.errors import PayloadTooLarge
from agentmem.keys import Scope
from agentmem.memory import records
from agentmem.models.memory import MAX_ENTRY_BYTES, MemoryEntry
from agentmem.stores.table import TTL_ATTRIBUTE, Item, Key, Table, check_items
from agentmem.tenancy import metering

STATE_KINDS = frozenset({"blob", "json"})


def is_state(kinds: list[str]) -> bool:
    """An event of these payload kinds is no memory: it holds no conversational item."""
    return bool(kinds) and all(kind in STATE_KINDS for kind in kinds)


def write(
    table: Table, scope: Scope, session_id: str, entry: MemoryEntry, now: datetime, ttl_seconds: int | None
) -> Item:
    """Store the event (``entry``: its payload as content, its metadata) and its session row; return its item."""
    moment = entry.timestamp or now
    event_id = new_id(int(moment.timestamp() * 1000))
    expires = now + timedelta(seconds=ttl_seconds) if ttl_seconds is not None else None
    item = records.entry_item(
        scope,
        event_id,
        session_id=session_id,
        content=entry.content.to_json(),
        author=entry.author,
        timestamp=format_timestamp(moment),
        terms={},
        length=0,
        metadata=entry.metadata,
        expires_at=expires,
    )
    item["sk"] = records.EVENT + event_id
    size = len(item["content"].encode("utf-8"))
    if size > MAX_ENTRY_BYTES:
        raise PayloadTooLarge(
            f"an event's payload is {size} bytes as JSON; the limit is {MAX_ENTRY_BYTES}", code="entry_too_large"
        )
    row = records.session_index_item(scope, session_id, event_id, "", int(now.timestamp() * 1000))
    row[records.EVENT_ROW] = 1
    if TTL_ATTRIBUTE in item:
        row[TTL_ATTRIBUTE] = item[TTL_ATTRIBUTE]
    check_items([row, item])
    table.batch_write(puts=[users.registry_item(scope), item, row])
    held_items.note([(item["pk"], item["sk"])])
    metering.count(items_stored=1)
    return item


def get(table: Table, scope: Scope, event_id: str) -> Item | None:
    return table.get(scope.partition, records.EVENT + event_id)


def keys(item: Item) -> list[Key]:
    """The event's item and its session row."""
    row = records.session_prefix(str(item["session_id"])) + str(item["id"])
    return [(item["pk"], item["sk"]), (item["pk"], row)]


def item_key(partition: str, row: Item, prefix: str) -> Key:
    """The key of the item a session row names: an entry, or an event kept as an event only."""
    kept = records.EVENT if row.get(records.EVENT_ROW) else records.ENTRY
    return partition, kept + str(row["sk"])[len(prefix) :]
