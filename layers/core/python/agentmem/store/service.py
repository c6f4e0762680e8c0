"""One batch of store operations: reads first, in order, then the writes (the last put of a key wins),
as LangGraph's stores apply a batch.

Every op is checked and every write built (its entry prepared, sizes as stored, DynamoDB's key limits,
the users' writability) before the first read: a refused batch changes nothing. The reads share one
budget of read units, counted as DynamoDB bills them (:mod:`agentmem.capacity`: what a search ranks and
reads under it included), one of table calls (each a round trip, however little it reads), and their
answers one budget of bytes (:mod:`agentmem.budget`). The operations of a batch share what they read
(:class:`_BatchReads`): the gets are read together, and a page of keys or a value read for one operation is
not read again for the next.

An item is its key row (and value row, for a large value) and, when it has text, the memory entry bound
to it (agentmem/store/records.py). A put writes the new entry, the rows and the old entry's removal in
one transaction, conditioned on the row's revision as read (a lost race reads again and retries); a TTL
refresh rewrites the rows and the entry on the same condition, and does nothing when it lost (the item
was put again or deleted).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentmem import capacity, users
from agentmem.budget import Budget
from agentmem.clock import format_timestamp, new_id, parse_timestamp, utc_now
from agentmem.errors import ConditionFailed, Conflict, InvalidInput, PayloadTooLarge
from agentmem.keys import Scope
from agentmem.memory import filters
from agentmem.memory import records as memory_records
from agentmem.models.content import Content
from agentmem.models.memory import MAX_ENTRY_BYTES, MAX_TEXT_BYTES, MemoryEntry
from agentmem.models.store import GetOp, ListNamespacesOp, PutOp, SearchOp, StoreOp
from agentmem.search import changes
from agentmem.store import matching, records
from agentmem.stores.retry import CONTENTION_CODE, retry_on_conflict
from agentmem.stores.table import TTL_ATTRIBUTE, Condition, Delete, Item, Key, Page, Put, Table, WriteOp, check_items

if TYPE_CHECKING:
    from agentmem.memory.service import MemoryService
    from agentmem.memory.writes import PreparedEntry

MAX_SCAN = 1_000
"""Key rows one search without a query reads at most; namespaces one listing lists, and pages of keys it reads,
at most."""
NAMESPACE_PAGE = 32
"""Key rows a namespace listing reads in one call at most: the key rows are the namespaces' index (a key row
is within one read unit: values over 2 KiB live apart), so a call lists every namespace of its page, then
skips past the last one's keys. After a page of one namespace's keys the next page is smaller, so a
listing of large namespaces reads about one key row per namespace."""
MAX_RANKED = 100
"""``offset + limit`` of a search with a query: what one memory search ranks."""
BATCH_READ_BUDGET = 5_000
"""Read units (4 KiB each, as DynamoDB bills a strongly consistent read) the reads of one batch read in
all: its gets, the rows a search scans, the postings and entries a ranked search reads and the rows of
its hits, the keys a namespace listing probes. The read that goes over refuses the batch before it
writes anything (``batch_reads_too_much``); split it."""
BATCH_CALL_BUDGET = 500
"""Table calls the reads of one batch make in all (a query's page, a batch read, a get each count one): a
call is a round trip of a few milliseconds on DynamoDB whatever it reads, so a batch of many small reads
could outlast the gateway's 29 s within the read units. 500 calls are 2.5 s at 5 ms a call and 5 s at 10 ms
(a ranked search makes two or three, a search without a query or a listing of small namespaces one, the gets
of a batch one). The call that goes over refuses the batch as the read units do (``batch_reads_too_much``)."""
REREADS = 5
"""Times an item whose value row was rewritten between the reads of its two rows is read again."""
REFRESH_FRACTION = 0.1
"""A read refreshes an item's TTL once a tenth of it has passed (a write per read would cost more than
the item): the item lives at least 90% of its TTL after its last read."""
READS_TOO_MUCH = "batch_reads_too_much"
RESPONSE_TOO_LARGE = "response_too_large"


@dataclass
class _Put:
    """A put (or a delete: ``value`` None) built and checked before anything is written."""

    scope: Scope
    op: PutOp
    sk: str
    prepared: PreparedEntry | None = None
    ttl_seconds: int | None = None
    expires_at: datetime | None = None


def _reads_too_much() -> InvalidInput:
    return InvalidInput(
        f"the reads of this batch read over {BATCH_READ_BUDGET} read units or make over {BATCH_CALL_BUDGET} table "
        "calls; send its operations in smaller batches",
        code=READS_TOO_MUCH,
    )


class _BatchReads:
    """What the reads of one batch read, shared by its operations: a batch's reads all happen before its
    writes, so a key row, a value or a page of keys read for one operation answers the next that asks."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._rows: dict[Key, Item | None] = {}
        self._pages: dict[tuple[str, str, int, str | None], Page] = {}

    def rows(self, keys: Sequence[Key]) -> dict[Key, Item | None]:
        """The items at ``keys`` (None where there is none), those not yet read in one batch read."""
        unread = [key for key in dict.fromkeys(keys) if key not in self._rows]
        if unread:
            found = {(item["pk"], item["sk"]): item for item in self._table.batch_get(unread)}
            self._rows.update((key, found.get(key)) for key in unread)
        return {key: self._rows[key] for key in keys}

    def query(self, pk: str, prefix: str, *, limit: int, start_after: str | None) -> Page:
        key = (pk, prefix, limit, start_after)
        if key not in self._pages:
            self._pages[key] = self._table.query(pk, prefix, limit=limit, start_after=start_after)
        return self._pages[key]


class StoreService:
    def __init__(self, table: Table, memory: MemoryService, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._table = users.guarded(table)
        self._memory = memory
        self._clock = clock

    def batch(self, app: str, ops: Sequence[StoreOp]) -> dict[str, Any]:
        """``results``, one per op; ``truncated``, the indexes of searches cut to the response budget (a batch
        that writes is refused instead, before it writes)."""
        puts: dict[tuple[str, str], _Put] = {}
        for op in ops:
            scope = Scope(app, op.user, op.project_id)
            if isinstance(op, PutOp):
                put = self._plan(scope, op)
                puts[(scope.partition, put.sk)] = put
            elif isinstance(op, GetOp):
                _check_sort_key(scope, records.key_row_sk(op.namespace, op.key))
            elif isinstance(op, SearchOp) and op.filter:
                matching.check(op.filter)
        for user in {put.scope.user_ref for put in puts.values()}:
            self._memory.ensure_writable(user)
        results, truncated, stale = self._read(app, ops)
        if truncated and puts:
            raise PayloadTooLarge(
                "the answers of this batch's reads exceed the response budget; send the reads apart from the writes",
                code=RESPONSE_TOO_LARGE,
            )
        vectors_ok = self._memory.embed_entries([p.prepared for p in puts.values() if p.prepared is not None])
        for put in puts.values():
            retry_on_conflict(functools.partial(self._commit, put, vectors_ok), what="the store item")
        for key, (scope, row) in stale.items():
            if key not in puts:
                self._refresh(scope, row)
        answer: dict[str, Any] = {"results": results}
        if truncated:
            answer["truncated"] = truncated
        return answer

    # -- planning: everything checked before the first write -----------------------------------------

    def _plan(self, scope: Scope, op: PutOp) -> _Put:
        put = _Put(scope, op, records.key_row_sk(op.namespace, op.key))
        _check_sort_key(scope, put.sk)
        if op.value is None:
            return put
        text = records.text_of(op.value) if op.text is None else op.text
        _check_value(op.value, text)
        put.ttl_seconds = None if op.ttl_minutes is None else math.ceil(op.ttl_minutes * 60)
        put.expires_at = None if put.ttl_seconds is None else self._clock() + timedelta(seconds=put.ttl_seconds)
        if text.strip():
            try:
                entry = MemoryEntry(
                    content=Content.model_validate({"role": "user", "parts": [{"text": text}]}),
                    metadata=records.entry_metadata(scope, op.namespace, op.key, op.value),
                    expires_at=put.expires_at,
                )
            except ValidationError as error:  # bounds the op's own model does not see: refused as input
                raise InvalidInput(f"a store item cannot be indexed: {error.errors()[0]['msg']}") from None
            put.prepared = self._memory.prepare_entry(scope, entry)
            put.prepared.item[memory_records.BOUND_ROW] = put.sk
        rows = [row for row in self._rows(put, old=None) if row is not None]
        if len(rows) > 1 and put.prepared is not None:
            put.prepared.item[memory_records.BOUND_VALUE_ROW] = rows[1]["sk"]
        check_items([*rows, *(self._memory.entry_items(put.prepared) if put.prepared is not None else [])])
        return put

    def _rows(self, put: _Put, old: Item | None) -> tuple[Item, Item | None]:
        """The key row the put writes, and its value row when the value lives apart."""
        assert put.op.value is not None
        now = format_timestamp(self._clock())
        return records.key_row(
            put.scope,
            put.op.namespace,
            put.op.key,
            put.op.value,
            entry_id=put.prepared.item["id"] if put.prepared is not None else None,
            created_at=old["created_at"] if old is not None else now,
            updated_at=now,
            expires_at=put.expires_at,
            ttl_seconds=put.ttl_seconds,
            revision=new_id(),
        )

    # -- writes ------------------------------------------------------------------------------------

    def _commit(self, put: _Put, vectors_ok: bool) -> None:
        """One attempt: the row as read now, and everything the put changes in one transaction on it."""
        scope = put.scope
        old = self._live(self._table.get(scope.partition, put.sk))
        old_entry = self._entry_of(scope, old)
        ops: list[WriteOp] = []
        apart: Item | None = None
        if put.op.value is None:
            if old is None:
                return
            ops.append(Delete(scope.partition, put.sk, _as_read(old)))
        else:
            self._table.put(users.registry_item(scope))  # erasure and export visit registered scopes only
            if put.prepared is not None:
                ops += [Put(item) for item in self._memory.entry_items(put.prepared)]
            row, apart = self._rows(put, old)
            ops.append(Put(row, _as_read(old)))
            if apart is not None:
                ops.append(Put(apart))
        old_value_row = records.value_row_key(old) if old is not None else None
        if old_value_row is not None and apart is None:
            ops.append(Delete(*old_value_row))
        if old_entry is not None:
            ops.append(Delete(old_entry["pk"], old_entry["sk"]))
            ops.append(Delete(scope.user_ref.partition, memory_records.ENTRY_POINTER + old_entry["id"]))
        self._table.transact_write(ops)
        if put.prepared is not None:
            self._memory.entries_written([put.prepared], vectors_ok)
        if old_entry is not None:
            self._memory.entries_removed(scope, [old_entry])

    def _entry_of(self, scope: Scope, row: Item | None) -> Item | None:
        entry_id = row.get("entry_id") if row is not None else None
        return self._memory.entry_item_of(scope, entry_id) if isinstance(entry_id, str) else None

    def _due(self, scope: Scope, rows: Sequence[Item]) -> dict[tuple[str, str], tuple[Scope, Item]]:
        now = self._clock()
        due = {}
        for row in rows:
            ttl = row.get("ttl_seconds")
            expires = row.get("expires_at")
            if not ttl or not isinstance(expires, str):
                continue
            left = (parse_timestamp(expires) - now).total_seconds()
            if left < ttl * (1 - REFRESH_FRACTION):
                due[(row["pk"], row["sk"])] = (scope, row)
        return due

    def _refresh(self, scope: Scope, row: Item) -> None:
        """The item's TTL from now: its row and entry rewritten with the new expiry, if the row is still the
        one read (a put or a delete that landed meanwhile wins: the refresh does nothing)."""
        expires_at = self._clock() + timedelta(seconds=int(row["ttl_seconds"]))
        expiry = {"expires_at": format_timestamp(expires_at), TTL_ATTRIBUTE: math.ceil(expires_at.timestamp())}
        ops: list[WriteOp] = [Put({**row, **expiry}, _as_read(row))]
        value_row_key = records.value_row_key(row)
        if value_row_key is not None:
            value_row = self._table.get(*value_row_key)
            if not records.is_value_of(value_row, row):
                return  # put again meanwhile
            assert value_row is not None
            ops.append(Put({**value_row, **expiry}, Condition(equals={records.REVISION: row[records.REVISION]})))
        entry = self._entry_of(scope, row)
        if entry is not None:
            entry = {**entry, memory_records.EXPIRES_AT: expiry["expires_at"], TTL_ATTRIBUTE: expiry[TTL_ATTRIBUTE]}
            pointer = memory_records.pointer_item(scope, entry["id"])
            ops.append(Put(entry, Condition(equals={"id": entry["id"]})))
            ops.append(Put({**pointer, TTL_ATTRIBUTE: expiry[TTL_ATTRIBUTE]}, Condition(exists=True)))
        try:
            self._table.transact_write(ops)
        except ConditionFailed:
            return
        if entry is not None:
            self._memory.entries_rewritten(scope, [entry])

    # -- reads -------------------------------------------------------------------------------------

    def _read(
        self, app: str, ops: Sequence[StoreOp]
    ) -> tuple[list[Any], list[int], dict[tuple[str, str], tuple[Scope, Item]]]:
        results: list[Any] = [None] * len(ops)
        truncated: list[int] = []
        stale: dict[tuple[str, str], tuple[Scope, Item]] = {}
        answer = Budget()
        reads = _BatchReads(self._table)
        with (
            capacity.bounded(BATCH_READ_BUDGET, _reads_too_much, calls=BATCH_CALL_BUDGET),
            changes.one_read_of_heads(),  # the searches of a batch read their user's log head once
        ):
            gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
            got_rows = reads.rows(
                [
                    (Scope(app, op.user, op.project_id).partition, records.key_row_sk(op.namespace, op.key))
                    for _, op in gets
                ]
            )
            got = self._with_values_of(app, [op for _, op in gets], got_rows, reads)
            for i, op in enumerate(ops):
                scope = Scope(app, op.user, op.project_id)
                if isinstance(op, GetOp):
                    item = got.get((scope.partition, records.key_row_sk(op.namespace, op.key)))
                    results[i] = records.item_json(*item) if item else None
                    if results[i] is not None and not answer.take(results[i]):
                        raise PayloadTooLarge(
                            "the items this batch gets exceed the response budget; get them in smaller batches",
                            code=RESPONSE_TOO_LARGE,
                        )
                    if item and op.refresh_ttl:
                        stale.update(self._due(scope, [item[0]]))
                elif isinstance(op, SearchOp):
                    found = self._search(scope, op, reads)
                    items = []
                    for row, value, score in found:
                        item_json = records.item_json(row, value, score)
                        if not answer.take(item_json):
                            truncated.append(i)
                            answer.truncated = False  # the next op may still fit what is left
                            break
                        items.append(item_json)
                    results[i] = items
                    if op.refresh_ttl:
                        stale.update(self._due(scope, [row for row, _, _ in found[: len(items)]]))
                elif isinstance(op, ListNamespacesOp):
                    results[i] = self._namespaces(scope, op.prefix, reads)
        return results, truncated, stale

    def _with_values_of(
        self, app: str, gets: Sequence[GetOp], rows: dict[Key, Item | None], reads: _BatchReads
    ) -> dict[Key, tuple[Item, dict[str, Any]]]:
        """The items the gets of a batch name, with their values: the values that live apart read together."""
        by_scope: dict[Scope, list[Item]] = {}
        for op in gets:
            scope = Scope(app, op.user, op.project_id)
            row = rows[(scope.partition, records.key_row_sk(op.namespace, op.key))]
            if row is not None:
                by_scope.setdefault(scope, []).append(row)
        reads.rows([key for held in by_scope.values() for key in map(records.value_row_key, held) if key is not None])
        return {
            (row["pk"], row["sk"]): (row, value)
            for scope, held in by_scope.items()
            for row, value in self._with_values(scope, self._served(scope, held, reads), reads)
        }

    def _live(self, row: Item | None) -> Item | None:
        """The row unless it expired: to the millisecond (the table's ``ttl`` counts whole seconds)."""
        if row is None or not memory_records.is_live(row, format_timestamp(self._clock())):
            return None
        return row

    def _served(self, scope: Scope, rows: Sequence[Item | None], reads: _BatchReads | None = None) -> list[Item]:
        """The live rows among ``rows`` that may be served: a row written before entries were bound to their
        rows (no revision) is served only while its entry is (it was deleted through the memory routes)."""
        live = [row for row in (self._live(r) for r in rows) if row is not None]
        legacy = {row["entry_id"]: row for row in live if records.REVISION not in row and row.get("entry_id")}
        if not legacy:
            return live
        keys = [(scope.partition, memory_records.entry_sk(i)) for i in legacy]
        entries = reads.rows(keys).values() if reads is not None else self._table.batch_get(keys)
        now = format_timestamp(self._clock())
        present = {item["id"] for item in entries if item is not None and memory_records.is_live(item, now)}
        return [row for row in live if row.get("entry_id") not in legacy or row["entry_id"] in present]

    def _with_values(self, scope: Scope, rows: Sequence[Item], reads: _BatchReads) -> list[tuple[Item, dict[str, Any]]]:
        """Each row with its value: values that live apart read in one batch; a row whose value row is of
        another revision (the key was put again between the two reads) is read again; one deleted
        meanwhile is left out."""
        held = reads.rows([key for key in map(records.value_row_key, rows) if key is not None])
        found: list[tuple[Item, dict[str, Any]]] = []
        for row in rows:
            key = records.value_row_key(row)
            value_row = held.get(key) if key is not None else None
            if key is None or records.is_value_of(value_row, row):
                found.append((row, records.value_of(row, value_row)))
            elif (again := self._reread(scope, row["sk"])) is not None:
                found.append(again)
        return found

    def _reread(self, scope: Scope, sk: str) -> tuple[Item, dict[str, Any]] | None:
        """The row and its value read again from the table (not from what the batch read: it changed)."""
        for _ in range(REREADS):
            served = self._served(scope, [self._table.get(scope.partition, sk)])
            if not served:
                return None
            row = served[0]
            key = records.value_row_key(row)
            value_row = self._table.get(*key) if key is not None else None
            if key is None or records.is_value_of(value_row, row):
                return row, records.value_of(row, value_row)
        raise Conflict("the store item is being changed by other requests; retry", code=CONTENTION_CODE)

    def _search(
        self, scope: Scope, op: SearchOp, reads: _BatchReads
    ) -> list[tuple[Item, dict[str, Any], float | None]]:
        if op.query:
            return self._ranked(scope, op, reads)[op.offset : op.offset + op.limit]
        found: list[tuple[Item, dict[str, Any], float | None]] = []
        start: str | None = None
        prefix = records.namespace_prefix_sk(op.namespace_prefix)
        scanned = 0
        wanted = op.offset + op.limit
        while len(found) < wanted and scanned < MAX_SCAN:
            # without a filter a page needs hold only what is still wanted (a row that expired asks for another)
            size = min(200, MAX_SCAN - scanned) if op.filter else min(200, MAX_SCAN - scanned, wanted - len(found))
            page = reads.query(scope.partition, prefix, limit=size, start_after=start)
            scanned += len(page.items)
            rows = self._served(scope, page.items, reads)
            if op.filter:  # only the values of what the answer holds are read without one
                found += [
                    (r, v, None) for r, v in self._with_values(scope, rows, reads) if matching.matches(v, op.filter)
                ]
            else:
                found += [(row, {}, None) for row in rows]
            if page.next_start is None:
                break
            start = page.next_start
        found = found[op.offset : wanted]
        if op.filter:
            return found
        return [(row, value, None) for row, value in self._with_values(scope, [row for row, _, _ in found], reads)]

    def _ranked(
        self, scope: Scope, op: SearchOp, reads: _BatchReads
    ) -> list[tuple[Item, dict[str, Any], float | None]]:
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
        hits = self._memory.search(scope, op.query, top_k=op.offset + op.limit, where=where).entries
        wanted = [(hit, sk) for hit in hits if (sk := records.row_sk_of_hit(hit.metadata)) is not None]
        rows = reads.rows([(scope.partition, sk) for _, sk in wanted])
        # an entry its key row no longer points at (the item was put again or deleted meanwhile) is stale
        bound = {
            sk: (row, hit)
            for hit, sk in wanted
            if (row := self._live(rows[(scope.partition, sk)])) is not None and row.get("entry_id") == hit.id
        }
        return [
            (row, value, hit.score)
            for row, value in self._with_values(scope, [row for row, _ in bound.values()], reads)
            if row.get("entry_id") == (hit := bound[row["sk"]][1]).id and matching.matches(value, op.filter)
        ]

    def _namespaces(self, scope: Scope, prefix: Sequence[str], reads: _BatchReads) -> list[list[str]]:
        """The namespaces under ``prefix`` that hold a live item, in key order: pages of key rows (they read
        keys, not values that live apart), each listing the namespaces it holds and then skipping past the
        last one's own keys; at most :data:`MAX_SCAN` pages and namespaces. A page that held one namespace's
        keys only makes the next smaller (a listing of large namespaces reads about a row each), one of several
        larger."""
        base = records.namespace_prefix_sk(prefix)
        found: dict[tuple[str, ...], None] = {}
        start: str | None = None
        size = NAMESPACE_PAGE
        for _ in range(MAX_SCAN):
            page = reads.query(scope.partition, base, limit=size, start_after=start)
            served = {tuple(row["namespace"]) for row in self._served(scope, page.items, reads)}
            found.update((tuple(row["namespace"]), None) for row in page.items if tuple(row["namespace"]) in served)
            if page.next_start is None or len(found) >= MAX_SCAN:
                break
            last = list(page.items[-1]["namespace"])
            # past the last namespace's own keys ("|" < "}"), unless none of those read was live
            start = records.namespace_prefix_sk(last) + "}" if tuple(last) in served else page.next_start
            several = len({tuple(row["namespace"]) for row in page.items}) > 1
            size = min(NAMESPACE_PAGE, size * 2) if several or size == 1 else max(1, size // 4)
        return [list(path) for path in found][:MAX_SCAN]


def _as_read(row: Item | None) -> Condition:
    """The row is still as it was read: absent, or of the same revision (a row written before revisions:
    the same update time and entry)."""
    if row is None:
        return Condition(exists=False)
    if records.REVISION in row:
        return Condition(equals={records.REVISION: row[records.REVISION]})
    same = {"updated_at": row["updated_at"]}
    if isinstance(row.get("entry_id"), str):
        same["entry_id"] = row["entry_id"]
    return Condition(equals=same)


def _check_sort_key(scope: Scope, sk: str) -> None:
    """The key row's keys within DynamoDB's limits (the namespace and key as stored: '/', '|' and '%' take
    three bytes each)."""
    check_items([{"pk": scope.partition, "sk": sk}])


def _check_value(value: dict[str, Any], text: str) -> None:
    """The bounds of an item's value and of the text it is searched by, checked before anything is written."""
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > MAX_ENTRY_BYTES:
        raise PayloadTooLarge(
            f"a store value is {size} bytes as JSON; the limit is {MAX_ENTRY_BYTES}", code="value_too_large"
        )
    if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
        raise PayloadTooLarge(
            f"a store item's text to index is over {MAX_TEXT_BYTES} bytes; index fewer fields",
            code="entry_too_large",
        )
