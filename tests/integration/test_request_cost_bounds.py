"""What one request may read is bounded (issue 17, point 9), through the real handler on SQLite and
DynamoDB (moto), counted on the table: a filtered query resumes from a cursor instead of reading the whole
scope, a filtered keyword search stops reading, a read_graph page reads a window of the graph, and a
search with ``min_score`` embeds its query once and does not widen its semantic search for nothing.

The read bounds are lowered for the test (the real ones are 1,000 entries a page and 200 entities a
page): the behaviour is the same, and moto stays quick."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.graph import reading
from agentmem.memory import search as memory_search
from agentmem.memory import service as memory_service
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.counting import CountingTable
from tests.support import ApiClient, scope_path, text_entry

SCOPE = scope_path("app", "alice")
ENTRIES = 120


class CountingEmbedder(HashingEmbedder):
    calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return super().embed(texts)


@pytest.fixture
def counted(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ApiClient, CountingTable, CountingEmbedder]]:
    monkeypatch.setattr(memory_service, "QUERY_READ", 50, raising=False)
    monkeypatch.setattr(memory_search, "MAX_READ", 50, raising=False)
    monkeypatch.setattr(reading, "ENTITY_PAGE", 10, raising=False)
    monkeypatch.setattr(reading, "RELATION_PAGE", 10, raising=False)
    counting = CountingTable(table)
    embedder = CountingEmbedder(64)
    set_container(Container(Settings(embedder="hashing"), table=counting, embedder=embedder))
    yield ApiClient(), counting, embedder
    set_container(None)


def _fill(api: ApiClient, tagged: int | None = None) -> None:
    """``ENTRIES`` entries about the weather, the oldest (``tagged``) with metadata ``{"kind": "needle"}``."""
    entries = []
    for n in range(ENTRIES):
        entry = text_entry(f"the weather report number {n}", timestamp=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z")
        if n == tagged:
            entry["metadata"] = {"kind": "needle"}
        entries.append(entry)
    assert api.put(f"{SCOPE}/sessions/s/memories", {"entries": entries}).status == 200


def test_a_filter_that_matches_little_pages_through_the_scope_from_a_cursor(counted: Any) -> None:
    api, table, _ = counted
    _fill(api, tagged=0)
    pages, cursor, found = 0, None, []
    while True:
        table.items_read = 0
        body: dict[str, Any] = {"filter": {"kind": "needle"}, "limit": 20} | ({"cursor": cursor} if cursor else {})
        reply = api.post(f"{SCOPE}/memories/query", body)
        assert reply.status == 200
        assert table.items_read <= 50 + 2 * 50  # the bound, and at most one page read ahead per scope
        found += reply.body["entries"]
        pages += 1
        cursor = reply.body["next_cursor"]
        if cursor is None:
            break
    assert [e["metadata"] for e in found] == [{"kind": "needle"}]
    assert pages == 3  # 120 entries, 50 a page


def test_a_filtered_keyword_search_reads_a_bounded_number_of_entries(counted: Any) -> None:
    api, table, _ = counted
    _fill(api, tagged=0)
    table.items_read = 0
    reply = api.post(
        f"{SCOPE}/memories/search", {"query": "weather report", "mode": "keyword", "filter": {"kind": "nothing"}}
    )
    assert reply.status == 200
    assert reply.body["entries"] == []
    entries_read = table.items_read - 2 * ENTRIES  # the postings of the two words are read once
    assert entries_read <= 50 + 10


def test_read_graph_pages_read_a_window_each(counted: Any) -> None:
    api, table, _ = counted
    entities = [{"name": f"E{n:03d}", "entity_type": "thing", "observations": [f"fact {n}"]} for n in range(40)]
    assert api.post(f"{SCOPE}/graph/entities", {"entities": entities}).status == 200
    relations = [{"source": f"E{n:03d}", "relation_type": "next", "target": f"E{n + 1:03d}"} for n in range(39)]
    assert api.post(f"{SCOPE}/graph/relations", {"relations": relations}).status == 200
    cursor, names, related, reads = None, [], [], []
    while True:
        table.items_read = 0
        reply = api.get(f"{SCOPE}/graph", query={"cursor": cursor} if cursor else None)
        assert reply.status == 200
        reads.append(table.items_read)
        names += [e["name"] for e in reply.body["entities"] if e["name"] not in names]
        related += reply.body["relations"]
        cursor = reply.body["next_cursor"]
        if cursor is None:
            break
    assert names == [f"E{n:03d}" for n in range(40)]
    assert len({r["id"] for r in related}) == 39
    assert len(reads) >= 5  # 40 entities 10 at a time, then the relations 10 at a time
    assert max(reads) <= 60  # a window of entities with their facts, or of relations; never the graph


def test_a_search_with_min_score_embeds_its_query_once_and_does_not_widen(counted: Any) -> None:
    api, table, embedder = counted
    _fill(api)
    api.post(f"{SCOPE}/memories/search", {"query": "warm up", "mode": "semantic"})  # the background, once a process
    embedder.calls = 0
    table.reads = 0
    reply = api.post(f"{SCOPE}/memories/search", {"query": "weather", "mode": "semantic", "min_score": 0.99})
    assert reply.status == 200
    assert embedder.calls == 1
    assert table.reads < 20  # one semantic search, not four widening rounds over the scope


def test_a_sessions_history_reads_the_sessions_entries_not_the_scopes(counted: Any) -> None:
    # Given a scope of 120 entries in one session and a later session of 7 (an agent's current conversation)
    api, table, _ = counted
    _fill(api)
    turns = [text_entry(f"turn {n} of today's chat", timestamp=f"2026-02-01T00:00:{n:02d}Z") for n in range(7)]
    assert api.put(f"{SCOPE}/sessions/today/memories", {"entries": turns}).status == 200
    # When the agent reads that session's history, newest first, a page of 3 at a time, filtered by session alone
    # and with another condition beside it
    for extra in ({}, {"author": "user"}):
        pages, cursor, found, most = 0, None, [], 0
        while True:
            table.items_read = 0
            body: dict[str, Any] = {"filter": {"session_id": "today", **extra}, "limit": 3}
            reply = api.post(f"{SCOPE}/memories/query", body | ({"cursor": cursor} if cursor else {}))
            assert reply.status == 200
            most = max(most, table.items_read)
            found += reply.body["entries"]
            pages += 1
            cursor = reply.body["next_cursor"]
            if cursor is None:
                break
        # Then every turn comes, newest first, in pages of 3
        assert [e["content"]["parts"][0]["text"] for e in found] == [
            f"turn {n} of today's chat" for n in range(6, -1, -1)
        ]
        assert pages == 3
        # And a page read the session's 7 rows and at most a page and one of its entries: none of the other 120
        assert most <= 7 + 4, extra
