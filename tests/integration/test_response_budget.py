"""Every list, search, graph, nodes, history, episodes and card answer stays under Lambda's 6 MB
response limit (over it API Gateway answers 502), says when it was cut, and paging loses nothing.

Driven through the API handler on SQLite and on DynamoDB (moto), with entries and facts near the
64 KiB text limit, full of quotes, backslashes and CJK so that JSON escaping swells them on the wire.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ApiClient, Reply, scope_path, text_entry

LAMBDA_LIMIT = 6 * 1024 * 1024
SCOPE = scope_path("demo", "alice")
GRAPH = SCOPE + "/graph"
# 24 bytes of UTF-8 that take 41 bytes in a Lambda response (quotes and backslashes double twice,
# each CJK character becomes \\uXXXX).
_CHUNK = 'a "quoted" 日本 word\\ '


def _big_text(label: str, size: int = 60_000) -> str:
    text = f"{label} " + _CHUNK * (size // len(_CHUNK.encode()))
    assert len(text.encode()) <= 64 * 1024
    return text


def _ok(reply: Reply) -> Any:
    assert reply.status == 200, reply.body
    assert reply.wire_bytes < LAMBDA_LIMIT, reply.wire_bytes
    return reply.body


def _store_entries(api: ApiClient, count: int = 100) -> set[str]:
    """Store ``count`` entries of 60 KB; their ids, read in pages of 10 (1 MB each: never cut)."""
    ids: set[str] = set()
    for batch in range(4):
        entries = [text_entry(_big_text(f"n{batch}x{i}")) for i in range(count // 4)]
        reply = api.put(f"{SCOPE}/sessions/s{batch}/memories", {"entries": entries})
        assert reply.status == 200, reply.body
        assert reply.body["stored"] == count // 4
    page = None
    while True:
        page = _ok(api.get(SCOPE + "/memories", query={"limit": 10, **({"cursor": page} if page else {})}))
        assert page["truncated"] is False
        ids.update(e["id"] for e in page["entries"])
        page = page["next_cursor"]
        if page is None:
            return ids


def test_list_pages_by_bytes_and_loses_no_entry_search_is_cut(api: ApiClient) -> None:
    # Given 100 entries of 60 KB (about 10 MB on the wire together)
    stored = _store_entries(api)
    assert len(stored) == 100
    # When the newest 100 are listed in one request
    first = _ok(api.get(SCOPE + "/memories", query={"limit": 100}))
    # Then the page is cut below the limit, says so, and its cursor leads on
    assert first["truncated"] is True
    assert 0 < len(first["entries"]) < 100
    assert first["next_cursor"]
    # And following the cursors returns every entry once, the last page not cut
    seen: list[str] = [e["id"] for e in first["entries"]]
    cursor = first["next_cursor"]
    pages = 1
    while cursor:
        page = _ok(api.get(SCOPE + "/memories", query={"limit": 100, "cursor": cursor}))
        seen += [e["id"] for e in page["entries"]]
        cursor = page["next_cursor"]
        pages += 1
        if cursor is None:
            assert page["truncated"] is False
    assert pages >= 3
    assert sorted(seen) == sorted(stored)
    # And a search for the 100 of them is cut too, best first, and says so
    reply = api.post(SCOPE + "/memories/search", {"query": "quoted word", "top_k": 100, "mode": "keyword"})
    hits = _ok(reply)
    assert hits["truncated"] is True
    assert 0 < len(hits["entries"]) < 100
    assert {e["id"] for e in hits["entries"]} <= stored
    # A small answer is not cut
    small = _ok(api.post(SCOPE + "/memories/search", {"query": "quoted", "top_k": 3, "mode": "keyword"}))
    assert small["truncated"] is False
    assert len(small["entries"]) == 3


def _store_facts(api: ApiClient) -> None:
    """100 facts of 60 KB on one entity (6 MB of text), and a small entity related to it."""
    for batch in range(4):
        facts = [_big_text(f"fact{batch}x{i}") for i in range(25)]
        reply = api.post(GRAPH + "/tools/remember", {"entity": "Alice", "entity_type": "person", "facts": facts})
        assert reply.status == 200, reply.body
        assert reply.body["facts_added"] == 25
    reply = api.post(GRAPH + "/tools/relate", {"source": "Alice", "relation": "knows", "target": "Bob"})
    assert reply.status == 200, reply.body


def test_graph_pages_by_bytes_and_loses_no_fact_other_reads_are_cut(api: ApiClient) -> None:
    _store_facts(api)
    facts: list[str] = []
    entities: set[str] = set()
    relations: list[str] = []
    cursor: str | None = None
    pages: list[dict[str, Any]] = []
    while True:
        page = _ok(api.get(GRAPH, query={"cursor": cursor} if cursor else None))
        pages.append(page)
        for entity in page["entities"]:
            entities.add(entity["name"])
            facts += [o["content"].split(" ", 1)[0] for o in entity["observations"]]
        relations += [r["relation_type"] for r in page["relations"]]
        assert page["truncated"] is (page["next_cursor"] is not None)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # The first page was cut, and paging returned every fact, entity and relation exactly once
    assert pages[0]["truncated"] is True
    assert len(pages) >= 2
    assert sorted(facts) == sorted(f"fact{b}x{i}" for b in range(4) for i in range(25))
    assert entities == {"Alice", "Bob"}
    assert relations == ["knows"]
    # And the unpaged graph reads (nodes, search, history) are cut below the limit and say so
    nodes = _ok(api.get(GRAPH + "/nodes", query=[("name", "Alice"), ("name", "Bob")]))
    assert nodes["truncated"] is True
    assert 0 < len(nodes["entities"][0]["observations"]) < 100
    found = _ok(api.get(GRAPH + "/search", query={"q": "quoted", "limit": 100}))
    assert found["truncated"] is True
    assert 0 < len(found["results"][0]["entity"]["observations"]) < 100
    history = _ok(api.get(GRAPH + "/entities/Alice/history"))
    assert history["truncated"] is True
    assert 0 < len(history["observations"]) < 100
    # Small answers are not cut
    bob = _ok(api.get(GRAPH + "/nodes", query={"name": "Bob"}))
    assert bob["truncated"] is False
    assert [r["relation_type"] for r in bob["relations"]] == ["knows"]
    # And the profile card keeps to its own budget
    reply = api.get(GRAPH + "/profile-card", query={"max_entities": 100, "max_observations": 50})
    card = _ok(reply)
    assert card["truncated"] is True
    # The whole answer (text and entities) stays within the card budget of 256 KiB on the wire
    assert reply.wire_bytes < 256 * 1024 + 4096
    shown = [o["content"] for e in card["entities"] for o in e["observations"]]
    assert 0 < len(shown) < 50
    assert all(fact in card["text"] for fact in shown)
    small = _ok(api.get(GRAPH + "/profile-card", query={"max_entities": 1, "max_observations": 1}))
    assert small["truncated"] is False


def test_episodes_are_cut_by_bytes(api: ApiClient) -> None:
    for batch in range(4):
        entries = [text_entry(_big_text(f"ep{batch}x{i}")) for i in range(25)]
        reply = api.post(GRAPH + "/episodes", {"session_id": f"s{batch}", "entries": entries})
        assert reply.status == 200, reply.body
    listed = _ok(api.get(GRAPH + "/episodes", query={"limit": 100}))
    assert listed["truncated"] is True
    assert 0 < len(listed["episodes"]) < 100
    found = _ok(api.get(GRAPH + "/episodes", query={"q": "quoted", "limit": 100}))
    assert found["truncated"] is True


@pytest.fixture(autouse=True)
def _both_tables(table: object) -> None:
    """Every test here runs on SQLite and on DynamoDB (the ``table`` fixture is parametrised)."""


def test_export_pages_by_wire_size_and_loses_nothing(api: ApiClient) -> None:
    # Given 70 entries of emoji near the 64 KiB limit: 16,000 characters each, 12 bytes each on the wire
    emoji = "\U0001f600" * 16_000
    entries = [text_entry(f"n{i} {emoji}") for i in range(70)]
    for start in range(0, 70, 10):
        assert api.put(f"{SCOPE}/sessions/e{start}/memories", {"entries": entries[start : start + 10]}).status == 200
    # When the user's data is exported page by page
    seen: list[str] = []
    cursor = None
    while True:
        page = _ok(api.get(SCOPE + "/export", query={"cursor": cursor} if cursor else None))
        seen += [e["id"] for e in page["entries"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # Then every page stayed under Lambda's limit (checked by _ok) and every entry came once
    assert len(seen) == len(set(seen)) == 70
