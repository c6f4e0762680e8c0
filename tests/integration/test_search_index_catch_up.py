"""The search index held in process catches up from the partition's change log (ADR 0004, issue 25 point 2):
with writes and searches in different containers (two services, each with its own index, as two Lambda
containers), what a search reads after another container's write or delete follows what changed, never the
size of the user's memory; what was deleted is never returned; a container learns of an erasure.
Counted on both tables (request units as DynamoDB bills them: agentmem/capacity.py), not timed."""

from __future__ import annotations

import math
import random
import time

import pytest

from agentmem import capacity
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import Scope
from agentmem.memory import filters, records
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.search import changes
from agentmem.search.inverted_index import InvertedIndex
from agentmem.search.partition import PartitionIndex, bm25
from agentmem.stores.table import Table, query_all

SCOPE = Scope("app", "grower")
WORDS = [f"word{n}" for n in range(40)]


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"})


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(count)]


@pytest.fixture
def containers(table: Table) -> tuple[MemoryService, MemoryService]:
    """A writer and a searcher: one table, two search indexes (two processes' caches)."""
    embedder = HashingEmbedder(64)
    return MemoryService(table, embedder=embedder), MemoryService(table, embedder=embedder)


def _fill(writer: MemoryService, count: int) -> None:
    texts = _texts(count, count)
    for start in range(0, count, 100):
        writer.add_session(SCOPE, f"fill-{start}", [_entry(t) for t in texts[start : start + 100]])


def _search_reads(searcher: MemoryService, query: str, mode: str) -> tuple[capacity.Consumption, list[str]]:
    with capacity.measuring() as used:
        found = searcher.search(SCOPE, query, top_k=10, mode=mode)  # type: ignore[arg-type]
    return used, [e.content["parts"][0]["text"] for e in found.entries]


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_a_search_after_another_containers_write_reads_what_changed_not_the_memory(
    containers: tuple[MemoryService, MemoryService], mode: str
) -> None:
    writer, searcher = containers
    reads: dict[int, float] = {}
    for size in (100, 400):
        # Given a user holding `size` entries, and a searcher whose index holds them
        _fill(writer, size - max(reads, default=0))
        searcher.search(SCOPE, "word1 word2", mode=mode)  # type: ignore[arg-type]
        # When another container stores a turn, and the searcher searches for it
        writer.add_entry(SCOPE, _entry(f"the zebra{size} crossing{size}"), session_id="live")
        used, found = _search_reads(searcher, f"zebra{size} crossing{size}", mode)
        # Then the new turn is found, and what the search read does not grow with the memory
        assert f"the zebra{size} crossing{size}" in found
        reads[size] = used.read_units
    assert reads[400] == reads[100], reads
    assert reads[100] < 30  # the statistics, the log row, the changed entry, the hits: not 100 entries


def test_a_delete_in_another_container_is_never_returned_and_a_rewrite_is_seen(
    containers: tuple[MemoryService, MemoryService],
) -> None:
    writer, searcher = containers
    kept = writer.add_entry(SCOPE, _entry("the blue kettle is in the attic"))
    gone = writer.add_entry(SCOPE, _entry("the blue kettle broke"))
    for mode in ("keyword", "semantic", "hybrid"):
        assert len(searcher.search(SCOPE, "blue kettle", mode=mode).entries) == 2  # type: ignore[arg-type]
    writer.delete_entry(SCOPE.user_ref, gone.id)
    for mode in ("keyword", "semantic", "hybrid"):
        found = [e.id for e in searcher.search(SCOPE, "blue kettle", mode=mode).entries]  # type: ignore[arg-type]
        assert found == [kept.id], mode
    # And a delete by query in the searcher sees the writer's entries as they are now
    writer.add_entry(SCOPE, _entry("a red kettle on the stove"))
    assert searcher.delete_entries(SCOPE, "kettle") == 2
    assert searcher.search(SCOPE, "kettle", mode="keyword").entries == []


def test_a_missing_log_row_is_looked_for_again_and_forgotten_when_its_writer_died(
    containers: tuple[MemoryService, MemoryService], table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, searcher = containers
    writer.add_entry(SCOPE, _entry("an anchor memory"))
    searcher.search(SCOPE, "anchor", mode="keyword")
    # Given a writer that took a version and died before its log row, and a later write
    table.increment(SCOPE.partition, changes.MEMORY.stats_sk, {"version": 1})
    later = writer.add_entry(SCOPE, _entry("a later memory about sails"))
    # When the searcher searches: it applies the later write and notes the missing version
    assert [e.id for e in searcher.search(SCOPE, "sails", mode="keyword").entries] == [later.id]
    held = searcher.vector_index.held(SCOPE.partition)  # type: ignore[attr-defined]
    assert set(held.place.missing) == {2}
    # Then it looks for that row again while it may still come, and forgets it after MISSING_SECONDS
    with capacity.measuring() as looking:
        searcher.search(SCOPE, "sails", mode="keyword")
    assert looking.calls["BatchGetItem"] >= 1  # the missing row, read by its key
    monkeypatch.setattr(changes, "MISSING_SECONDS", 0)
    searcher.search(SCOPE, "sails", mode="keyword")
    assert held.place.missing == {}


def test_an_erased_and_refilled_partition_is_read_again(containers: tuple[MemoryService, MemoryService]) -> None:
    writer, searcher = containers
    writer.add_entry(SCOPE.user_ref.scope("p"), _entry("project note about tulips"))
    project = Scope(SCOPE.app, SCOPE.user, "p")
    assert len(searcher.search(project, "tulips", mode="keyword").entries) == 1
    # When the project is deleted (statistics and log go with it) and written again to the same version
    writer.delete_project(SCOPE.user_ref, "p")
    fresh = writer.add_entry(project, _entry("project note about roses"))
    # Then the searcher sees a new epoch and reads the partition again: the old entry is not ranked
    found = searcher.search(project, "project note", mode="keyword").entries
    assert [e.id for e in found] == [fresh.id]


def test_the_index_in_memory_ranks_as_the_postings_in_the_table_did(table: Table) -> None:
    """A differential test: the BM25 of agentmem/search/partition.py against the InvertedIndex over posting
    rows (what memory search read before ADR 0004, and what the graph's episodes still read)."""
    texts = _texts(60, 7)
    service = MemoryService(table)
    stored = service.add_session(SCOPE, "s", [_entry(t) for t in texts])
    assert stored.stored == 60
    items = query_all(table, SCOPE.partition, records.ENTRY)
    postings = InvertedIndex(table, "Q")
    for item in items:
        own, around = records.entry_terms(item)
        table.batch_write(
            puts=postings.postings(
                SCOPE.partition, item["id"], own, int(item["length"]), around, int(item.get("context_length") or 0)
            )
        )
    postings.record(
        SCOPE.partition,
        docs=len(items),
        length=sum(int(i["length"]) for i in items),
        context_length=sum(int(i.get("context_length") or 0) for i in items),
    )
    held = PartitionIndex.of(None, 0, items)
    for query in (["word1"], ["word3", "word17", "word3"], ["word5", "nothing"], ["word2", "word9", "word33"]):
        for contextual in (False, True):
            expected = postings.search([SCOPE.partition], query, contextual=contextual)
            got = bm25([(SCOPE.partition, held)], query, "2999-01-01", contextual=contextual)
            assert [h.doc_id for h in got.hits] == [h.doc_id for h in expected.hits], (query, contextual)
            assert [round(h.score, 9) for h in got.hits] == [round(h.score, 9) for h in expected.hits]
            assert math.isclose(got.idf_total, expected.idf_total)
            assert math.isclose(got.spread, expected.spread, rel_tol=1e-9)


def test_the_log_row_names_the_write_and_expires(containers: tuple[MemoryService, MemoryService], table: Table) -> None:
    writer, _ = containers
    first = writer.add_entry(SCOPE, _entry("one"))
    stats = changes.MEMORY.stats(table, SCOPE.partition)
    row = table.get(SCOPE.partition, changes.MEMORY.log_sk(stats.version))
    assert row is not None
    assert row["ids"] == [first.id]
    assert row["ttl"] - time.time() > changes.LOG_SECONDS - 60
    assert stats.epoch is not None


def test_a_process_holds_partitions_within_its_byte_budget_the_least_recently_used_forgotten(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a process whose held partitions may take about three users' indexes
    embedder = HashingEmbedder(64)
    writer = MemoryService(table, embedder=embedder)
    users = [Scope("app", f"user{n}") for n in range(5)]
    for scope in users:
        writer.add_session(scope, "s", [_entry(t) for t in _texts(60, hash(scope.user) % 1000)])
    one_user = PartitionIndex.of(None, 0, query_all(table, users[0].partition, records.ENTRY)).nbytes
    budget = changes.HeldBytes(limit=int(one_user * 3.5))
    monkeypatch.setattr(changes, "HELD", budget)
    searcher = MemoryService(table, embedder=embedder)  # its indexes share the budget set above
    # When it searches each user in turn
    for scope in users:
        searcher.search(scope, "word1 word2", mode="keyword")
    # Then what it holds stays within the budget, and the users searched last are still held
    assert 0 < budget.used <= budget.limit
    reads = {}
    for scope in (users[-1], users[0]):
        with capacity.measuring() as used:
            searcher.search(scope, "word1 word2", mode="keyword")
        reads[scope.user] = used.items_read
    assert reads["user4"] <= 12  # held: the statistics and the hits
    assert reads["user0"] >= 60  # forgotten: its 60 entries read again
    assert budget.used <= budget.limit


def test_a_partition_larger_than_the_budget_is_still_searched(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "HELD", changes.HeldBytes(limit=1))
    service = MemoryService(table, embedder=HashingEmbedder(64))
    service.add_session(SCOPE, "s", [_entry("the zebra crossing"), _entry("a quiet street")])
    found = service.search(SCOPE, "zebra", mode="hybrid")
    assert found.entries[0].content["parts"][0]["text"] == "the zebra crossing"


def test_the_budget_is_half_a_lambda_functions_memory_unless_configured() -> None:
    assert changes.budget_bytes({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}) == 512 * 2**20
    assert changes.budget_bytes({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", changes.SEARCH_CACHE_ENV: "100"}) == (
        100 * 2**20
    )
    assert changes.budget_bytes({}) == 1024 * 2**20


@pytest.mark.parametrize(("dimension", "words", "vocabulary"), [(1024, 25, 3000), (384, 12, 40), (64, 40, 5000)])
def test_an_index_size_estimate_is_what_it_takes_in_memory_within_a_half(
    table: Table, dimension: int, words: int, vocabulary: int
) -> None:
    import gc
    import tracemalloc

    rng = random.Random(dimension)
    vocab = [f"w{n}" for n in range(vocabulary)]
    writer = MemoryService(table, embedder=HashingEmbedder(dimension))
    for start in range(0, 1000, 250):
        texts = [" ".join(rng.choice(vocab) for _ in range(words)) for _ in range(250)]
        writer.add_session(SCOPE, f"s{start}", [_entry(t) for t in texts])
    items = query_all(table, SCOPE.partition, records.ENTRY)
    gc.collect()
    tracemalloc.start()
    try:
        index = PartitionIndex.of(None, 0, items)
        measured, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert measured <= index.nbytes <= 1.6 * measured, (measured, index.nbytes)


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_filtered_search_reads_the_entries_it_answers_not_those_it_passes_over(
    containers: tuple[MemoryService, MemoryService], mode: str
) -> None:
    """Issue 35, point 5: a filter is evaluated over what the held index keeps of each entry, so a keyword
    or hybrid search whose filter matches few of many hits reads those few, not the ranking down to them
    (RetrieveMemoryRecords' namespace, a store search's namespace prefix)."""
    writer, searcher = containers
    common = [_entry(f"the cat sat on the mat {n}") for n in range(300)]
    writer.add_session(SCOPE, "crowd", common)
    wanted = [  # they rank below the crowd: long, and their words are rarer
        MemoryEntry.model_validate(
            {
                **_entry(f"a cat on a mat, kept {n}, among many other words: " + " ".join(WORDS)).model_dump(),
                "metadata": {"kind": "kept"},
            }
        )
        for n in range(5)
    ]
    writer.add_session(SCOPE, "kept", wanted)
    where = filters.parse({"kind": "kept"})
    searcher.search(SCOPE, "cat mat", top_k=5, mode=mode, where=where)  # the partition is held from here on
    with capacity.measuring() as used:
        found = searcher.search(SCOPE, "cat mat", top_k=5, mode=mode, where=where)  # type: ignore[arg-type]
    assert sorted(e.metadata["kind"] for e in found.entries) == ["kept"] * 5
    assert used.items_read <= 5 + 4 + 1  # its five entries (and a hybrid's continued turns), the statistics
