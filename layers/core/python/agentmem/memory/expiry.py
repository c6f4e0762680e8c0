"""Removing expired entries from the stores (reads already ignore them; see docs/search.md#expiry).

An entry with ``expires_at`` carries the table's TTL attribute (``ttl``, epoch seconds, rounded up), and
so do its postings, id pointer and session row: the table adapters read them as absent from then on.

- In the cloud, DynamoDB TTL deletes them (within 48 hours). The deletion of an entry reaches the
  stream indexer as a ``REMOVE`` record made by the DynamoDB service principal: :func:`apply_ttl_removal`
  removes what points at it (its postings and the rest if TTL has not reached them yet, its statistics,
  its OpenSearch document).
- Locally, :func:`sweep` deletes every expired item of the SQLite store: at ``agentmem serve`` startup
  and with ``agentmem sweep`` (run it from cron on a server that stays up for days).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

from agentmem.memory import records
from agentmem.memory.service import MemoryService
from agentmem.stores.table import Item, Table

TTL_PRINCIPAL = "dynamodb.amazonaws.com"
_SWEEP_BATCH = 500


class ExpiringTable(Table, Protocol):
    def expired_items(self, now: int, limit: int) -> list[Item]: ...


def is_ttl_removal(user_identity: Mapping[str, Any] | None) -> bool:
    """A stream record's ``userIdentity`` of a deletion made by DynamoDB TTL (not by a caller)."""
    return bool(
        user_identity and user_identity.get("type") == "Service" and user_identity.get("principalId") == TTL_PRINCIPAL
    )


def apply_ttl_removal(memory: MemoryService, old_image: Item | None) -> bool:
    """After DynamoDB TTL deleted an entry: remove its postings, pointer, session row, statistics and
    vector. True when the record was an entry's."""
    if not old_image or not str(old_image.get("sk", "")).startswith(records.ENTRY):
        return False
    return memory.purge_expired([old_image], already_deleted=True) > 0


def sweep(table: Table, memory: MemoryService, *, now: int | None = None) -> int:
    """Delete every item of the store whose ``ttl`` has passed (entries with what points at them);
    return how many entries were removed. Run by one process at a time (the statistics of a partition
    are decremented once per entry)."""
    expired_items = getattr(table, "expired_items", None)
    if not callable(expired_items):
        raise TypeError(f"{type(table).__name__} removes expired items itself (DynamoDB TTL); no sweep needed")
    moment = int(time.time()) if now is None else now
    removed = 0
    while True:
        batch: list[Item] = expired_items(moment, _SWEEP_BATCH)
        if not batch:
            return removed
        entries = [item for item in batch if str(item["sk"]).startswith(records.ENTRY)]
        removed += memory.purge_expired(entries)
        table.batch_write(deletes=[(item["pk"], item["sk"]) for item in batch])
