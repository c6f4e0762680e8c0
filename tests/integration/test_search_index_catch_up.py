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
from agentmem.memory import records
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
