"""MemoryService: store what users said, find it again, forget it on request.

Every operation works on a :class:`~agentmem.keys.Scope` ``(app, user, project)``. Reads in a project
see the user's global entries and the project's; reads in the global scope see global entries only.
Writes and deletes touch exactly the scope they name, never a wider one.

Write order makes every acknowledged write durable and findable: the session index, the id pointer and
the scope registry are written first, then the entry items (which carry their words and vector), then
the partition's change log (agentmem/search/changes.py), from which every process's search index
learns what changed. A crash in between leaves rows that point at nothing, which reads skip, or entries
that caught-up processes do not know until they read the partition again (the write was not
acknowledged).

With an embedder, each entry is embedded once (one batch per write) and its vector and model id are
stored on the entry item itself, so the vector index can be rebuilt without re-embedding. When the
embedder or the vector index cannot be reached, the entry is still stored (marked
``vector_pending``) and the write reports ``indexing: "pending"``; a search that cannot use vectors
falls back to keyword matching and says ``degraded``. An entry written in answer to another author
keeps the end of the entries before it, for its vector and its postings (agentmem/search/context.py).
Searching is :mod:`agentmem.memory.search`'s.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from agentmem import held_items, users
from agentmem.budget import Budget
from agentmem.clock import format_timestamp, new_id, utc_now
from agentmem.embeddings.codec import MODEL_ATTR, PENDING_ATTR, VECTOR_ATTR, encode_vector
from agentmem.embeddings.port import Embedder, embedder_health
from agentmem.errors import ConditionFailed, InvalidInput, MalformedRequest, NotFound, PayloadTooLarge, Unavailable
from agentmem.keys import Scope, UserRef, scope_of_partition, validate_id
from agentmem.memory import filters, records
from agentmem.memory.search import MemorySearch, SearchResult, within
from agentmem.models.memory import MAX_ENTRY_BYTES, MAX_TEXT_BYTES, MemoryEntry, SearchMode, StoredEntry
from agentmem.observability import logger
from agentmem.search import changes
from agentmem.search.context import CONTEXT_ENTRIES, CONTEXT_TERMS, context_of, context_terms
from agentmem.search.inverted_index import (
    MAX_QUERY_TERMS,
    MAX_TERMS_PER_DOCUMENT,
    InvertedIndex,
    index_terms,
    terms_per_document,
)
from agentmem.search.tokenize import tokenize
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import TTL_ATTRIBUTE, Condition, Item, Key, Table, check_items, query_all
from agentmem.tenancy import metering
from agentmem.vectors.exact import ExactVectorIndex
from agentmem.vectors.indexing import record_for_item
from agentmem.vectors.port import VectorIndex

_DELETE_PAGE = 200
QUERY_READ = 1_000
"""Entries one page of ``query`` (and ``list_recent``) reads at most."""
PENDING: str = "pending"


@dataclass(frozen=True, slots=True)
class SessionWriteResult:
    session_id: str
    stored: int
    skipped: int
    indexing: str | None = None
    """``pending`` when the entries were stored without their vectors (the embedder or index was down)."""


@dataclass(frozen=True, slots=True)
class EntryPage:
    entries: list[StoredEntry]
    next_cursor: str | None
    truncated: bool = False
    """The page holds fewer than ``limit`` entries to stay within the byte budget; more follow."""


@dataclass(frozen=True, slots=True)
class PreparedEntry:
    item: Item
    terms: dict[str, int]
    length: int
    scope: Scope
    has_text: bool
    text: str = ""
    context: dict[str, int] = field(default_factory=dict)
    """The context words it is indexed under (:mod:`agentmem.search.context`), beside ``terms``."""
    context_length: int = 0


class MemoryService:
    supports_project_scoping = True

    def __init__(
        self,
        table: Table,
        *,
        clock: Callable[[], datetime] = utc_now,
        embedder: Embedder | None = None,
        vector_index: VectorIndex | None = None,
    ) -> None:
        self._table = users.guarded(table)
        self._clock = clock
        self._legacy_postings = InvertedIndex(self._table, records.INDEX_NAMESPACE)
        self._search = MemorySearch(self._table, clock, embedder, vector_index or ExactVectorIndex(table))

    @property
    def embedder(self) -> Embedder | None:
        return self._search.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        self._search.embedder = embedder

    @property
    def vector_index(self) -> VectorIndex:
        return self._search.vector_index

    @vector_index.setter
    def vector_index(self, index: VectorIndex) -> None:
        self._search.vector_index = index

    @property
    def search_modes(self) -> list[SearchMode]:
        return self._search.search_modes

    @property
    def default_mode(self) -> SearchMode:
        return self._search.default_mode

    # -- writes ------------------------------------------------------------------------------------

    def add_session(
        self, scope: Scope, session_id: str, entries: Sequence[MemoryEntry], *, ttl_seconds: int | None = None
    ) -> SessionWriteResult:
        """Store a finished conversation, replacing what this session held in this scope."""
        validate_id(session_id, "session_id")
        self.ensure_writable(scope.user_ref)
        max_terms = terms_per_document(len(entries))
        prepared: list[PreparedEntry] = []
        said: list[tuple[str | None, str]] = []
        for entry in entries:
            p = self._prepare(scope, entry, session_id, max_terms, ttl_seconds, context_of(said, entry.author))
            if p.has_text:
                prepared.append(p)
                said.append((entry.author, p.text))
        skipped = len(entries) - len(prepared)
        generation = new_id()
        if not prepared:
            self._table.put(users.registry_item(scope))  # the session head is written in a registered scope
        indexing = self._write(prepared, session_id, generation)
        if self._commit_generation(scope, session_id, generation):
            older = [i for i, g in self._session_rows(scope, session_id) if g < generation]
            self._delete_ids(scope, older, session_id)
        else:
            # A later ingest of this session committed first: ours is replaced by it, as if it ran before.
            self._delete_ids(scope, [p.item["id"] for p in prepared], session_id)
        return SessionWriteResult(session_id=session_id, stored=len(prepared), skipped=skipped, indexing=indexing)

    def _commit_generation(self, scope: Scope, session_id: str, generation: str) -> bool:
        """Make ``generation`` the session's current one unless a later one already is (optimistic,
        bounded: Conflict when it keeps losing)."""
        sk = records.session_head_sk(session_id)

        def attempt() -> bool:
            head = self._table.get(scope.partition, sk)
            current = head.get("generation", "") if head else None
            if current is not None and current > generation:
                return False
            condition = Condition(exists=False) if head is None else Condition(equals={"generation": current})
            self._table.put({"pk": scope.partition, "sk": sk, "generation": generation}, condition)
            return True

        return retry_on_conflict(attempt, what="the session")

    def add_entry(
        self, scope: Scope, entry: MemoryEntry, session_id: str | None = None, *, ttl_seconds: int | None = None
    ) -> StoredEntry:
        if session_id is not None:
            validate_id(session_id, "session_id")
        self.ensure_writable(scope.user_ref)
        context = self._session_tail(scope, session_id, entry.author) if session_id is not None else []
        prepared = self._prepare(scope, entry, session_id, MAX_TERMS_PER_DOCUMENT, ttl_seconds, context)
        indexing = self._write([prepared], session_id, generation="")
        stored = records.entry_from_item(prepared.item)
        return stored.model_copy(update={"indexing": indexing}) if indexing else stored

    def _session_tail(self, scope: Scope, session_id: str, author: str | None) -> list[str]:
        """The context of an entry by ``author`` added to a session on its own: from the session's last
        entries in this scope."""
        rows = self._table.query(
            scope.partition, records.session_prefix(session_id), limit=CONTEXT_ENTRIES, descending=True
        ).items
        ids = [row["sk"].rsplit("#", 1)[1] for row in rows]
        found = {
            item["id"]: item for item in self._table.batch_get([(scope.partition, records.entry_sk(i)) for i in ids])
        }
        return context_of(
            [(found[i].get("author"), records.entry_text(found[i])) for i in reversed(ids) if i in found], author
        )

    def _prepare(
        self,
        scope: Scope,
        entry: MemoryEntry,
        session_id: str | None,
        max_terms: int,
        ttl_seconds: int | None = None,
        context: Sequence[str] = (),
    ) -> PreparedEntry:
        """Build the entry item and check it against every limit (nothing is written before all pass)."""
        text = entry.content.text()
        size = len(text.encode("utf-8"))
        if size > MAX_TEXT_BYTES:
            raise PayloadTooLarge(
                f"an entry holds {size} bytes of text; the limit is {MAX_TEXT_BYTES}", code="entry_too_large"
            )
        moment = entry.timestamp or self._clock()
        if moment.astimezone(UTC).year < 1970:
            raise InvalidInput("timestamp must not be before 1970-01-01", code="invalid_timestamp")
        entry_id = new_id(int(moment.timestamp() * 1000))
        tokens = tokenize(text)
        expires_at = entry.expires_at
        if expires_at is None and ttl_seconds is not None:
            expires_at = self._clock() + timedelta(seconds=ttl_seconds)
        terms = index_terms(tokens, max_terms)
        context_tokens = tokenize("\n".join(context))
        around = context_terms(context_tokens, set(terms), min(CONTEXT_TERMS, max_terms - len(terms)))
        item = records.entry_item(
            scope,
            entry_id,
            session_id=session_id,
            content=entry.content.to_json(),
            author=entry.author,
            timestamp=format_timestamp(moment),
            terms=terms,
            length=len(tokens),
            metadata=entry.metadata,
            expires_at=expires_at,
            context=context,
            context_length=len(context_tokens),
            context_terms=around,
        )
        size = len(item["content"].encode("utf-8"))
        if size > MAX_ENTRY_BYTES:
            raise PayloadTooLarge(
                f"an entry's content is {size} bytes as JSON; the limit is {MAX_ENTRY_BYTES}", code="entry_too_large"
            )
        return PreparedEntry(
            item,
            terms,
            len(tokens),
            scope,
            has_text=bool(text.strip()),
            text=text,
            context=around,
            context_length=len(context_tokens),
        )

    def _embed(self, prepared: Sequence[PreparedEntry]) -> bool:
        """Put the vector and model id on each entry item (one batch); False when some entry has none.

        When the embedder refuses a text (InvalidInput), the others are embedded one by one and only the
        refused ones are stored ``vector_pending``; when it fails otherwise (down), all of them are."""
        if self.embedder is None:
            return True
        texts = [records.embedding_text(p.item) for p in prepared]
        try:
            vectors: list[list[float] | None] = list(self.embedder.embed(texts))
            metering.count_embedded(texts)
            if len(vectors) != len(prepared):
                raise ValueError("the embedder returned a different number of vectors")
        except InvalidInput:
            vectors = [self._embed_alone(text) for text in texts] if len(texts) > 1 else [None]
        except Exception as error:  # any embedder failure: store the entries anyway, embed them later
            logger.warning("embedding failed; entries stored as pending", extra={"error": type(error).__name__})
            vectors = [None] * len(prepared)
        for p, vector in zip(prepared, vectors, strict=True):
            if vector is None:
                p.item[PENDING_ATTR] = True
            else:
                p.item[VECTOR_ATTR] = encode_vector(vector)
                p.item[MODEL_ATTR] = self.embedder.model_id
        return all(vector is not None for vector in vectors)

    def _embed_alone(self, text: str) -> list[float] | None:
        assert self.embedder is not None
        try:
            vector = self.embedder.embed([text])[0]
            metering.count_embedded([text])
            return vector
        except Exception as error:
            logger.warning(
                "embedding refused one entry; it is stored as pending", extra={"error": type(error).__name__}
            )
            return None

    def _upsert_vectors(self, items: Sequence[Item], vectors_ok: bool) -> str | None:
        """Update a derived search index in the request (read-your-writes: the entries' vectors and words);
        ``pending`` when that was not possible, or when some entry has no vector yet."""
        if not self.vector_index.derived:  # the table's own index: the change log is the update
            return None if vectors_ok else PENDING
        upserts = [r for r in (record_for_item(item) for item in items) if r is not None]
        try:
            if upserts:
                self.vector_index.upsert(upserts)
        except Exception as error:  # the table holds the entries; the stream indexer or `reindex` catches up
            logger.warning("search index upsert failed; indexing pending", extra={"error": type(error).__name__})
            return PENDING
        return None if vectors_ok else PENDING

    def _write(self, prepared: Sequence[PreparedEntry], session_id: str | None, generation: str) -> str | None:
        if not prepared:
            return None
        vectors_ok = self._embed(prepared)
        scope = prepared[0].scope
        side_items: list[Item] = [users.registry_item(scope)]
        for p in prepared:
            side_items.extend(self._side_items(p, session_id, generation))
        entries = [p.item for p in prepared]
        check_items([*side_items, *entries])  # a rejected write must leave nothing behind
        if self._table.batches_in_order:  # one commit, still in this order
            self._table.batch_write(puts=[*side_items, *entries])
        else:
            self._table.batch_write(puts=side_items)
            self._table.batch_write(puts=entries)
        held_items.note((entry["pk"], entry["sk"]) for entry in entries)  # an Idempotency-Key answer holds them
        return self.entries_written(prepared, vectors_ok)

    @staticmethod
    def _side_items(p: PreparedEntry, session_id: str | None = None, generation: str = "") -> list[Item]:
        """What points at an entry: its id pointer, and its session row; they expire with it (DynamoDB TTL too)."""
        own = [records.pointer_item(p.scope, p.item["id"])]
        if session_id is not None:
            own.append(records.session_index_item(p.scope, session_id, p.item["id"], generation))
        if TTL_ATTRIBUTE in p.item:
            own = [{**item, TTL_ATTRIBUTE: p.item[TTL_ATTRIBUTE]} for item in own]
        return own

    # -- entries written by another service in its own transactions (the store's items) -------------

    def prepare_entry(self, scope: Scope, entry: MemoryEntry) -> PreparedEntry:
        """An entry checked against every limit, not yet embedded nor written."""
        return self._prepare(scope, entry, None, MAX_TERMS_PER_DOCUMENT)

    def embed_entries(self, prepared: Sequence[PreparedEntry]) -> bool:
        """Embed prepared entries in one call (see :meth:`_embed`); False when some has no vector."""
        return self._embed(prepared) if prepared else True

    def entry_items(self, prepared: PreparedEntry) -> list[Item]:
        """The items that make a prepared entry: for the caller to write in one transaction, then to
        report with :meth:`entries_written`."""
        return [*self._side_items(prepared), prepared.item]

    def entries_written(self, prepared: Sequence[PreparedEntry], vectors_ok: bool) -> str | None:
        """After the entries' items are written: meter them, log them for every process's search index
        (a reader that sees the new version also finds them), and update a derived index."""
        metering.count(items_stored=len(prepared))
        if prepared:
            changes.MEMORY.record(
                self._table,
                prepared[0].scope.partition,
                [p.item["id"] for p in prepared],
                docs=len(prepared),
                length=sum(p.length for p in prepared),
                context_length=sum(p.context_length for p in prepared),
            )
        return self._upsert_vectors([p.item for p in prepared], vectors_ok)

    def entries_rewritten(self, scope: Scope, items: Sequence[Item]) -> None:
        """After entries were written again with the same words (a new expiry): every process reads them again."""
        changes.MEMORY.record(self._table, scope.partition, [item["id"] for item in items], create=False)
        self._upsert_vectors(items, vectors_ok=True)

    def entry_item_of(self, scope: Scope, entry_id: str) -> Item | None:
        """The entry item of ``entry_id`` in exactly ``scope``, as stored (expired or not: None if absent)."""
        return self._table.get(scope.partition, records.entry_sk(entry_id))

    def ensure_writable(self, user: UserRef) -> None:
        users.ensure_writable(self._table, user)

    # -- reads -------------------------------------------------------------------------------------

    def search(
        self,
        scope: Scope,
        query: str,
        *,
        top_k: int = 10,
        min_score: float | None = None,
        mode: SearchMode | None = None,
        where: filters.Node | None = None,
    ) -> SearchResult:
        """The ``top_k`` best entries matching ``where`` (:class:`~agentmem.memory.search.MemorySearch`)."""
        return self._search.search(scope, query, top_k=top_k, min_score=min_score, mode=mode, where=where)

    def list_recent(self, scope: Scope, *, limit: int = 20, cursor: str | None = None) -> EntryPage:
        """Entries newest first (by their timestamp), following an opaque cursor."""
        return self.query(scope, None, limit=limit, cursor=cursor)

    def query(
        self, scope: Scope, where: filters.Node | None, *, limit: int = 20, cursor: str | None = None
    ) -> EntryPage:
        """The entries matching ``where``, newest first (by their timestamp), following an opaque cursor.

        A page reads at most :data:`QUERY_READ` entries: a filter that matches few of many answers the
        matches among them (maybe none) and a cursor that resumes after the last entry read."""
        start = records.entry_sk(_decode_cursor(cursor)) if cursor else None
        now = self._now()
        page_size = limit + 1 if where is None else min(max(limit + 1, 100), QUERY_READ)
        newest = heapq.merge(
            *(self._newest_first(s.partition, start, page_size) for s in scope.visible_scopes()),
            key=lambda item: str(item["sk"]),
            reverse=True,
        )
        matching: list[Item] = []
        read: Item | None = None
        count = 0
        for count, item in enumerate(newest, 1):
            read = item
            if records.matches(item, where, now):
                matching.append(item)
                if len(matching) > limit:
                    break
            if count >= QUERY_READ:
                break
        budget = Budget()
        page = within(budget, [records.entry_from_item(item) for item in matching[:limit]])
        if len(matching) > limit or budget.truncated:
            resume = page[-1].id if page else None
        else:  # the read bound: resume after the last entry read, if more may follow
            resume = read["id"] if read is not None and count >= QUERY_READ else None
        return EntryPage(
            entries=page,
            next_cursor=_encode_cursor(resume) if resume else None,
            truncated=budget.truncated,
        )

    def _newest_first(self, partition: str, start: str | None, page_size: int) -> Iterator[Item]:
        while True:
            page = self._table.query(partition, records.ENTRY, limit=page_size, descending=True, start_after=start)
            yield from page.items
            if page.next_start is None:
                return
            start = page.next_start

    def get_entry(self, user: UserRef, entry_id: str) -> StoredEntry:
        return records.entry_from_item(self._find(user, entry_id))

    def _find(self, user: UserRef, entry_id: str) -> Item:
        validate_id(entry_id, "id")
        pointer = self._table.get(user.partition, records.ENTRY_POINTER + entry_id)
        if pointer is not None:
            item = self._table.get(user.scope(pointer.get("project_id")).partition, records.entry_sk(entry_id))
            if item is not None and records.is_live(item, self._now()):
                return item
        raise NotFound(f"no memory {entry_id!r} for this user")

    # -- deletes -----------------------------------------------------------------------------------

    def delete_entry(self, user: UserRef, entry_id: str) -> None:
        self.ensure_writable(user)
        item = self._find(user, entry_id)
        self._delete_items(user.scope(item.get("project_id")), [item])

    def delete_session(self, scope: Scope, session_id: str) -> int:
        validate_id(session_id, "session_id")
        self.ensure_writable(scope.user_ref)
        deleted = self._delete_ids(scope, [i for i, _ in self._session_rows(scope, session_id)], session_id)
        self._table.delete(scope.partition, records.session_head_sk(session_id))
        return deleted

    def delete_entries(self, scope: Scope, query: str | None, where: filters.Node | None = None) -> int:
        """Delete the entries of exactly this scope that hold every token of ``query`` and match ``where``
        (at least one of the two is required). A token is held as written: search matches words by their
        stems (agentmem/search/stemming.py), a delete never does, so "forget painting" leaves "painted"."""
        tokens = list(dict.fromkeys(tokenize(query or "")))
        if query and query.strip() and not tokens:
            raise MalformedRequest("the query has no searchable words, so it would delete nothing", code="empty_query")
        if not tokens and where is None:
            raise MalformedRequest("give a query, a filter or both: either selects what to delete", code="empty_query")
        if len(tokens) > MAX_QUERY_TERMS:
            raise InvalidInput(
                f"the query has {len(tokens)} distinct words; a delete takes at most {MAX_QUERY_TERMS}",
                code="query_too_long",
            )
        self.ensure_writable(scope.user_ref)
        if tokens:
            ids = sorted(self._search.vector_index.documents_with_all(scope, tokens, self._now()))
        else:
            ids = [item["id"] for item in query_all(self._table, scope.partition, records.ENTRY)]
        return self._delete_ids(scope, ids, where=where, words=tokens)

    def delete_project(self, user: UserRef, project_id: str) -> int:
        """Delete everything the project holds; return the number of memory entries deleted.

        The project stays in the user's scope registry: a write racing this delete may still land in
        the partition, and only a registered partition is reached by erasure and export."""
        scope = user.scope(project_id)
        if scope.project_id is None:
            raise InvalidInput("project_id is required", code="invalid_id")
        self.ensure_writable(user)
        deleted = 0
        while True:
            page = self._table.query(scope.partition, limit=_DELETE_PAGE)
            if not page.items:
                break
            entry_ids = [item["id"] for item in page.items if item["sk"].startswith(records.ENTRY)]
            deleted += len(entry_ids)
            keys: list[Key] = [(item["pk"], item["sk"]) for item in page.items]
            keys += [(user.partition, records.ENTRY_POINTER + i) for i in entry_ids]
            self._table.batch_write(deletes=keys)
            self._forget_vectors(scope, entry_ids)
        return deleted

    def _session_rows(self, scope: Scope, session_id: str) -> list[tuple[str, str]]:
        """(entry id, generation) of every entry the session holds in this scope."""
        prefix = records.session_prefix(session_id)
        rows = query_all(self._table, scope.partition, prefix)
        return [(item["sk"][len(prefix) :], item.get("generation") or "") for item in rows]

    def _delete_ids(
        self,
        scope: Scope,
        entry_ids: Sequence[str],
        session_id: str | None = None,
        where: filters.Node | None = None,
        words: Sequence[str] = (),
    ) -> int:
        """Delete the live entries among ``entry_ids`` that match ``where`` and hold ``words`` among their
        own as written; with ``session_id``, also the session rows of ids whose entry is gone. Expired
        entries are neither deleted nor counted here: their expiry removes them."""
        deleted = 0
        now = self._now()
        for start in range(0, len(entry_ids), _DELETE_PAGE):
            chunk = entry_ids[start : start + _DELETE_PAGE]
            found = self._table.batch_get([(scope.partition, records.entry_sk(i)) for i in chunk])
            items = [
                item
                for item in found
                if records.matches(item, where, now) and set(words) <= records.entry_terms(item)[0].keys()
            ]
            deleted += self._delete_items(scope, items)
            present = {item["id"] for item in found}
            if session_id is not None:
                prefix = records.session_prefix(session_id)
                self._table.batch_write(deletes=[(scope.partition, prefix + i) for i in chunk if i not in present])
        return deleted

    def _delete_items(self, scope: Scope, items: Sequence[Item]) -> int:
        """Delete entries (entry first, so a crash leaves only harmless dangling postings)."""
        if not items:
            return 0
        self._table.batch_write(deletes=[(item["pk"], item["sk"]) for item in items])
        self._forget_items(scope, items)
        return len(items)

    def purge_expired(self, items: Sequence[Item], *, already_deleted: bool = False) -> int:
        """Remove expired entries and everything that points at them: postings, id pointer, session row,
        statistics, vector. The local sweep calls this; the stream indexer calls it with
        ``already_deleted`` for the entries DynamoDB TTL deleted. Safe to repeat."""
        by_scope: dict[str, list[Item]] = {}
        for item in items:
            if str(item.get("sk", "")).startswith(records.ENTRY) and scope_of_partition(str(item.get("pk"))):
                by_scope.setdefault(item["pk"], []).append(item)
        for partition, expired in by_scope.items():
            scope = scope_of_partition(partition)
            assert scope is not None
            if not already_deleted:
                self._table.batch_write(deletes=[(item["pk"], item["sk"]) for item in expired])
            self._forget_items(scope, expired)
        return sum(len(v) for v in by_scope.values())

    def _forget_items(self, scope: Scope, items: Sequence[Item]) -> None:
        """Remove what points at deleted entries (id pointers, session rows, the row bound to an entry, and
        the postings of entries written when entries had postings), and log the deletes."""
        side: list[Key] = []
        for item in items:
            legacy = item.get(records.LEGACY_TOKENS) or []
            side += self._legacy_postings.posting_keys(scope.partition, item["id"], legacy)
            side.append((scope.user_ref.partition, records.ENTRY_POINTER + item["id"]))
            if item.get("session_id") is not None:
                side.append((scope.partition, records.session_prefix(item["session_id"]) + item["id"]))
        self._table.batch_write(deletes=side)
        for item in items:
            self._delete_bound_row(item)
        self.entries_removed(scope, items)

    def _delete_bound_row(self, item: Item) -> None:
        """The row an entry is bound to (a store item's key row) goes with it, unless it has moved on to
        another entry meanwhile."""
        row = item.get(records.BOUND_ROW)
        if isinstance(row, str):
            with contextlib.suppress(ConditionFailed):
                self._table.delete(item["pk"], row, Condition(equals={records.BOUND_ENTRY: item["id"]}))

    def entries_removed(self, scope: Scope, items: Sequence[Item]) -> None:
        """After entries were deleted (with what points at them): log the deletes for every process's
        search index, and remove them from a derived one."""
        changes.MEMORY.record(
            self._table,
            scope.partition,
            [item["id"] for item in items],
            docs=-len(items),
            length=-sum(int(item.get("length", 0)) for item in items),
            context_length=-sum(int(item.get("context_length", 0)) for item in items),
            create=False,
        )
        self._forget_vectors(scope, [item["id"] for item in items])

    def _forget_vectors(self, scope: Scope, entry_ids: Sequence[str]) -> None:
        """Remove deleted entries from the vector index; a failure is harmless (hits of gone entries are skipped)."""
        if not entry_ids:
            return
        try:
            self.vector_index.delete(scope, entry_ids)
        except Exception as error:  # the stream indexer deletes them too; `reindex` rebuilds
            logger.warning("vector index delete failed", extra={"error": type(error).__name__})

    # -- service -----------------------------------------------------------------------------------

    def _now(self) -> str:
        return format_timestamp(self._clock())

    def health(self) -> dict[str, str]:
        checks: dict[str, str] = {}
        try:
            self._table.ping()
            checks["table"] = "ok"
        except Unavailable:
            checks["table"] = "failing"
        if self.embedder is not None:
            checks["embedder"] = embedder_health(self.embedder)
        if self.embedder is not None or self.vector_index.derived:
            try:
                checks["vectors"] = self.vector_index.health()
            except Exception:
                checks["vectors"] = "failing"
        return checks


def _encode_cursor(entry_id: str) -> str:
    return base64.urlsafe_b64encode(entry_id.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        value = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput("cursor is not one this API returned", code="invalid_cursor") from None
    if not value or len(value) > 64 or not value.isalnum():
        raise InvalidInput("cursor is not one this API returned", code="invalid_cursor")
    return value
