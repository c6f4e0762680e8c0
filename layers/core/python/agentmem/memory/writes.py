"""Writing memory entries: each checked against every limit, embedded, stored with what points at it, and
announced to every process's search index.

Write order makes every acknowledged write durable and findable: the session index, the id pointer and
the scope registry are written first, then the entry items (which carry their words and vector), then
the partition's change log (agentmem/search/changes.py), from which every process's search index
learns what changed. A crash in between leaves rows that point at nothing, which reads skip, or entries
that caught-up processes do not know until they read the partition again (the write was not
acknowledged).

With an embedder, each entry is embedded once (one batch per write) and its vector and model id are
stored on the entry item itself, so the vector index can be rebuilt without re-embedding. When the
embedder or the vector index cannot be reached, the entry is still stored (marked ``vector_pending``)
and the write reports ``indexing: "pending"``. An entry written in answer to another author keeps the
end of the entries before it, for its vector and its words (agentmem/search/context.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from agentmem import held_items, users
from agentmem.clock import format_timestamp, new_id
from agentmem.embeddings.codec import MODEL_ATTR, PENDING_ATTR, VECTOR_ATTR, encode_vector
from agentmem.errors import InvalidInput, MemoryFull, ModelShareUsed, PayloadTooLarge
from agentmem.keys import Scope
from agentmem.memory import records
from agentmem.memory.search import MemorySearch
from agentmem.models.memory import MAX_ENTRY_BYTES, MAX_TEXT_BYTES, MemoryEntry
from agentmem.observability import logger
from agentmem.search import changes, told
from agentmem.search.context import CONTEXT_TERMS, context_terms
from agentmem.search.inverted_index import index_terms
from agentmem.search.tokenize import tokenize
from agentmem.stores.table import TTL_ATTRIBUTE, Item, Put, Table, WriteOp, check_items
from agentmem.tenancy import metering
from agentmem.vectors.indexing import record_for_item

PENDING: str = "pending"


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


class SessionWatch(Protocol):
    """Another service's interest in writes into sessions (extraction's: agentmem/extraction/service.py)."""

    def notes(self, scope: Scope, session: str) -> list[Item]:
        """Items to write with a write into ``session`` (in its batch), or none."""
        ...

    def written(self, scope: Scope, session: str) -> None:
        """A write into ``session`` (with its notes) was stored."""
        ...


class EntryWriter:
    """Writes entries into the table and tells the search indexes (``search``'s embedder and vector
    index, read at each write: the service may swap them)."""

    def __init__(self, table: Table, clock: Callable[[], datetime], search: MemorySearch) -> None:
        self._table = table
        self._clock = clock
        self._search = search

    def prepare(
        self,
        scope: Scope,
        entry: MemoryEntry,
        session_id: str | None,
        max_terms: int,
        ttl_seconds: int | None = None,
        context: Sequence[str] = (),
        continues: str | None = None,
    ) -> PreparedEntry:
        """Build the entry item and check it against every limit (nothing is written before all pass);
        ``context`` and ``continues``: what it keeps of the entries before it in its session and the id of
        the entry it continues (:mod:`agentmem.search.context`)."""
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
            continues=continues,
            told=told.stored(text, moment.astimezone(UTC).date()),
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

    def embed(self, prepared: Sequence[PreparedEntry]) -> bool:
        """Put the vector and model id on each entry item (one batch); False when some entry has none.

        When the embedder refuses a text (InvalidInput), the others are embedded one by one and only the
        refused ones are stored ``vector_pending``; when it fails otherwise (down), all of them are."""
        embedder = self._search.embedder
        if embedder is None or not prepared:
            return True
        texts = [records.embedding_text(p.item) for p in prepared]
        try:
            vectors: list[list[float] | None] = list(embedder.embed(texts))
            metering.count_embedded(texts)
            if len(vectors) != len(prepared):
                raise ValueError("the embedder returned a different number of vectors")
        except InvalidInput:
            vectors = [self._embed_alone(text) for text in texts] if len(texts) > 1 else [None]
        except ModelShareUsed:  # the tenant's share of the model this minute: refused, nothing stored (429)
            raise
        except Exception as error:  # any embedder failure: store the entries anyway, embed them later
            logger.warning("embedding failed; entries stored as pending", extra={"error": type(error).__name__})
            vectors = [None] * len(prepared)
        for p, vector in zip(prepared, vectors, strict=True):
            if vector is None:
                p.item[PENDING_ATTR] = True
            else:
                p.item[VECTOR_ATTR] = encode_vector(vector)
                p.item[MODEL_ATTR] = embedder.model_id
        return all(vector is not None for vector in vectors)

    def _embed_alone(self, text: str) -> list[float] | None:
        assert self._search.embedder is not None
        try:
            vector = self._search.embedder.embed([text])[0]
            metering.count_embedded([text])
            return vector
        except Exception as error:
            logger.warning(
                "embedding refused one entry; it is stored as pending", extra={"error": type(error).__name__}
            )
            return None

    def write(
        self,
        prepared: Sequence[PreparedEntry],
        session_id: str | None,
        generation: str,
        notes: Sequence[Item] = (),
        replaces: Callable[[], int] | None = None,
    ) -> str | None:
        """Embed and store entries of one scope with what points at them (and ``notes``, another service's
        items written first with them); ``pending`` when some vector or the derived index could not be written
        (the entries are stored all the same). ``replaces()``: how many entries the write removes once stored
        (a session's older ones), asked only near the index's :attr:`~VectorIndex.max_entries`."""
        if not prepared:
            return None
        self._refuse_past_limit(prepared[0].scope, len(prepared), replaces)
        vectors_ok = self.embed(prepared)
        scope = prepared[0].scope
        written_ms = int(self._clock().timestamp() * 1000)
        side_items: list[Item] = [users.registry_item(scope), *notes]
        for p in prepared:
            side_items.extend(side_items_of(p, session_id, generation, written_ms))
        entries = [p.item for p in prepared]
        check_items([*side_items, *entries])  # a rejected write must leave nothing behind
        if self._table.batches_in_order:  # one commit, still in this order
            self._table.batch_write(puts=[*side_items, *entries])
        else:
            self._table.batch_write(puts=side_items)
            self._table.batch_write(puts=entries)
        held_items.note((entry["pk"], entry["sk"]) for entry in entries)  # an Idempotency-Key answer holds them
        return self.written(prepared, vectors_ok)

    def _refuse_past_limit(self, scope: Scope, adding: int, replaces: Callable[[], int] | None) -> None:
        """MemoryFull when the scope would hold more entries than its index searches (the count the
        partition's log keeps, one small read; two writes racing at the limit may both pass it)."""
        limit = self._search.vector_index.max_entries
        if limit is None:
            return
        held = changes.MEMORY.stats(self._table, scope.partition).docs
        if held + adding > limit and held + adding - (replaces() if replaces else 0) > limit:
            raise MemoryFull(
                f"this memory holds {held:,} entries and the write adds {adding:,}: the table search backend "
                f"serves up to {limit:,} per user (and project). Delete some, or deploy with "
                "search_backend=opensearch (docs/deploy.md)"
            )

    def written(self, prepared: Sequence[PreparedEntry], vectors_ok: bool) -> str | None:
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

    def replace(
        self, old: Item, prepared: PreparedEntry, *, extra: Sequence[Item] = (), embed: bool = True
    ) -> str | None:
        """Write ``prepared`` under the id of the entry item ``old``, if ``old`` is still stored as it was read:
        raise ConditionFailed when it was deleted or changed meanwhile (nothing is written: a delete that
        answered stays answered), with ``extra`` items in the same transaction.
        ``embed``: False keeps the vector ``prepared`` carries (its words are unchanged). Then log the old
        version removed and the new one written."""
        scope = prepared.scope
        prepared.item.update(id=old["id"], sk=old["sk"])
        vectors_ok = self.embed([prepared]) if embed else not prepared.item.get(PENDING_ATTR)
        side = [users.registry_item(scope), *side_items_of(prepared), *extra]
        check_items([*side, prepared.item])
        self._table.transact_write([*(Put(item) for item in side), Put(prepared.item, records.unchanged(old))])
        held_items.note([(old["pk"], old["sk"])])
        changes.MEMORY.record(
            self._table,
            scope.partition,
            [old["id"]],
            length=prepared.length - int(old.get("length", 0)),
            context_length=prepared.context_length - int(old.get("context_length", 0)),
            create=False,
        )
        return self._upsert_vectors([prepared.item], vectors_ok)

    def commit(
        self,
        scope: Scope,
        prepared: Sequence[PreparedEntry],
        rewrites: Sequence[tuple[Item, Item]],
        extra: Sequence[WriteOp],
    ) -> str | None:
        """Write new entries (with what points at them), rewrite existing entry items (each ``(as read, new
        version)``, the same words: only held if still stored as read) and ``extra`` (another service's items
        and checks) in one transaction: all of it lands or none (ConditionFailed). Then log both kinds of
        change for every process's search index. MemoryFull (nothing written) when the new entries would take the
        scope past the entries its index serves, as any other write."""
        if prepared:
            self._refuse_past_limit(scope, len(prepared), None)
        vectors_ok = self.embed(prepared)
        side: list[Item] = [users.registry_item(scope)]
        for p in prepared:
            side.extend(side_items_of(p))
        check_items([*side, *(p.item for p in prepared), *(new for _, new in rewrites)])
        ops: list[WriteOp] = [Put(item) for item in side]
        ops += [Put(p.item) for p in prepared]
        ops += [Put(new, records.unchanged(old)) for old, new in rewrites]
        self._table.transact_write([*ops, *extra])
        held_items.note((p.item["pk"], p.item["sk"]) for p in prepared)
        if rewrites:
            changes.MEMORY.record(self._table, scope.partition, [new["id"] for _, new in rewrites], create=False)
        return self.written(prepared, vectors_ok) if prepared else None

    def rewritten(self, scope: Scope, items: Sequence[Item]) -> None:
        """After entries were written again with the same words (a new expiry): every process reads them again."""
        changes.MEMORY.record(self._table, scope.partition, [item["id"] for item in items], create=False)
        self._upsert_vectors(items, vectors_ok=True)

    def _upsert_vectors(self, items: Sequence[Item], vectors_ok: bool) -> str | None:
        """Update a derived search index in the request (read-your-writes: the entries' vectors and words);
        ``pending`` when that was not possible, or when some entry has no vector yet."""
        index = self._search.vector_index
        if not index.derived:  # the table's own index: the change log is the update
            return None if vectors_ok else PENDING
        upserts = [r for r in (record_for_item(item) for item in items) if r is not None]
        try:
            if upserts:
                index.upsert(upserts)
        except Exception as error:  # the table holds the entries; the stream indexer or `reindex` catches up
            logger.warning("search index upsert failed; indexing pending", extra={"error": type(error).__name__})
            return PENDING
        return None if vectors_ok else PENDING


def side_items_of(
    p: PreparedEntry, session_id: str | None = None, generation: str = "", written_ms: int | None = None
) -> list[Item]:
    """What points at an entry: its id pointer, and its session row (with when it was written); they expire
    with it (DynamoDB TTL too)."""
    own = [records.pointer_item(p.scope, p.item["id"])]
    if session_id is not None:
        own.append(records.session_index_item(p.scope, session_id, p.item["id"], generation, written_ms))
    if TTL_ATTRIBUTE in p.item:
        own = [{**item, TTL_ATTRIBUTE: p.item[TTL_ATTRIBUTE]} for item in own]
    return own
