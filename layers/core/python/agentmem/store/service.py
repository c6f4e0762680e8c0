"""One batch of store operations: reads first, in order, then the writes (the last put of a key wins),
as LangGraph's stores apply a batch."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agentmem import users
from agentmem.clock import format_timestamp, utc_now
from agentmem.errors import InvalidInput, NotFound, PayloadTooLarge
from agentmem.keys import Scope
from agentmem.memory import filters
from agentmem.memory import records as memory_records
from agentmem.models.content import Content
from agentmem.models.memory import MAX_ENTRY_BYTES, MAX_TEXT_BYTES, MemoryEntry
from agentmem.models.store import GetOp, ListNamespacesOp, PutOp, SearchOp, StoreOp
from agentmem.store import matching, records
from agentmem.stores.table import Item, Table, query_all

if TYPE_CHECKING:
    from agentmem.memory.service import MemoryService

MAX_SCAN = 2_000
"""Key rows one search without a query (or one listing of namespaces) reads at most."""
MAX_RANKED = 100
"""``offset + limit`` of a search with a query: what one memory search ranks."""
REFRESH_FRACTION = 0.1
"""A read refreshes an item's TTL once a tenth of it has passed (a write per read would cost more than
the item): the item lives at least 90% of its TTL after its last read."""


class StoreService:
    def __init__(self, table: Table, memory: MemoryService, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._table = users.guarded(table)
        self._memory = memory
        self._clock = clock

    def batch(self, app: str, ops: Sequence[StoreOp]) -> list[Any]:
        results: list[Any] = [None] * len(ops)
        puts: dict[tuple[str, str], tuple[Scope, PutOp]] = {}
        stale: dict[tuple[str, str], tuple[Scope, Item]] = {}
        for op in ops:
            if isinstance(op, PutOp):
                _check_put(op)
        for i, op in enumerate(ops):
            scope = Scope(app, op.user, op.project_id)
            if isinstance(op, GetOp):
                row = self._live(self._table.get(scope.partition, records.key_row_sk(op.namespace, op.key)))
                results[i] = None if row is None else records.item_json(row)
                if row is not None and op.refresh_ttl:
                    stale.update(self._due(scope, [row]))
            elif isinstance(op, SearchOp):
                found = self._search(scope, op)
                results[i] = [records.item_json(row, score) for row, score in found]
                if op.refresh_ttl:
                    stale.update(self._due(scope, [row for row, _ in found]))
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._namespaces(scope, op.prefix)
            else:
                puts[(scope.partition, records.key_row_sk(op.namespace, op.key))] = (scope, op)
        for scope, op in puts.values():
            self._put(scope, op)
        for key, (scope, row) in stale.items():
            if key not in puts:
                self._refresh(scope, row)
        return results

    # -- writes ------------------------------------------------------------------------------------

    def _put(self, scope: Scope, op: PutOp) -> None:
        sk = records.key_row_sk(op.namespace, op.key)
        old = self._table.get(scope.partition, sk)
        if op.value is None:
            if old is not None:
                self._memory.ensure_writable(scope.user_ref)
                self._table.delete(scope.partition, sk)
                self._forget_entry(scope, old)
            return
        now = format_timestamp(self._clock())
        ttl_seconds = None if op.ttl_minutes is None else math.ceil(op.ttl_minutes * 60)
        text = records.text_of(op.value) if op.text is None else op.text
        created_at = old["created_at"] if old is not None else now
        self._write(scope, op.namespace, op.key, op.value, text, ttl_seconds, created_at, now, old)

    def _write(
        self,
        scope: Scope,
        path: Sequence[str],
        key: str,
        value: dict[str, Any],
        text: str,
        ttl_seconds: int | None,
        created_at: str,
        updated_at: str,
        old: Item | None,
    ) -> None:
        """The new entry, then the key row pointing at it, then the old entry goes: a failure in between
        leaves at worst an entry no key row points at, which a store search never serves."""
        self._memory.ensure_writable(scope.user_ref)
        expires_at = None if ttl_seconds is None else self._clock() + timedelta(seconds=ttl_seconds)
        entry_id = None
        if text.strip():
            entry = MemoryEntry(
                content=Content.model_validate({"role": "user", "parts": [{"text": text}]}),
                metadata=records.entry_metadata(scope, path, key, value),
                expires_at=expires_at,
            )
            entry_id = self._memory.add_entry(scope, entry).id
        else:
            self._table.put(users.registry_item(scope))  # erasure and export visit registered scopes only
        row = records.key_row(
            scope,
            path,
            key,
            value,
            entry_id=entry_id,
            created_at=created_at,
            updated_at=updated_at,
            expires_at=expires_at,
            ttl_seconds=ttl_seconds,
        )
        self._table.put(row)
        if old is not None:
            self._forget_entry(scope, old)

    def _forget_entry(self, scope: Scope, row: Item) -> None:
        entry_id = row.get("entry_id")
        if entry_id:
            with contextlib.suppress(NotFound):  # expired, or deleted through the memory routes
                self._memory.delete_entry(scope.user_ref, entry_id)

    def _due(self, scope: Scope, rows: Sequence[Item]) -> dict[tuple[str, str], tuple[Scope, Item]]:
        now = self._clock()
        due = {}
        for row in rows:
            ttl = row.get("ttl_seconds")
            expires = row.get("expires_at")
            if not ttl or not isinstance(expires, str):
                continue
            left = (datetime.fromisoformat(expires.replace("Z", "+00:00")) - now).total_seconds()
            if left < ttl * (1 - REFRESH_FRACTION):
                due[(row["pk"], row["sk"])] = (scope, row)
        return due

    def _refresh(self, scope: Scope, row: Item) -> None:
        """Write the item again with its TTL from now (same value, same text, same times)."""
        text = ""
        if row.get("entry_id"):
            try:
                content = self._memory.get_entry(scope.user_ref, row["entry_id"]).content
                text = Content.model_validate(content).text()
            except NotFound:
                text = records.text_of(records.value_of(row))
        self._write(
            scope,
            row["namespace"],
            row["key"],
            records.value_of(row),
            text,
            int(row["ttl_seconds"]),
            row["created_at"],
            row["updated_at"],
            row,
        )

    # -- reads -------------------------------------------------------------------------------------

    def _live(self, row: Item | None) -> Item | None:
        """The row unless it expired: to the millisecond (the table's ``ttl`` counts whole seconds)."""
        if row is None or not memory_records.is_live(row, format_timestamp(self._clock())):
            return None
        return row

    def _search(self, scope: Scope, op: SearchOp) -> list[tuple[Item, float | None]]:
        if op.filter:
            matching.check(op.filter)
        if op.query:
            return self._ranked(scope, op)[op.offset : op.offset + op.limit]
        found: list[tuple[Item, float | None]] = []
        for row in query_all(
            self._table,
            scope.partition,
            records.namespace_prefix_sk(op.namespace_prefix),
            page_size=200,
            limit=MAX_SCAN,
        ):
            if len(found) >= op.offset + op.limit:
                break
            if self._live(row) is not None and matching.matches(records.value_of(row), op.filter):
                found.append((row, None))
        return found[op.offset :]

    def _ranked(self, scope: Scope, op: SearchOp) -> list[tuple[Item, float | None]]:
        if op.offset + op.limit > MAX_RANKED:
            raise InvalidInput(
                f"a search with a query ranks at most {MAX_RANKED} items: offset + limit is {op.offset + op.limit}",
                code="invalid_input",
            )
        assert op.query is not None
        where = filters.parse(
            {
                "$and": [
                    {records.PREFIXES: records.prefix_token(scope, op.namespace_prefix)},
                    *matching.pushdown(op.filter),
                ]
            }
        )
        hits = self._memory.search(scope, op.query, top_k=MAX_RANKED, where=where).entries
        wanted = []
        for hit in hits:
            path = json.loads(hit.metadata[records.PREFIXES][-1])[1:]
            key = hit.metadata.get(records.KEY)
            if isinstance(key, str):
                wanted.append((hit, records.key_row_sk(path, key)))
        rows = {row["sk"]: row for row in self._table.batch_get([(scope.partition, sk) for _, sk in wanted])}
        found: list[tuple[Item, float | None]] = []
        for hit, sk in wanted:
            row = self._live(rows.get(sk))
            # an entry its key row no longer points at (the item was put again or deleted meanwhile) is stale
            if row is not None and row.get("entry_id") == hit.id and matching.matches(records.value_of(row), op.filter):
                found.append((row, hit.score))
        return found

    def _namespaces(self, scope: Scope, prefix: Sequence[str]) -> list[list[str]]:
        """The namespaces under ``prefix`` that hold an item: one read per namespace (it skips the others'
        keys), at most :data:`MAX_SCAN`."""
        base = records.namespace_prefix_sk(prefix)
        found: list[list[str]] = []
        start: str | None = None
        while len(found) < MAX_SCAN:
            page = self._table.query(scope.partition, base, limit=1, start_after=start)
            if not page.items:
                break
            path = list(page.items[0]["namespace"])
            if self._live(page.items[0]) is not None:
                found.append(path)
            else:  # the namespace may hold a live item after this expired one
                start = page.items[0]["sk"]
                continue
            start = records.namespace_prefix_sk(path) + "}"  # past this namespace's own keys ("|" < "}")
        return found


def _check_put(op: PutOp) -> None:
    """The bounds of an entry, checked for the whole batch before anything is written."""
    if op.value is None:
        return
    size = len(json.dumps(op.value, ensure_ascii=False).encode("utf-8"))
    if size > MAX_ENTRY_BYTES:
        raise PayloadTooLarge(
            f"a store value is {size} bytes as JSON; the limit is {MAX_ENTRY_BYTES}", code="value_too_large"
        )
    text = records.text_of(op.value) if op.text is None else op.text
    if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
        raise PayloadTooLarge(
            f"a store item's text to index is over {MAX_TEXT_BYTES} bytes; index fewer fields",
            code="entry_too_large",
        )
