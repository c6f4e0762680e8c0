"""The table's own search index: exact cosine search and BM25 over each partition's entries, held in
process (agentmem/search/partition.py) and caught up from the partition's change log.

The vectors and words live on the entry items (written by MemoryService), so this index writes nothing.
A search reads the partition's statistics item (one small read); when another process wrote since, the
log rows of those writes and the entries they changed (agentmem/search/changes.py); and only when the
partition is new to this process, or too far behind, or was emptied and refilled (a new epoch), the
partition's entries. What a warm search reads does not grow with the partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from agentmem.embeddings.codec import MODEL_ATTR, VECTOR_ATTR
from agentmem.errors import ConditionFailed
from agentmem.keys import Scope, UserRef
from agentmem.memory import records
from agentmem.memory.filters import Node, compile_filter, without_live
from agentmem.observability import logger
from agentmem.search import changes
from agentmem.search.changes import HeldPartitions, Stats
from agentmem.search.inverted_index import Ranking
from agentmem.search.partition import PartitionIndex, bm25
from agentmem.search.snapshots import SNAPSHOT_LAG, SnapshotStore
from agentmem.stores.table import Condition, Table, query_all
from agentmem.users import registered_scopes
from agentmem.vectors.port import VectorHit, VectorRecord

ENTRY_PAGE = 1000
MAX_ENTRIES = 20_000
"""The most entries a scope holds on the table backend. Its search holds the scope's whole index in the
process: 5.4 KB an entry with 1,024-dimension vectors (measured), so 20,000 entries take about 108 MB of
the 512 MB a 1,024 MB API function gives its held indexes, and four of the largest users fit in one
container. Past it, deploy with OpenSearch (docs/deploy.md)."""


def nearest_hits(
    indexes: Iterable[tuple[Scope, PartitionIndex]],
    vector: Sequence[float],
    top_k: int,
    model_id: str,
    where: Node | None,
) -> list[VectorHit]:
    """Each index's ``top_k`` entries matching ``where`` nearest ``vector`` (unsorted across indexes): the filter
    is evaluated over the held rows before the product, expiry read from the few rows that have one, and other
    models' vectors are never compared."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    rest, now = without_live(where)
    predicate = compile_filter(rest) if rest is not None else None
    hits: list[VectorHit] = []
    for scope, index in indexes:
        for position, cosine in index.nearest(query, model_id, top_k, index.live_mask(now or ""), predicate):
            builtins = index.rows[position][0]  # type: ignore[index]
            hits.append(
                VectorHit(
                    scope,
                    index.ids[position] or "",
                    max(0.0, min(1.0, cosine)),
                    author=builtins.get("author"),
                    timestamp=builtins.get("timestamp"),
                    told=builtins.get(records.TOLD),
                )
            )
    return hits


class ExactVectorIndex:
    name = "exact"
    derived = False
    """The vectors are the table's own, not a copy: a rebuild must not delete them."""
    visibility_seconds = 0
    filters_keyword = True

    def __init__(
        self,
        table: Table,
        *,
        snapshots: SnapshotStore | None = None,
        ask: Callable[[str], None] | None = None,
        max_entries: int | None = MAX_ENTRIES,
    ) -> None:
        """``snapshots``: where a partition not held here is started from (agentmem/search/snapshots.py);
        ``ask(partition)``: ask for its snapshot to be written, after a load that had to read it whole or
        catch up :data:`SNAPSHOT_LAG` writes past its snapshot."""
        self._table = table
        self.max_entries = max_entries
        self._snapshots = snapshots
        self._ask = ask
        self._held: HeldPartitions[PartitionIndex] = HeldPartitions(
            table,
            changes.MEMORY,
            load=self._load,
            read=self._read,
            apply=lambda index, changed, present, _: index.apply(changed, present),  # type: ignore[arg-type]
            caught=lambda index: index.place,
            size=lambda index: index.nbytes,
            start=self._from_snapshot if snapshots is not None else None,
        )

    # -- writes: the entries carry what is searched; readers catch up from the change log ---------------

    def upsert(self, records_: Sequence[VectorRecord]) -> None:
        """Nothing to do: the entries hold their vectors, and their write is logged."""

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None:
        """Nothing to do: the entries are gone, and their delete is logged."""

    # -- the partitions held in process --------------------------------------------------------------

    def held(self, partition: str) -> PartitionIndex:
        """The partition as of its current version: caught up from the log, or read whole."""
        return self._held.get(partition)

    def _load(self, partition: str, current: Stats) -> PartitionIndex:
        entries = query_all(self._table, partition, records.ENTRY, page_size=ENTRY_PAGE)
        index = PartitionIndex.of(current.epoch, current.version, entries)
        if self._ask is not None and len(index):
            self._ask(partition)
        return index

    def _from_snapshot(self, partition: str, current: Stats) -> PartitionIndex | None:
        """The partition's snapshot, at its place in the log (the caller catches it up), when it is of the
        partition's current epoch; None to read the partition whole."""
        from agentmem.search.snapshot import SnapshotError, decode

        assert self._snapshots is not None
        if current.epoch is None:
            return None
        data = self._snapshots.get(partition)
        if data is None:
            return None
        try:
            index = decode(data)
        except SnapshotError as error:
            logger.warning("unreadable snapshot; reading the partition", extra={"error": str(error)})
            return None
        if index.place.epoch != current.epoch or index.place.version > current.version:
            return None
        if self._ask is not None and current.version - index.place.version >= SNAPSHOT_LAG:
            self._ask(partition)
        return index

    def snapshot(self, partition: str) -> tuple[bytes, str | None, int]:
        """The partition, brought to its current version, as a snapshot; with its (epoch, version)."""
        from agentmem.search.snapshot import encode

        index = self.held(partition)
        with self._held.steady():
            return encode(index, time.time()), index.place.epoch, index.place.version

    def _read(self, partition: str, entry_ids: Sequence[str]) -> list[dict[str, object]]:
        return self._table.batch_get([(partition, records.entry_sk(entry_id)) for entry_id in entry_ids])

    # -- search --------------------------------------------------------------------------------------

    def search(
        self,
        scopes: Sequence[Scope],
        vector: Sequence[float],
        top_k: int,
        model_id: str,
        where: Node | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` entries of ``scopes`` matching ``where`` most similar to ``vector``; other models'
        vectors are never compared."""
        hits = nearest_hits(((scope, self.held(scope.partition)) for scope in scopes), vector, top_k, model_id, where)
        hits.sort(key=lambda h: (h.score, h.entry_id), reverse=True)
        return hits[:top_k]

    def keyword(
        self,
        scopes: Sequence[Scope],
        words: Sequence[str],
        now: str,
        *,
        contextual: bool = False,
        where: Node | None = None,
    ) -> Ranking:
        """BM25 over the held partitions; ``where`` is evaluated over the held rows (no entry is read)."""
        rest, _ = without_live(where)  # expiry: the live mask at ``now``
        predicate = compile_filter(rest) if rest is not None else None
        held = [(s.partition, self.held(s.partition)) for s in scopes]
        return bm25(held, words, now, contextual=contextual, predicate=predicate)

    def documents_with_all(self, scope: Scope, words: Sequence[str], now: str) -> set[str]:
        return self.held(scope.partition).with_all(words, now)

    def other_models(self, scopes: Sequence[Scope], model_id: str) -> list[str]:
        """Model ids other than ``model_id`` whose vectors the scopes hold (they are left out of searches)."""
        found: set[str] = set()
        for scope in scopes:
            found.update(self.held(scope.partition).models - {model_id})
        return sorted(found)

    # -- per user ------------------------------------------------------------------------------------

    def delete_user(self, user: UserRef) -> int:
        """Strip the vector from every entry the user still has (erasure deletes the entries themselves)."""
        removed = 0
        for scope in registered_scopes(self._table, user):
            stripped: list[str] = []
            for item in query_all(self._table, scope.partition, records.ENTRY):
                if VECTOR_ATTR not in item:
                    continue
                bare = {k: v for k, v in item.items() if k not in (VECTOR_ATTR, MODEL_ATTR)}
                try:  # only while the entry exists: never resurrect one that erasure just deleted
                    self._table.put(bare, Condition(exists=True))
                except ConditionFailed:
                    continue
                stripped.append(item["id"])
            if stripped:  # an emptied partition gets no new statistics
                changes.MEMORY.record(self._table, scope.partition, stripped, create=False)
            removed += len(stripped)
        return removed

    def count_user(self, user: UserRef) -> int:
        total = 0
        for scope in registered_scopes(self._table, user):
            total += sum(1 for item in query_all(self._table, scope.partition, records.ENTRY) if VECTOR_ATTR in item)
        return total

    def health(self) -> str:
        return "ok"
