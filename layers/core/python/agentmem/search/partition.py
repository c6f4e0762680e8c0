"""One partition's memory entries held in process, as searches read them: each entry's vectors, the fields
a filter reads, and the words keyword search ranks by (BM25 over an inverted index in memory).

Built from the partition's entry items once, then kept up to date one changed entry at a time
(:meth:`PartitionIndex.apply`, fed by the partition's change log: agentmem/search/changes.py), so a
search reads no postings from the table at all. numpy is imported on first use.

An entry's words are stored on its item as ``terms`` (``word:tf`` for its own words) and
``context_terms`` (``word:cf`` for the words of the entries before it that it is found by:
agentmem/search/context.py); an entry written before they were stored has its words counted again from
its text and context, by the same functions that count them on a write. The index holds them by their
stems, and looks a query's words up by theirs (agentmem/search/stemming.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmem.embeddings.codec import MODEL_ATTR, VECTOR_ATTR, vector_array
from agentmem.memory import records
from agentmem.search.changes import Caught
from agentmem.search.context import OWN_WEIGHT
from agentmem.search.inverted_index import K1, B, Hit, Ranking
from agentmem.search.stemming import query_stems

MAX_HITS = 1000
"""Keyword hits a ranking keeps, best first (a search reads at most this far down: memory/search.py)."""

ENTRY_BYTES = 600
POSTING_BYTES = 32
WORD_BYTES = 350
"""What Python objects take per entry (its id, its row of filter fields), per posting (a position and a
count in two lists) and per word of the inverted index: :attr:`PartitionIndex.nbytes`."""

Row = tuple[dict[str, Any], dict[str, Any]]
"""What a filter reads of one entry: its built-in fields and its metadata."""


_ULID_DIGITS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _tie_keys(entry_id: str) -> tuple[float, float, float]:
    """An id's order as three exact floats (the 26 characters of a ULID, 10 + 8 + 8 of 5 bits each), so
    that ties are broken by id in numpy (ids are ULIDs; another id orders by its first 26 characters)."""
    parts = []
    for start, end in ((0, 10), (10, 18), (18, 26)):
        value = 0
        for char in entry_id[start:end].upper().ljust(end - start, "0"):
            value = value * 32 + max(0, _ULID_DIGITS.find(char))
        parts.append(float(value))
    return parts[0], parts[1], parts[2]


class _Postings:
    """One word's postings: lists while entries are added, arrays (int64 positions, float64 counts) for
    ranking; either is made from the other when asked for (an index decoded from a snapshot starts with the
    arrays: agentmem/search/snapshot.py)."""

    __slots__ = ("_lists", "arrays")

    def __init__(
        self,
        positions: list[int] | None = None,
        counts: list[int] | None = None,
        arrays: tuple[Any, Any] | None = None,
    ) -> None:
        self._lists = (positions or [], counts or []) if arrays is None else None
        self.arrays = arrays

    @property
    def positions(self) -> list[int]:
        return self._as_lists()[0]

    @property
    def counts(self) -> list[int]:
        return self._as_lists()[1]

    def _as_lists(self) -> tuple[list[int], list[int]]:
        if self._lists is None:
            assert self.arrays is not None
            self._lists = (self.arrays[0].tolist(), self.arrays[1].astype("int64").tolist())
        return self._lists

    def add(self, position: int, count: int) -> None:
        positions, counts = self._as_lists()
        positions.append(position)
        counts.append(count)
        self.arrays = None

    def as_arrays(self) -> tuple[Any, Any]:
        if self.arrays is None:
            import numpy as np

            positions, counts = self._as_lists()
            self.arrays = (np.asarray(positions, dtype=np.int64), np.asarray(counts, dtype=np.float64))
        return self.arrays


@dataclass(slots=True)
class _Vectors:
    """One model's vectors: rows in the order they were added, each with its entry's position."""

    matrix: Any
    """float32 rows (capacity grows by a quarter: the first ``size`` are held)."""
    positions: Any
    """int64 array: the entry position of each row."""
    size: int = 0

    def add(self, position: int, vector: Any) -> None:
        if self.size == self.matrix.shape[0]:
            self._resize(max(16, self.size + self.size // 4))
        self.matrix[self.size] = vector
        self.positions[self.size] = position
        self.size += 1

    def fit(self) -> None:
        """Hold no more rows than there are (after a load; adding grows them again)."""
        if self.matrix.shape[0] > self.size:
            self._resize(self.size)

    def _resize(self, capacity: int) -> None:
        import numpy as np

        resized = np.empty((capacity, self.matrix.shape[1]), dtype=np.float32)
        resized[: self.size] = self.matrix[: self.size]
        self.matrix = resized
        self.positions = np.resize(self.positions, capacity)


class _Columns:
    """Per position: held or removed, own length, contextual length, id order (numpy arrays whose capacity
    grows by doubling, so adding an entry never rebuilds them)."""

    def __init__(self, capacity: int = 16) -> None:
        import numpy as np

        self.size = 0
        self.alive = np.zeros(capacity, dtype=bool)
        self.length = np.zeros(capacity)
        self.contextual = np.zeros(capacity)
        self.ties = np.zeros((capacity, 3))

    def add(self, position: int, length: float, contextual: float, ties: tuple[float, float, float]) -> None:
        import numpy as np

        if position >= self.alive.shape[0]:
            capacity = max(16, 2 * self.alive.shape[0], position + 1)
            self.alive = np.resize(self.alive, capacity)
            self.length = np.resize(self.length, capacity)
            self.contextual = np.resize(self.contextual, capacity)
            self.ties = np.resize(self.ties, (capacity, 3))
        self.alive[position] = True
        self.length[position] = length
        self.contextual[position] = contextual
        self.ties[position] = ties
        self.size = max(self.size, position + 1)

    def kept(self, positions: Sequence[int]) -> _Columns:
        fresh = _Columns(max(16, len(positions)))
        fresh.size = len(positions)
        fresh.alive[: fresh.size] = self.alive[positions]
        fresh.length[: fresh.size] = self.length[positions]
        fresh.contextual[: fresh.size] = self.contextual[positions]
        fresh.ties[: fresh.size] = self.ties[positions]
        return fresh


class PartitionIndex:
    """The entries of one partition at one version of its change log (``epoch``, ``version``)."""

    def __init__(self, epoch: str | None, version: int) -> None:
        self.place = Caught(epoch, version)
        """Where this index stands in the partition's change log."""
        self.ids: list[str | None] = []
        """Entry id at each position; None where an entry was removed."""
        self.rows: list[Row | None] = []
        self._position: dict[str, int] = {}
        self._expires: dict[int, str] = {}
        self._own: dict[str, _Postings] = {}
        self._context: dict[str, _Postings] = {}
        self._columns = _Columns()
        self._vectors: dict[str, _Vectors] = {}
        self._removed = 0
        self._postings = 0

    @classmethod
    def of(cls, epoch: str | None, version: int, items: Iterable[Mapping[str, Any]]) -> PartitionIndex:
        index = cls(epoch, version)
        for item in items:
            index._add(item)
        for held in index._vectors.values():
            held.fit()
        return index

    def __len__(self) -> int:
        return len(self._position)

    @property
    def models(self) -> set[str]:
        return {model for model, held in self._vectors.items() if any(self.ids[p] for p in held.positions[: held.size])}

    # -- changes ---------------------------------------------------------------------------------------

    def apply(self, changed: Iterable[str], present: Iterable[Mapping[str, Any]]) -> None:
        """``changed`` ids were added, deleted or rewritten; ``present`` holds the items of those that exist
        now."""
        for entry_id in changed:
            self._remove(entry_id)
        for item in present:
            self._add(item)
        if self._removed > max(1000, len(self._position)):
            self._compact()

    def _add(self, item: Mapping[str, Any]) -> None:
        import numpy as np

        entry_id = str(item["id"])
        self._remove(entry_id)
        position = len(self.ids)
        self.ids.append(entry_id)
        self._position[entry_id] = position
        self.rows.append((records.entry_builtins(dict(item)), records.entry_metadata(dict(item))))
        expires = item.get(records.EXPIRES_AT)
        if isinstance(expires, str):
            self._expires[position] = expires
        own, context = records.entry_stems(dict(item))
        for word, count in own.items():
            self._own.setdefault(word, _Postings()).add(position, count)
        for word, count in context.items():
            self._context.setdefault(word, _Postings()).add(position, count)
        self._postings += len(own) + len(context)
        length = int(item.get("length") or 0)
        contextual = OWN_WEIGHT * length + int(item.get(records.CONTEXT_LENGTH) or 0)
        self._columns.add(position, float(length), float(contextual), _tie_keys(entry_id))
        data, model = item.get(VECTOR_ATTR), item.get(MODEL_ATTR)
        if isinstance(data, bytes) and isinstance(model, str):
            vector = vector_array(data)
            held = self._vectors.get(model)
            if held is None:
                empty = np.empty((16, vector.shape[0]), dtype=np.float32)
                held = self._vectors[model] = _Vectors(empty, np.zeros(16, dtype=np.int64))
            if held.matrix.shape[1] == vector.shape[0]:  # one model, one dimension; anything else is corrupt
                held.add(position, vector)

    def _remove(self, entry_id: str) -> None:
        position = self._position.pop(entry_id, None)
        if position is None:
            return
        self.ids[position] = None
        self.rows[position] = None
        self._expires.pop(position, None)
        self._columns.alive[position] = False
        self._removed += 1

    def _compact(self) -> None:
        """Rebuild without the removed positions (from what is held: nothing is read)."""
        live = [p for p, entry_id in enumerate(self.ids) if entry_id is not None]
        fresh = PartitionIndex(self.place.epoch, self.place.version)
        fresh.place = self.place
        renumber = {old: new for new, old in enumerate(live)}
        fresh.ids = [self.ids[p] for p in live]
        fresh.rows = [self.rows[p] for p in live]
        fresh._position = {entry_id: n for n, entry_id in enumerate(fresh.ids) if entry_id is not None}
        fresh._expires = {renumber[p]: when for p, when in self._expires.items()}
        fresh._columns = self._columns.kept(live)
        for source, target in ((self._own, fresh._own), (self._context, fresh._context)):
            for word, postings in source.items():
                kept = [
                    (renumber[p], c) for p, c in zip(postings.positions, postings.counts, strict=True) if p in renumber
                ]
                if kept:
                    target[word] = _Postings([p for p, _ in kept], [c for _, c in kept])
                    fresh._postings += len(kept)
        import numpy as np

        for model, held in self._vectors.items():
            rows = [i for i, p in enumerate(held.positions[: held.size].tolist()) if p in renumber]
            if rows:
                positions = np.asarray([renumber[int(held.positions[i])] for i in rows], dtype=np.int64)
                fresh._vectors[model] = _Vectors(held.matrix[rows].copy(), positions, len(rows))
        self.__dict__.update(fresh.__dict__)

    @property
    def nbytes(self) -> int:
        """About what the index takes in memory: its arrays as allocated, and per entry and posting what
        Python objects take (measured with tracemalloc: tests/integration/test_search_index_catch_up.py)."""
        arrays: int = sum(held.matrix.nbytes + held.positions.nbytes for held in self._vectors.values())
        columns = self._columns
        arrays += columns.alive.nbytes + columns.length.nbytes + columns.contextual.nbytes + columns.ties.nbytes
        return (
            arrays
            + len(self.ids) * ENTRY_BYTES
            + self._postings * POSTING_BYTES
            + (len(self._own) + len(self._context)) * WORD_BYTES
        )

    # -- reads -----------------------------------------------------------------------------------------

    def _array(self, name: str) -> Any:
        """A column over the positions held: ``alive``, ``length``, ``contextual`` or ``ties``."""
        return getattr(self._columns, name)[: self._columns.size]

    def live_mask(self, now: str) -> Any:
        """Positions holding an entry that has not expired at ``now`` (stored form)."""
        mask = self._array("alive")
        expired = [p for p, when in self._expires.items() if when <= now]
        if expired:
            mask = mask.copy()
            mask[expired] = False
        return mask

    def postings(self, word: str, *, contextual: bool) -> list[tuple[Any, Any, Any]]:
        """(positions, weighted frequency, document length) arrays of ``word``'s postings: its own
        occurrences (weighted :data:`OWN_WEIGHT` and measured by contextual length when ``contextual``),
        and, when ``contextual``, its context occurrences."""
        found = []
        own = self._own.get(word)
        if own is not None:
            positions, counts = own.as_arrays()
            if contextual:
                found.append((positions, OWN_WEIGHT * counts, self._array("contextual")[positions]))
            else:
                found.append((positions, counts, self._array("length")[positions]))
        around = self._context.get(word) if contextual else None
        if around is not None:
            positions, counts = around.as_arrays()
            found.append((positions, counts, self._array("contextual")[positions]))
        return found

    def total_length(self, mask: Any, *, contextual: bool) -> float:
        return float(self._array("contextual" if contextual else "length")[mask].sum())

    def with_all(self, words: Sequence[str], now: str) -> set[str]:
        """Ids of the live entries holding every word among their own, by its stem
        (:mod:`agentmem.search.stemming`)."""
        result: set[int] | None = None
        mask = self.live_mask(now)
        for word in query_stems(words):
            postings = self._own.get(word)
            found = {p for p in postings.positions if mask[p]} if postings else set()
            result = found if result is None else result & found
            if not result:
                return set()
        return {self.ids[p] for p in (result or set()) if self.ids[p] is not None}  # type: ignore[misc]

    def nearest(
        self,
        query: Any,
        model: str,
        top_k: int,
        mask: Any,
        predicate: Callable[[dict[str, Any], dict[str, Any]], bool] | None,
    ) -> list[tuple[int, float]]:
        """(position, cosine) of the ``top_k`` live entries with ``model`` vectors most similar to
        ``query``, among those ``predicate`` accepts."""
        import numpy as np

        held = self._vectors.get(model)
        if held is None or held.size == 0 or held.matrix.shape[1] != query.shape[0]:
            return []
        positions = held.positions[: held.size]
        keep = mask[positions]
        if predicate is not None:
            rows = self.rows
            keep &= np.fromiter(
                (bool(k) and predicate(*rows[p]) for p, k in zip(positions.tolist(), keep.tolist(), strict=True)),  # type: ignore[misc]
                dtype=bool,
                count=len(positions),
            )
        scores = held.matrix[: held.size] @ query  # every row: cheaper than gathering the kept ones first
        kept = int(keep.sum())
        if kept == 0:
            return []
        if kept < held.size:
            scores = np.where(keep, scores, -np.inf)
        count = min(top_k, kept)
        best = np.argpartition(-scores, count - 1)[:count]
        return [(int(positions[i]), float(scores[i])) for i in best if keep[i]]


@dataclass(frozen=True, slots=True)
class Collection:
    """The statistics BM25 reads of the collection, when the indexes hold only part of it (the entries a
    remote index returned): its live entries, their total length, and each word's document frequency."""

    docs: int
    length: float
    frequencies: Mapping[str, int]


def _best(scores: Any, ties: Any, count: int) -> Any:
    """Indices of the ``count`` best rows by score, ties broken by id order (newer ids first), best first."""
    import numpy as np

    if scores.size > count:
        cut = np.partition(scores, scores.size - count)[scores.size - count]
        above = np.flatnonzero(scores > cut)
        tied = np.flatnonzero(scores == cut)
        tied = tied[np.lexsort((-ties[tied, 2], -ties[tied, 1], -ties[tied, 0]))][: count - above.size]
        chosen = np.concatenate((above, tied))
    else:
        chosen = np.arange(scores.size)
    return chosen[np.lexsort((-ties[chosen, 2], -ties[chosen, 1], -ties[chosen, 0], -scores[chosen]))]


def bm25(
    indexes: Sequence[tuple[str, PartitionIndex]],
    words: Sequence[str],
    now: str,
    *,
    contextual: bool,
    collection: Collection | None = None,
    predicate: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None,
) -> Ranking:
    """BM25 of ``words`` over the live entries of the partitions (as one collection), best first (the
    first :data:`MAX_HITS`), with the sum of the query words' IDFs and the spread of the scores over every
    entry: the ranking agentmem.search.inverted_index computes from postings in the table, from memory.
    ``collection``: the statistics of the whole collection, when the indexes hold part of it.
    ``predicate``: the hits are the entries whose held row it accepts (scored against the whole collection,
    chosen before the cut), so a filter reads no entry to rank."""
    import numpy as np

    query = query_stems(words)
    if not query or not indexes:
        return Ranking([])
    masks = [index.live_mask(now) for _, index in indexes]
    docs = sum(int(mask.sum()) for mask in masks)
    length = sum(
        index.total_length(mask, contextual=contextual) for (_, index), mask in zip(indexes, masks, strict=True)
    )
    if collection is not None:
        docs, length = collection.docs, collection.length
    found = {
        word: [
            [
                (positions[mask[positions]], counts[mask[positions]], lengths[mask[positions]])
                for positions, counts, lengths in index.postings(word, contextual=contextual)
            ]
            for (_, index), mask in zip(indexes, masks, strict=True)
        ]
        for word in query
    }
    frequencies = {
        word: sum(len(p) for per_partition in lists for p, _, _ in per_partition) for word, lists in found.items()
    }
    if collection is not None:
        frequencies = {word: max(count, collection.frequencies.get(word, 0)) for word, count in frequencies.items()}
    docs = max(docs, max(frequencies.values(), default=0), 1)
    average = max(length / docs, 1.0)
    scores = [np.zeros(len(index.ids)) for _, index in indexes]
    idf_total = 0.0
    for word in query:
        df = frequencies[word]
        idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
        idf_total += idf
        for partition_scores, per_partition in zip(scores, found[word], strict=True):
            for positions, counts, lengths in per_partition:
                norm = 1 - B + B * lengths / average
                partition_scores[positions] += idf * counts * (K1 + 1) / (counts + K1 * norm)
    if idf_total <= 0:
        return Ranking([])
    total = sum(float(s.sum()) for s in scores)
    squares = sum(float((s * s).sum()) for s in scores)
    mean = total / docs
    spread = math.sqrt(max(0.0, squares / docs - mean * mean))
    keys, owners = [], []  # (score, id order) of each partition's best, and (partition, position)
    for n, ((_, index), partition_scores) in enumerate(zip(indexes, scores, strict=True)):
        matched = np.flatnonzero(partition_scores > 0)
        if predicate is not None:
            rows = index.rows
            accepted = (predicate(*rows[p]) for p in matched.tolist())  # type: ignore[misc]
            matched = matched[np.fromiter(accepted, dtype=bool, count=matched.size)]
        ties = index._array("ties")
        if matched.size > MAX_HITS:  # only the best can be kept: the rest cannot reach the top
            matched = matched[_best(partition_scores[matched], ties[matched], MAX_HITS)]
        keys.append(np.column_stack((partition_scores[matched], ties[matched])))
        owners.append(np.column_stack((np.full(matched.size, n), matched)))
    merged, where = np.concatenate(keys), np.concatenate(owners)
    order = _best(merged[:, 0], merged[:, 1:], MAX_HITS)
    hits = []
    for score, (n, p) in zip(merged[order, 0].tolist(), where[order].tolist(), strict=True):
        partition, index = indexes[int(n)]
        builtins = index.rows[int(p)][0]  # type: ignore[index]
        hits.append(
            Hit(
                partition,
                index.ids[int(p)] or "",
                score,
                builtins.get("author"),
                builtins.get("timestamp"),
                described=True,
                told=builtins.get(records.TOLD),
            )
        )
    return Ranking(hits, idf_total, spread)
