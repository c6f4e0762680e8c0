"""MemoryService: store what users said, find it again, forget it on request.

Every operation works on a :class:`~agentmem.keys.Scope` ``(app, user, project)``. Reads in a project
see the user's global entries and the project's; reads in the global scope see global entries only.
Writes and deletes touch exactly the scope they name, never a wider one.

This module holds the operations and their rules (sessions and their generations, pages, what a delete
selects); writing an entry is :mod:`agentmem.memory.writes`', removing one
:mod:`agentmem.memory.removal`'s, searching :mod:`agentmem.memory.search`'s.
"""

from __future__ import annotations

import base64
import binascii
import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentmem import users
from agentmem.budget import Budget
from agentmem.clock import format_timestamp, new_id, utc_now
from agentmem.embeddings.port import Embedder, embedder_health
from agentmem.errors import InvalidInput, MalformedRequest, NotFound, Unavailable
from agentmem.keys import Scope, UserRef, validate_id
from agentmem.memory import filters, records
from agentmem.memory.removal import EntryRemoval
from agentmem.memory.revisions import KEEP, EntryRevisions
from agentmem.memory.search import MemorySearch, SearchResult, within
from agentmem.memory.writes import EntryWriter, PreparedEntry, SessionWatch, side_items_of
from agentmem.models.content import Content
from agentmem.models.memory import MemoryEntry, SearchMode, StoredEntry
from agentmem.search.context import CONTEXT_ENTRIES, context_of, continued
from agentmem.search.inverted_index import MAX_QUERY_TERMS, MAX_TERMS_PER_DOCUMENT, terms_per_document
from agentmem.search.tokenize import tokenize
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import Condition, Item, Put, Table, WriteOp, query_all
from agentmem.vectors.exact import ExactVectorIndex
from agentmem.vectors.port import VectorIndex

QUERY_READ = 1_000
"""Entries one page of ``query`` (and ``list_recent``) reads at most."""


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


class MemoryService:
    supports_project_scoping = True

    def __init__(
        self,
        table: Table,
        *,
        clock: Callable[[], datetime] = utc_now,
        embedder: Embedder | None = None,
        vector_index: VectorIndex | None = None,
        sessions: SessionWatch | None = None,
    ) -> None:
        """``sessions``: told of every write into a session (extraction's pending work)."""
        self._table = users.guarded(table)
        self._clock = clock
        self._sessions = sessions
        self._search = MemorySearch(self._table, clock, embedder, vector_index or ExactVectorIndex(table))
        self._writer = EntryWriter(self._table, clock, self._search)
        self._removal = EntryRemoval(self._table, self._search)
        self._revisions = EntryRevisions(self._table, clock, self._writer, self._find)

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
            before = continued(said, entry.author)
            p = self._writer.prepare(
                scope,
                entry,
                session_id,
                max_terms,
                ttl_seconds,
                context_of(said, entry.author),
                prepared[before].item["id"] if before is not None else None,
            )
            if p.has_text:
                prepared.append(p)
                said.append((entry.author, p.text))
        skipped = len(entries) - len(prepared)
        generation = new_id()
        if not prepared:
            self._table.put(users.registry_item(scope))  # the session head is written in a registered scope
        indexing = self._writer.write(
            prepared, session_id, generation, replaces=lambda: len(self._session_rows(scope, session_id))
        )
        # Another service's notes (extraction's pending row) land with the new generation, in its commit.
        notes = self._sessions.notes(scope, session_id) if self._sessions is not None and prepared else []
        if self._commit_generation(scope, session_id, generation, notes):
            older = [i for i, g in self._session_rows(scope, session_id) if g < generation]
            self._removal.delete_ids(scope, older, self._now(), session_id=session_id)
            if notes and self._sessions is not None:
                self._sessions.written(scope, session_id)
        else:
            # A later ingest of this session committed first: ours is replaced by it, as if it ran before.
            self._removal.delete_ids(scope, [p.item["id"] for p in prepared], self._now(), session_id=session_id)
        return SessionWriteResult(session_id=session_id, stored=len(prepared), skipped=skipped, indexing=indexing)

    def _commit_generation(self, scope: Scope, session_id: str, generation: str, notes: Sequence[Item] = ()) -> bool:
        """Make ``generation`` the session's current one unless a later one already is (optimistic,
        bounded: Conflict when it keeps losing), writing ``notes`` with it."""
        sk = records.session_head_sk(session_id)

        def attempt() -> bool:
            head = self._table.get(scope.partition, sk)
            current = head.get("generation", "") if head else None
            if current is not None and current > generation:
                return False
            condition = Condition(exists=False) if head is None else Condition(equals={"generation": current})
            committed = Put({"pk": scope.partition, "sk": sk, "generation": generation}, condition)
            if notes:
                self._table.transact_write([committed, *(Put(note) for note in notes)])
            else:
                self._table.put(committed.item, condition)
            return True

        return retry_on_conflict(attempt, what="the session")

    def add_entry(
        self, scope: Scope, entry: MemoryEntry, session_id: str | None = None, *, ttl_seconds: int | None = None
    ) -> StoredEntry:
        if session_id is not None:
            validate_id(session_id, "session_id")
        self.ensure_writable(scope.user_ref)
        context: list[str] = []
        continues = None
        if session_id is not None:
            context, continues = self._session_tail(scope, session_id, entry.author)
        prepared = self._writer.prepare(
            scope, entry, session_id, MAX_TERMS_PER_DOCUMENT, ttl_seconds, context, continues
        )
        notes = self._sessions.notes(scope, session_id) if self._sessions is not None and session_id else []
        indexing = self._writer.write([prepared], session_id, generation="", notes=notes)
        if notes and self._sessions is not None and session_id is not None:
            self._sessions.written(scope, session_id)
        stored = records.entry_from_item(prepared.item)
        return stored.model_copy(update={"indexing": indexing}) if indexing else stored

    def _session_tail(self, scope: Scope, session_id: str, author: str | None) -> tuple[list[str], str | None]:
        """The context of an entry by ``author`` added to a session on its own, and the id of the entry it
        continues: from the session's last entries in this scope."""
        rows = self._table.query(
            scope.partition, records.session_prefix(session_id), limit=CONTEXT_ENTRIES, descending=True
        ).items
        ids = [row["sk"].rsplit("#", 1)[1] for row in rows]
        found = {
            item["id"]: item for item in self._table.batch_get([(scope.partition, records.entry_sk(i)) for i in ids])
        }
        present = [i for i in reversed(ids) if i in found]
        said = [(found[i].get("author"), records.entry_text(found[i])) for i in present]
        before = continued(said, author)
        return context_of(said, author), present[before] if before is not None else None

    # -- entries written by another service in its own transactions (the store's items) -------------

    def prepare_entry(self, scope: Scope, entry: MemoryEntry) -> PreparedEntry:
        """An entry checked against every limit, not yet embedded nor written."""
        return self._writer.prepare(scope, entry, None, MAX_TERMS_PER_DOCUMENT)

    def embed_entries(self, prepared: Sequence[PreparedEntry]) -> bool:
        """Embed prepared entries in one call; False when some has no vector."""
        return self._writer.embed(prepared)

    def entry_items(self, prepared: PreparedEntry) -> list[Item]:
        """The items that make a prepared entry: for the caller to write in one transaction, then to
        report with :meth:`entries_written`."""
        return [*side_items_of(prepared), prepared.item]

    def entries_written(self, prepared: Sequence[PreparedEntry], vectors_ok: bool) -> str | None:
        """After the entries' items are written: meter them, log them for every process's search index
        (a reader that sees the new version also finds them), and update a derived index."""
        return self._writer.written(prepared, vectors_ok)

    def replace_entry(self, scope: Scope, old: Item, entry: MemoryEntry) -> str | None:
        """Rewrite the entry item ``old`` of ``scope`` in place (same id) with ``entry``, checked and embedded,
        if ``old`` is still stored as read; raise ConditionFailed when it was deleted or changed meanwhile,
        writing nothing (the caller reads again: :func:`~agentmem.stores.retry.retry_on_conflict`)."""
        self.ensure_writable(scope.user_ref)
        return self._writer.replace(old, self._writer.prepare(scope, entry, None, MAX_TERMS_PER_DOCUMENT))

    def commit_entries(
        self,
        scope: Scope,
        prepared: Sequence[PreparedEntry],
        rewrites: Sequence[tuple[Item, Item]],
        extra: Sequence[WriteOp],
    ) -> list[StoredEntry]:
        """New entries of ``scope`` (from :meth:`prepare_entry`: checked, then embedded here), new versions
        of existing entry items (``(as read, new version)``, the same text: a change of metadata) and another
        service's ``extra`` operations, in one transaction; ConditionFailed (nothing written) when a rewritten
        item changed or an extra check fails. Return the new entries as stored."""
        self.ensure_writable(scope.user_ref)
        self._writer.commit(scope, prepared, rewrites, extra)
        return [records.entry_from_item(p.item) for p in prepared]

    def entries_rewritten(self, scope: Scope, items: Sequence[Item]) -> None:
        """After entries were written again with the same words (a new expiry): every process reads them again."""
        self._writer.rewritten(scope, items)

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
        session = filters.pinned(where, "session_id")
        if session is not None:  # an agent's history read: the session's rows name its entries
            page_size = min(limit + 1, QUERY_READ)
            partitions = [s.partition for s in scope.visible_scopes()]
            sources = [self._session_newest_first(p, session, start, page_size) for p in partitions]
        else:
            sources = [self._newest_first(s.partition, start, page_size) for s in scope.visible_scopes()]
        newest = heapq.merge(*sources, key=lambda item: str(item["sk"]), reverse=True)
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

    def _session_newest_first(
        self, partition: str, session_id: str, start: str | None, page_size: int
    ) -> Iterator[Item]:
        """The session's entries in ``partition``, newest first from before ``start``: its rows (small items,
        many to a read) name them, read ``page_size`` at a time."""
        prefix = records.session_prefix(session_id)
        keys = sorted(
            (records.entry_sk(row["sk"][len(prefix) :]) for row in query_all(self._table, partition, prefix)),
            reverse=True,
        )
        if start is not None:
            keys = [sk for sk in keys if sk < start]
        for at in range(0, len(keys), page_size):
            found = self._table.batch_get([(partition, sk) for sk in keys[at : at + page_size]])
            yield from sorted(found, key=lambda item: str(item["sk"]), reverse=True)

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

    # -- corrections (agentmem/memory/revisions.py) ---------------------------------------------------

    def update_entry(
        self,
        user: UserRef,
        entry_id: str,
        *,
        content: Content | None = None,
        metadata: Mapping[str, Any] | object | None = KEEP,
        revision: int | None = None,
        project_id: str | None = None,
    ) -> StoredEntry:
        """Correct an entry in place (same id): new content (embedded again), new metadata, or both; the
        version it replaces stays in its history. ``revision``: only if the entry is at it (409)."""
        self.ensure_writable(user)
        return self._revisions.update(
            user, entry_id, content=content, metadata=metadata, revision=revision, project_id=project_id
        )

    def entry_history(self, user: UserRef, entry_id: str, project_id: str | None = None) -> dict[str, Any]:
        """The versions of an entry, oldest first, the current one last."""
        return self._revisions.history(user, entry_id, project_id)

    # -- deletes -----------------------------------------------------------------------------------

    def delete_entry(self, user: UserRef, entry_id: str) -> None:
        self.ensure_writable(user)
        item = self._find(user, entry_id)
        self._removal.delete_items(user.scope(item.get("project_id")), [item])

    def delete_session(self, scope: Scope, session_id: str) -> int:
        validate_id(session_id, "session_id")
        self.ensure_writable(scope.user_ref)
        ids = [i for i, _ in self._session_rows(scope, session_id)]
        deleted = self._removal.delete_ids(scope, ids, self._now(), session_id=session_id)
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
        return self._removal.delete_ids(scope, ids, self._now(), where=where, words=tokens)

    def delete_project(self, user: UserRef, project_id: str) -> int:
        """Delete everything the project holds; return the number of memory entries deleted.

        The project stays in the user's scope registry: a write racing this delete may still land in
        the partition, and only a registered partition is reached by erasure and export."""
        scope = user.scope(project_id)
        if scope.project_id is None:
            raise InvalidInput("project_id is required", code="invalid_id")
        self.ensure_writable(user)
        return self._removal.delete_project(scope)

    def _session_rows(self, scope: Scope, session_id: str) -> list[tuple[str, str]]:
        """(entry id, generation) of every entry the session holds in this scope."""
        prefix = records.session_prefix(session_id)
        rows = query_all(self._table, scope.partition, prefix)
        return [(item["sk"][len(prefix) :], item.get("generation") or "") for item in rows]

    def purge_expired(self, items: Sequence[Item], *, already_deleted: bool = False) -> int:
        """Remove expired entries and everything that points at them: id pointer, session row, bound row,
        the change log's record, vector. The local sweep calls this; the stream indexer calls it with
        ``already_deleted`` for the entries DynamoDB TTL deleted. Safe to repeat."""
        return self._removal.purge_expired(items, already_deleted=already_deleted)

    def entries_removed(self, scope: Scope, items: Sequence[Item]) -> None:
        """After entries were deleted (with what points at them): log the deletes for every process's
        search index, and remove them from a derived one."""
        self._removal.removed(scope, items)

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
