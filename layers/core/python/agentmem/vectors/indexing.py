"""Keeping a derived vector index (OpenSearch) in step with the table: stream records, reindex, pending vectors.

The table is the source of truth. An entry item carries its vector (``vector``, float32 bytes) and the
model id (``model``); an entry stored while the embedder was down carries ``vector_pending`` instead.
Both the DynamoDB stream indexer and ``agentmem reindex`` use these functions:

- :func:`record_for_item` turns an entry item into a :class:`VectorRecord` (no embedding);
- :func:`embed_pending` embeds entries that have no vector yet (or, with ``re_embed``, vectors of
  another model) and writes the vectors back onto the entries, only if the entry still exists;
- :func:`reindex` rebuilds the index of one user, or of every user, from the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from agentmem.embeddings.codec import MODEL_ATTR, PENDING_ATTR, VECTOR_ATTR, decode_vector, encode_vector
from agentmem.embeddings.port import Embedder
from agentmem.errors import ConditionFailed
from agentmem.keys import Scope, UserRef, scope_of_partition, unescape, user_of_partition
from agentmem.memory import records
from agentmem.search import changes
from agentmem.stores.table import Item, Table, query_all
from agentmem.tenancy import metering
from agentmem.users import SCOPE_REGISTRY, registered_scopes
from agentmem.vectors.port import VectorIndex, VectorRecord

_BATCH = 100


def is_entry(item: Item) -> bool:
    return str(item.get("sk", "")).startswith(records.ENTRY) and scope_of_partition(str(item.get("pk", ""))) is not None


def record_for_item(item: Item) -> VectorRecord | None:
    """The index record of an entry item (its vector None until it is embedded); None for other items."""
    scope = scope_of_partition(item["pk"])
    if scope is None:
        return None
    data = item.get(VECTOR_ATTR)
    model = item.get(MODEL_ATTR)
    embedded = isinstance(data, bytes) and isinstance(model, str)
    terms, context_terms = records.entry_terms(item)
    return VectorRecord(
        scope=scope,
        entry_id=item["id"],
        vector=decode_vector(data) if embedded and isinstance(data, bytes) else None,
        model_id=model if embedded else None,
        session_id=item.get("session_id"),
        author=item.get("author"),
        timestamp=item.get("timestamp"),
        metadata=records.entry_metadata(item),
        expires_at=item.get(records.EXPIRES_AT),
        terms=terms,
        context_terms=context_terms,
        length=int(item.get("length") or 0),
        context_length=int(item.get(records.CONTEXT_LENGTH) or 0),
        told=item.get(records.TOLD),
    )


def needs_embedding(item: Item, model_id: str, *, re_embed: bool = False) -> bool:
    if not isinstance(item.get(VECTOR_ATTR), bytes):
        return True
    return re_embed and item.get(MODEL_ATTR) != model_id


def embed_pending(table: Table, embedder: Embedder, items: Sequence[Item]) -> list[Item]:
    """Embed ``items`` in one batch and store their vectors; return the items that were updated.

    Each write is conditional on the entry still being stored as read, so a concurrent delete or rewrite
    is never undone.
    """
    if not items:
        return []
    texts = [records.embedding_text(item) for item in items]
    vectors = embedder.embed(texts)
    metering.count_embedded(texts)
    updated: list[Item] = []
    for item, vector in zip(items, vectors, strict=True):
        new = {k: v for k, v in item.items() if k != PENDING_ATTR}
        new[VECTOR_ATTR] = encode_vector(vector)
        new[MODEL_ATTR] = embedder.model_id
        try:
            table.put(new, records.unchanged(item))
        except ConditionFailed:
            continue
        updated.append(new)
    for partition in sorted({item["pk"] for item in updated}):
        # Every process's search index must see the new vectors (the entries exist: never create stats).
        changes.MEMORY.record(table, partition, [i["id"] for i in updated if i["pk"] == partition], create=False)
    return updated


def all_scopes(table: Table) -> Iterator[Scope]:
    """Every scope any user has written to, from the per-user scope registry (an admin scan)."""
    scan = getattr(table, "scan_keys", None)
    if not callable(scan):
        raise TypeError(f"{type(table).__name__} cannot list every user; reindex one user at a time")
    for pk, sk in scan(SCOPE_REGISTRY):
        user = user_of_partition(pk)
        if user is not None:
            yield Scope(user.app, user.user, unescape(sk[len(SCOPE_REGISTRY) :]) or None)


@dataclass
class ReindexReport:
    scopes: int = 0
    entries: int = 0
    indexed: int = 0
    embedded: int = 0
    removed: int = 0


def reindex(
    table: Table,
    index: VectorIndex,
    embedder: Embedder | None,
    *,
    user: UserRef | None = None,
    re_embed: bool = False,
) -> ReindexReport:
    """Rebuild ``index`` from the table for one user (first removing the user's vectors) or for everyone.

    Vectors already on the entries are reused, never recomputed; entries without one (stored while the
    embedder was down) are embedded now when an embedder is given, and so are entries of another model
    with ``re_embed``.
    """
    report = ReindexReport()
    scopes: Iterable[Scope]
    if user is not None:
        if index.derived:  # never strip the table's own vectors (exact backend)
            report.removed = index.delete_user(user)
        scopes = registered_scopes(table, user)
    else:
        scopes = all_scopes(table)
    for scope in scopes:
        report.scopes += 1
        items = query_all(table, scope.partition, records.ENTRY)
        report.entries += len(items)
        for start in range(0, len(items), _BATCH):
            batch = items[start : start + _BATCH]
            if embedder is not None:
                todo = [i for i in batch if needs_embedding(i, embedder.model_id, re_embed=re_embed)]
                done = {i["id"]: i for i in embed_pending(table, embedder, todo)}
                report.embedded += len(done)
                batch = [done.get(i["id"], i) for i in batch]
            upserts = [r for r in map(record_for_item, batch) if r is not None]
            if upserts:
                index.upsert(upserts)
                report.indexed += len(upserts)
    return report
