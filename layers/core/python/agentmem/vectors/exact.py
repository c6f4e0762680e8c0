"""Exact cosine search over the vectors kept on the entry items of the table (numpy, imported lazily).

The vectors live on the entries (attributes ``vector`` and ``model``, written by MemoryService), so
this index writes nothing: ``upsert`` and ``delete`` only drop the in-process cache. A search reads the
partitions of the scope (global + project). Decoding 10k vectors from items takes far longer than the
matrix product, so the decoded matrix of each partition is cached in-process, keyed by

- the partition's keyword-index ``version`` (the ``MSTATS`` item, incremented on every write and
  delete of entries), and
- the sort key of the partition's newest entry,

so a warm search reads two small items and does one matrix product. MemoryService moves the version
after the entries are written or deleted, so a reader that sees a version sees its entries. The
second part of the key makes the cache safe when a partition is emptied and refilled (its stats item
is deleted and the version counts up from 0 again): the newest entry is then a different entry, and
entry ids (ULIDs) never repeat.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentmem.embeddings.codec import MODEL_ATTR, VECTOR_ATTR
from agentmem.errors import ConditionFailed
from agentmem.keys import Scope, UserRef
from agentmem.memory import records
from agentmem.memory.filters import Node, compile_filter, without_live
from agentmem.search.inverted_index import InvertedIndex
from agentmem.stores.table import Condition, Table, query_all
from agentmem.users import registered_scopes
from agentmem.vectors.port import VectorHit, VectorRecord

_MAX_CACHED_PARTITIONS = 256


def _record_row(record: VectorRecord) -> Row:
    builtins = {
        "author": record.author,
        "session_id": record.session_id,
        "timestamp": record.timestamp,
        records.EXPIRES_AT: record.expires_at,
    }
    return builtins, dict(record.metadata)


def bump_version(table: Table, partition: str) -> None:
    """Tell every process's cache that the partition's vectors changed without an entry write or delete."""
    table.increment(partition, InvertedIndex(table, records.INDEX_NAMESPACE).stats_sk, {"version": 1})


Row = tuple[dict[str, Any], dict[str, Any]]
"""What a filter reads of one entry: its built-in fields and its metadata."""


@dataclass(frozen=True, slots=True)
class _Vectors:
    ids: list[str]
    matrix: Any
    """float32 matrix of the entries' unit vectors, one row per id"""
    rows: list[Row]
    expiring: list[int] = field(init=False)
    """The positions of the rows that carry an ``expires_at`` (most carry none)."""

    def __post_init__(self) -> None:
        expiring = [i for i, (builtins, _) in enumerate(self.rows) if builtins.get(records.EXPIRES_AT) is not None]
        object.__setattr__(self, "expiring", expiring)


@dataclass(frozen=True, slots=True)
class _Matrix:
    key: tuple[int, str]
    by_model: dict[str, _Vectors]


class ExactVectorIndex:
    name = "exact"
    derived = False
    """The vectors are the table's own, not a copy: a rebuild must not delete them."""
    visibility_seconds = 0

    def __init__(self, table: Table) -> None:
        self._table = table
        self._stats = InvertedIndex(table, records.INDEX_NAMESPACE)
        self._cache: OrderedDict[str, _Matrix] = OrderedDict()
        self._lock = threading.Lock()

    # -- writes: the vectors are on the entries already ----------------------------------------------

    def upsert(self, records_: Sequence[VectorRecord]) -> None:
        """Called after MemoryService wrote these entries: patch the cached matrix instead of re-reading it."""
        by_partition: dict[str, list[VectorRecord]] = {}
        for record in records_:
            by_partition.setdefault(record.scope.partition, []).append(record)
        for partition, changed in by_partition.items():
            self._patch(partition, {r.entry_id for r in changed}, changed)

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None:
        self._patch(scope.partition, set(entry_ids), [])

    def _patch(self, partition: str, removed: set[str], added: Sequence[VectorRecord]) -> None:
        """Apply one write to the cached matrix when it is the only change since the cache was built.

        The write moved the partition version by exactly one; if the version moved by anything else,
        another writer was involved and the cache is dropped (the next search re-reads the partition).
        """
        with self._lock:
            cached = self._cache.get(partition)
        if cached is None:
            return
        key = self._cache_key(partition)
        if key[0] != cached.key[0] + 1:
            self._forget({partition})
            return
        import numpy as np

        by_model: dict[str, _Vectors] = {}
        for model, held in cached.by_model.items():
            keep = [i for i, entry_id in enumerate(held.ids) if entry_id not in removed]
            if len(keep) == len(held.ids):
                by_model[model] = held
            else:
                by_model[model] = _Vectors([held.ids[i] for i in keep], held.matrix[keep], [held.rows[i] for i in keep])
        for record in added:
            current = by_model.get(record.model_id)
            row = np.asarray(record.vector, dtype="<f4").reshape(1, -1)
            if current is not None and current.matrix.shape[1] != row.shape[1]:
                self._forget({partition})
                return
            fields = _record_row(record)
            by_model[record.model_id] = (
                _Vectors([record.entry_id], row, [fields])
                if current is None
                else _Vectors(
                    [*current.ids, record.entry_id], np.vstack([current.matrix, row]), [*current.rows, fields]
                )
            )
        with self._lock:
            if self._cache.get(partition) is cached:
                self._cache[partition] = _Matrix(key=key, by_model={m: v for m, v in by_model.items() if v.ids})

    def _forget(self, partitions: set[str]) -> None:
        with self._lock:
            for partition in partitions:
                self._cache.pop(partition, None)

    # -- search --------------------------------------------------------------------------------------

    def _cache_key(self, partition: str) -> tuple[int, str]:
        version = self._stats.version(partition)
        newest = self._table.query(partition, records.ENTRY, limit=1, descending=True).items
        return version, newest[0]["sk"] if newest else ""

    def _matrix(self, partition: str) -> _Matrix:
        key = self._cache_key(partition)
        with self._lock:
            cached = self._cache.get(partition)
            if cached is not None and cached.key == key:
                self._cache.move_to_end(partition)
                return cached
        import numpy as np

        grouped: dict[str, tuple[list[str], list[bytes], list[Row]]] = {}
        for item in query_all(self._table, partition, records.ENTRY, page_size=1000):
            data = item.get(VECTOR_ATTR)
            model = item.get(MODEL_ATTR)
            if isinstance(data, bytes) and isinstance(model, str):
                ids, blobs, rows = grouped.setdefault(model, ([], [], []))
                ids.append(item["id"])
                blobs.append(data)
                rows.append((records.entry_builtins(item), records.entry_metadata(item)))
        by_model: dict[str, _Vectors] = {}
        for model, (ids, blobs, rows) in grouped.items():
            sizes = {len(b) for b in blobs}
            if len(sizes) != 1:  # one model id, one dimension; anything else is corrupt, skip it
                continue
            matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
            by_model[model] = _Vectors(ids, matrix, rows)
        built = _Matrix(key=key, by_model=by_model)
        with self._lock:
            self._cache[partition] = built
            self._cache.move_to_end(partition)
            while len(self._cache) > _MAX_CACHED_PARTITIONS:
                self._cache.popitem(last=False)
        return built

    def search(
        self,
        scopes: Sequence[Scope],
        vector: Sequence[float],
        top_k: int,
        model_id: str,
        where: Node | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` entries of ``scopes`` matching ``where`` most similar to ``vector``; other models'
        vectors are never compared. The filter is evaluated over the cached rows before the product."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32)
        rest, now = without_live(where)  # expiry is read from the few rows that have one, not per row
        predicate = compile_filter(rest) if rest is not None else None
        hits: list[VectorHit] = []
        for scope in scopes:
            held = self._matrix(scope.partition).by_model.get(model_id)
            if held is None or held.matrix.shape[1] != query.shape[0]:
                continue
            ids, matrix = held.ids, held.matrix
            expired = set() if now is None else {i for i in held.expiring if held.rows[i][0][records.EXPIRES_AT] <= now}
            if predicate is not None or expired:
                keep = [
                    i
                    for i, (builtins, metadata) in enumerate(held.rows)
                    if i not in expired and (predicate is None or predicate(builtins, metadata))
                ]
                if not keep:
                    continue
                ids, matrix = [ids[i] for i in keep], matrix[keep]
            scores = matrix @ query
            count = min(top_k, len(ids))
            best = np.argpartition(-scores, count - 1)[:count] if count < len(ids) else np.arange(len(ids))
            rows = held.rows if len(ids) == len(held.ids) else [held.rows[i] for i in keep]
            hits.extend(
                VectorHit(
                    scope,
                    ids[i],
                    max(0.0, min(1.0, float(scores[i]))),
                    author=rows[i][0].get("author"),
                    timestamp=rows[i][0].get("timestamp"),
                )
                for i in best
            )
        hits.sort(key=lambda h: (h.score, h.entry_id), reverse=True)
        return hits[:top_k]

    def other_models(self, scopes: Sequence[Scope], model_id: str) -> list[str]:
        """Model ids other than ``model_id`` whose vectors the scopes hold (they are left out of searches)."""
        found: set[str] = set()
        for scope in scopes:
            found.update(m for m in self._matrix(scope.partition).by_model if m != model_id)
        return sorted(found)

    # -- per user ------------------------------------------------------------------------------------

    def delete_user(self, user: UserRef) -> int:
        """Strip the vector from every entry the user still has (erasure deletes the entries themselves)."""
        removed = 0
        scopes = registered_scopes(self._table, user)
        for scope in scopes:
            stripped_here = 0
            for item in query_all(self._table, scope.partition, records.ENTRY):
                if VECTOR_ATTR not in item:
                    continue
                stripped = {k: v for k, v in item.items() if k not in (VECTOR_ATTR, MODEL_ATTR)}
                try:  # only while the entry exists: never resurrect one that erasure just deleted
                    self._table.put(stripped, Condition(exists=True))
                except ConditionFailed:
                    continue
                stripped_here += 1
            if stripped_here:  # an emptied partition gets no new stats item
                bump_version(self._table, scope.partition)
            removed += stripped_here
        self._forget({s.partition for s in scopes})
        return removed

    def count_user(self, user: UserRef) -> int:
        total = 0
        for scope in registered_scopes(self._table, user):
            total += sum(1 for item in query_all(self._table, scope.partition, records.ENTRY) if VECTOR_ATTR in item)
        return total

    def health(self) -> str:
        return "ok"
