"""A process new to a user starts from the snapshot of the user's search index (issue 35, point 1): one
request for the snapshot and one small read of the partition's statistics, not a read of every entry; it
answers as a process that read every entry does (within the vectors' quantization); it catches up from
the change log past the snapshot; and a snapshot never outlives its user's erasure.

On both tables, with real snapshot files (the local server's store; S3's adapter is tested on moto in
tests/integration/test_snapshot_s3.py). Reads are counted as DynamoDB bills them (agentmem/capacity.py)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from agentmem import capacity
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import Scope
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.search import changes, snapshots
from agentmem.search.snapshot import decode, place_of
from agentmem.search.snapshots import FileSnapshots, Snapshotter
from agentmem.stores.table import Table
from agentmem.vectors.exact import ExactVectorIndex

SCOPE = Scope("app", "reader")
WORDS = [f"word{n}" for n in range(300)]


class Counted(FileSnapshots):
    """The real file store, counting the snapshots read from it."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.reads = 0

    def get(self, partition: str) -> bytes | None:
        self.reads += 1
        return super().get(partition)


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"})


def _process(table: Table, store: FileSnapshots, asked: list[str] | None = None) -> MemoryService:
    """A process of its own (its own held indexes), searching with snapshots."""
    index = ExactVectorIndex(table, snapshots=store, ask=asked.append if asked is not None else None)
    return MemoryService(table, embedder=HashingEmbedder(64), vector_index=index)


def _writer(service: MemoryService, store: FileSnapshots) -> Snapshotter:
    index = service.vector_index  # type: ignore[attr-defined]

    def version_of(partition: str) -> tuple[str | None, int]:
        stats = changes.MEMORY.stats(service._table, partition)
        return stats.epoch, stats.version

    return Snapshotter(store, version_of=version_of, encoded=index.snapshot)


def _fill(service: MemoryService, count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    for start in range(0, count, 100):
        texts = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(min(100, count - start))]
        service.add_session(SCOPE, f"s{start}", [_entry(t) for t in texts])


def _answers(service: MemoryService, query: str, mode: str) -> list[tuple[str, float]]:
    found = service.search(SCOPE, query, top_k=10, mode=mode)  # type: ignore[arg-type]
    return [(e.id, e.score or 0.0) for e in found.entries]


QUANTIZATION = 0.01
"""How far an 8-bit vector may move a score (a cosine moves by about 1e-3 at most)."""


def _same_within(got: list[tuple[str, float]], want: list[tuple[str, float]], tolerance: float, query: str) -> None:
    """The same hits with scores within ``tolerance``; two hits in another order, or one in and one out at
    the cut, only where their scores are that close."""
    scores, mine = dict(want), dict(got)
    cut = min(scores.values())
    for entry_id in set(mine) ^ set(scores):  # in one answer only: at the cut
        assert abs(scores.get(entry_id, mine.get(entry_id, 0.0)) - cut) < tolerance, query
    for entry_id in set(mine) & set(scores):
        assert abs(mine[entry_id] - scores[entry_id]) < tolerance, query
    common = [i for i, _ in got if i in scores]
    for first, second in itertools.pairwise(common):
        assert scores[first] >= scores[second] - tolerance, query  # an inversion only between near ties


@pytest.fixture
def store(tmp_path: Path) -> Counted:
    return Counted(tmp_path / "snapshots")


def test_a_cold_load_reads_the_snapshot_and_the_statistics_not_the_entries(table: Table, store: Counted) -> None:
    # Given a user of 1,000 memories whose index a process snapshotted
    asked: list[str] = []
    first = _process(table, store, asked)
    _fill(first, 1000)
    first.search(SCOPE, "word1", mode="keyword")
    assert asked == [SCOPE.partition]  # it read the partition whole, and asked for a snapshot
    assert _writer(first, store).refresh(SCOPE.partition) == "written"
    # When a process new to the user loads its index
    cold = _process(table, store)
    store.reads = 0
    with capacity.measuring() as load:
        held = cold.vector_index.held(SCOPE.partition)  # type: ignore[attr-defined]
    # Then it read one snapshot and the statistics item: 2 requests, not the partition
    assert len(held) == 1000
    assert store.reads == 1
    assert sum(load.calls.values()) == 1
    assert load.read_units <= 1


@pytest.mark.parametrize("mode", ["keyword", "semantic"])
def test_a_process_started_from_a_snapshot_answers_as_one_that_read_every_entry(
    table: Table, store: Counted, mode: str
) -> None:
    """Hybrid search fuses these two rankings: where a quantized cosine reorders near ties at the edge of
    its candidates, a hit's evidence and score can change; `make bench ONLY=locomo` measures hybrid recall
    from snapshots against reading every entry, on conversations nobody here wrote."""
    writer = _process(table, store)
    _fill(writer, 300)
    _writer(writer, store).refresh(SCOPE.partition)
    whole = MemoryService(table, embedder=HashingEmbedder(64))  # no snapshots: reads every entry
    started = _process(table, store)
    store.reads = 0
    for query in ("word1 word2", "word7", "word42 word43 word44", "word299 word0"):
        by_whole, by_snapshot = _answers(whole, query, mode), _answers(started, query, mode)
        _same_within(by_snapshot, by_whole, QUANTIZATION, query)
    assert store.reads == 1


def test_writes_and_deletes_after_the_snapshot_are_caught_up_from_the_log(table: Table, store: Counted) -> None:
    writer = _process(table, store)
    _fill(writer, 200)
    gone = writer.add_entry(SCOPE, _entry("a zebra crossing the road"))
    _writer(writer, store).refresh(SCOPE.partition)
    # After the snapshot: an entry added and one deleted
    added = writer.add_entry(SCOPE, _entry("a zebra in the zoo"))
    writer.delete_entry(SCOPE.user_ref, gone.id)
    started = _process(table, store)
    for mode in ("keyword", "semantic", "hybrid"):
        found = [e.id for e in started.search(SCOPE, "zebra", mode=mode).entries]  # type: ignore[arg-type]
        assert added.id in found, mode
        assert gone.id not in found, mode


def test_a_write_whose_log_row_was_not_there_when_the_snapshot_was_made_is_found_from_it(
    table: Table, store: Counted
) -> None:
    # Given a process holding a user's index, and a write whose writer has taken its version and written its
    # items but not yet its log row (the row is held back here, as the window between the two would)
    reader = _process(table, store)
    _fill(reader, 100)
    assert reader.search(SCOPE, "word1", mode="keyword").entries is not None
    late = _process(table, store).add_entry(SCOPE, _entry("an okapi at the waterhole"))
    version = changes.MEMORY.stats(table, SCOPE.partition).version
    row = table.get(SCOPE.partition, changes.MEMORY.log_sk(version))
    assert row is not None
    table.batch_write(deletes=[(SCOPE.partition, row["sk"])])
    # When the reader catches up (it notes the version as missing) and a snapshot is made of its index
    assert [e.id for e in reader.search(SCOPE, "okapi", mode="keyword").entries] == []
    assert _writer(reader, store).refresh(SCOPE.partition) == "written"
    assert place_of(store.get(SCOPE.partition) or b"")[1] == version
    # And then the writer writes its row, and its write is acknowledged
    table.put(row)
    # Then a process started from the snapshot finds the write, by keyword and in hybrid search
    started = _process(table, store)
    assert [e.id for e in started.search(SCOPE, "okapi", mode="keyword").entries] == [late.id]
    store.reads = 0
    assert late.id in {e.id for e in _process(table, store).search(SCOPE, "okapi", mode="hybrid").entries}
    assert store.reads == 1  # (started from the snapshot, not read whole)


def test_a_snapshot_far_behind_is_used_and_a_newer_one_asked_for(table: Table, store: Counted) -> None:
    writer = _process(table, store)
    _fill(writer, 100)
    _writer(writer, store).refresh(SCOPE.partition)
    for n in range(snapshots.SNAPSHOT_LAG):  # one log row each
        writer.add_entry(SCOPE, _entry(f"later note {n}"))
    asked: list[str] = []
    started = _process(table, store, asked)
    assert len(started.vector_index.held(SCOPE.partition)) == 100 + snapshots.SNAPSHOT_LAG  # type: ignore[attr-defined]
    assert asked == [SCOPE.partition]
    assert _writer(started, store).refresh(SCOPE.partition) == "written"
    assert place_of(store.get(SCOPE.partition) or b"")[1] == changes.MEMORY.stats(table, SCOPE.partition).version


def test_a_snapshot_of_an_earlier_life_of_the_partition_or_unreadable_is_not_used(table: Table, store: Counted) -> None:
    writer = _process(table, store)
    writer.add_entry(SCOPE, _entry("tulips in the old garden"))
    _writer(writer, store).refresh(SCOPE.partition)
    old = store.get(SCOPE.partition)
    assert old is not None
    # The user's memories are deleted and written again: a new epoch of the change log
    writer.delete_entries(SCOPE, "tulips")
    table.delete(SCOPE.partition, changes.MEMORY.stats_sk)
    fresh = writer.add_entry(SCOPE, _entry("roses in the new garden"))
    store.put(SCOPE.partition, old)  # as if the old snapshot had been left behind
    started = _process(table, store)
    assert [e.id for e in started.search(SCOPE, "garden", mode="keyword").entries] == [fresh.id]
    # And bytes that are not a snapshot are read past: the partition is read whole
    store.put(SCOPE.partition, b"AMSNAP\x01 not a snapshot")
    assert [e.id for e in _process(table, store).search(SCOPE, "garden", mode="keyword").entries] == [fresh.id]


def test_a_snapshot_written_while_its_user_was_erased_withdraws_itself(table: Table, store: Counted) -> None:
    writer = _process(table, store)
    writer.add_entry(SCOPE, _entry("a secret to be erased"))
    index = writer.vector_index  # type: ignore[attr-defined]
    encoded = index.snapshot(SCOPE.partition)  # read before the erasure swept the partition

    def version_of(partition: str) -> tuple[str | None, int]:
        stats = changes.MEMORY.stats(table, partition)
        return stats.epoch, stats.version

    asked_at = version_of(SCOPE.partition)
    answers = iter([asked_at, (None, 0)])  # when asked, and once stored: the sweep deleted the statistics
    late = Snapshotter(store, version_of=lambda _: next(answers), encoded=lambda _: encoded)
    for item in table.query(SCOPE.partition).items:  # the sweep: every item of the partition
        table.delete(item["pk"], item["sk"])
    assert late.refresh(SCOPE.partition) == "withdrawn"
    assert not store.exists(SCOPE.partition)


def test_the_snapshot_decodes_to_the_index_it_was_made_from(table: Table, store: Counted) -> None:
    writer = _process(table, store)
    _fill(writer, 150)
    gone = writer.add_entry(SCOPE, _entry("removed before the snapshot"))
    writer.delete_entry(SCOPE.user_ref, gone.id)
    held = writer.vector_index.held(SCOPE.partition)  # type: ignore[attr-defined]
    data, epoch, version = writer.vector_index.snapshot(SCOPE.partition)  # type: ignore[attr-defined]
    back = decode(data)
    assert (back.place.epoch, back.place.version) == (epoch, version) == (held.place.epoch, held.place.version)
    assert sorted(i for i in back.ids if i) == sorted(i for i in held.ids if i)
    assert gone.id not in back.ids
    assert back.rows == [held.rows[held.ids.index(i)] for i in back.ids]
