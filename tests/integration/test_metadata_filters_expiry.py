"""Metadata, the filter language and expiry (API.md "Metadata, filters and expiry") through the real handler
and the services, on SQLite and on DynamoDB (moto), with the hashing embedder and the exact index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import Scope
from agentmem.memory import records
from agentmem.memory.expiry import sweep
from agentmem.memory.filters import parse
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.search import changes
from agentmem.search.inverted_index import InvertedIndex
from agentmem.settings import Settings
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Table
from tests.support import ApiClient, count_items, inline_deletion_runner, scope_path, text_entry

ALICE = scope_path("app", "alice")
MODES = ("keyword", "semantic", "hybrid")


@pytest.fixture
def client(table: Table) -> Iterator[ApiClient]:
    built = Container(
        Settings(embedder="hashing", deletion_drain_seconds=0),
        table=table,
        embedder=HashingEmbedder(256),
        deletion_runner=inline_deletion_runner(),
    )
    set_container(built)
    yield ApiClient()
    set_container(None)


def entry(text: str, metadata: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    body = text_entry(text)
    if metadata is not None:
        body["metadata"] = metadata
    return {**body, **extra}


def store(api: ApiClient, text: str, metadata: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    reply = api.post(f"{ALICE}/memories", {"entry": entry(text, metadata, **extra)})
    assert reply.status == 201, reply.body
    return reply.body  # type: ignore[no-any-return]


def texts(entries: list[dict[str, Any]]) -> list[str]:
    return [e["content"]["parts"][0]["text"] for e in entries]


# -- 1. metadata -----------------------------------------------------------------------------------

METADATA = {"category": "billing", "priority": 2, "score": 0.75, "urgent": True, "tags": ["a", "b"], "big": 10**15}


def test_metadata_comes_back_unchanged_on_every_read(client: ApiClient) -> None:
    # Given an entry with every kind of metadata value
    created = store(client, "the invoice is overdue", METADATA)
    assert created["metadata"] == METADATA
    # Then get, list, query, every search mode and export return it unchanged
    assert client.get(f"{ALICE}/memories/{created['id']}").body["metadata"] == METADATA
    assert client.get(f"{ALICE}/memories").body["entries"][0]["metadata"] == METADATA
    assert client.post(f"{ALICE}/memories/query", {"filter": {}}).body["entries"][0]["metadata"] == METADATA
    for mode in MODES:
        hits = client.post(f"{ALICE}/memories/search", {"query": "invoice", "mode": mode}).body["entries"]
        assert [h["metadata"] for h in hits] == [METADATA], mode
    exported = client.get(f"{ALICE}/export").body["entries"]
    assert [e["metadata"] for e in exported] == [METADATA]
    # And JSON keeps the float a float and the integer an integer
    assert '"score":0.75' in client.get(f"{ALICE}/memories/{created['id']}").raw.replace(" ", "")


BAD_METADATA = [
    {f"k{i}": i for i in range(33)},  # 33 keys
    {"": "empty key"},
    {"a" * 65: 1},
    {"bad key": 1},
    {"k": "x" * 1025},
    {"k": None},
    {"k": {"nested": 1}},
    {"k": [1, 2]},
    {"k": ["s"] * 33},
    {"k": ["x" * 1025]},
    [1, 2],
]


@pytest.mark.parametrize("metadata", BAD_METADATA, ids=[str(i) for i in range(len(BAD_METADATA))])
def test_bad_metadata_is_422_and_writes_nothing(client: ApiClient, table: Table, metadata: Any) -> None:
    before = count_items(table)
    one = client.post(f"{ALICE}/memories", {"entry": entry("hello", metadata)})
    # A session where only the last entry is bad is refused whole
    batch = client.put(f"{ALICE}/sessions/s1/memories", {"entries": [entry("fine"), entry("bad", metadata)]})
    assert (one.status, batch.status) == (422, 422), (one.body, batch.body)
    assert one.error_code == "invalid_input"
    assert count_items(table) == before


def test_a_non_finite_number_in_metadata_is_422(client: ApiClient, table: Table) -> None:
    before = count_items(table)
    raw = json.dumps({"entry": entry("hello")})[:-2] + ', "metadata": {"k": NaN}}}'
    assert client.post(f"{ALICE}/memories", raw_body=raw).status == 422
    raw = json.dumps({"entry": entry("hello", {"k": 1})}).replace('"k": 1', '"k": 1e400')
    assert client.post(f"{ALICE}/memories", raw_body=raw).status == 422
    assert count_items(table) == before


# -- 2. filters ------------------------------------------------------------------------------------


def test_search_filters_before_ranking_in_every_mode(client: ApiClient) -> None:
    # Given 70 entries about coffee: the 5 of team red are the least relevant ones
    entries = [entry("coffee coffee coffee espresso beans", {"team": "blue", "n": i}) for i in range(65)]
    entries += [entry(f"a note on coffee number {i}", {"team": "red", "n": 100 + i}) for i in range(5)]
    assert client.put(f"{ALICE}/sessions/s1/memories", {"entries": entries}).status == 200
    for mode in MODES:
        # When searching with a filter on team red
        body = {"query": "coffee espresso", "top_k": 5, "mode": mode, "filter": {"team": "red"}}
        hits = client.post(f"{ALICE}/memories/search", body).body["entries"]
        # Then all five red entries come back, though 65 better ones were cut out before ranking
        assert sorted(h["metadata"]["n"] for h in hits) == [100, 101, 102, 103, 104], mode
        # And an operator filter selects by number
        body["filter"] = {"$and": [{"team": "blue"}, {"n": {"$gte": 60}}]}
        hits = client.post(f"{ALICE}/memories/search", body).body["entries"]
        assert sorted(h["metadata"]["n"] for h in hits) == [60, 61, 62, 63, 64], mode


def test_query_is_newest_first_with_a_cursor_and_project_visibility(client: ApiClient) -> None:
    # Given global and project entries, tagged
    for i in range(5):
        client.post(
            f"{ALICE}/memories",
            {"entry": entry(f"global {i}", {"kind": "note"}, timestamp=f"2026-01-0{i + 1}T00:00:00Z")},
        )
    client.post(
        f"{ALICE}/memories",
        {"entry": entry("project note", {"kind": "note"}, timestamp="2026-02-01T00:00:00Z"), "project_id": "p"},
    )
    client.post(f"{ALICE}/memories", {"entry": entry("untagged", timestamp="2026-03-01T00:00:00Z")})
    # When querying page by page from the project
    seen: list[str] = []
    cursor = None
    while True:
        body: dict[str, Any] = {"filter": {"kind": "note"}, "project_id": "p", "limit": 2}
        if cursor:
            body["cursor"] = cursor
        page = client.post(f"{ALICE}/memories/query", body).body
        seen += texts(page["entries"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # Then every match comes once, newest first, global and project alike
    assert seen == ["project note", "global 4", "global 3", "global 2", "global 1", "global 0"]
    # And from the global scope the project's entry is not visible
    glob = client.post(f"{ALICE}/memories/query", {"filter": {"kind": "note"}}).body["entries"]
    assert "project note" not in texts(glob)
    # And the built-in fields filter too (timestamps in any RFC 3339 form compare in time)
    since = client.post(f"{ALICE}/memories/query", {"filter": {"timestamp": {"$gte": "2026-01-04T00:00:00+00:00"}}})
    assert texts(since.body["entries"]) == ["untagged", "global 4", "global 3"]


def test_delete_by_filter_and_by_query_and_filter(client: ApiClient) -> None:
    for i in range(6):
        store(client, f"ticket {i} about the printer" if i % 2 else f"ticket {i} about the screen", {"ticket": i})
    # Query and filter: entries matching both
    both = client.post(f"{ALICE}/memories/delete", {"query": "printer", "filter": {"ticket": {"$in": [1, 2, 3]}}})
    assert both.body == {"deleted": 2}
    # Filter alone
    alone = client.post(f"{ALICE}/memories/delete", {"filter": {"ticket": {"$lt": 2}}})
    assert alone.body == {"deleted": 1}
    left = sorted(e["metadata"]["ticket"] for e in client.get(f"{ALICE}/memories").body["entries"])
    assert left == [2, 4, 5]
    # Neither: 400, nothing deleted
    for body in ({}, {"query": ""}, {"filter": {}}, {"query": "", "filter": {}}):
        reply = client.post(f"{ALICE}/memories/delete", body)
        assert reply.status == 400, body
    assert len(client.get(f"{ALICE}/memories").body["entries"]) == 3


BAD_FILTERS = [
    {"k": {"$near": 1}},
    {"$nor": [{"k": 1}]},
    {"k": None},
    {"k": {"nested": 1}},
    {"k": {}},
    {"$and": []},
    {"$or": {"k": 1}},
    {"$not": [{"k": 1}]},
    {"k": {"$in": []}},
    {"k": {"$in": "x"}},
    {"k": {"$exists": "yes"}},
    {"bad key": 1},
    {"$and": [{f"k{i}": i} for i in range(51)]},
    {"k": {"$in": list(range(51))}},
    [{"k": 1}],
]


@pytest.mark.parametrize("document", BAD_FILTERS, ids=[str(i) for i in range(len(BAD_FILTERS))])
def test_a_malformed_filter_is_422_on_every_route_and_deletes_nothing(
    client: ApiClient, table: Table, document: Any
) -> None:
    store(client, "keep me", {"k": 1})
    before = count_items(table)
    for path, body in (
        ("search", {"query": "keep", "filter": document}),
        ("query", {"filter": document}),
        ("delete", {"query": "keep", "filter": document}),
    ):
        reply = client.post(f"{ALICE}/memories/{path}", body)
        assert reply.status == 422, (path, reply.body)
    assert count_items(table) == before


# -- 3. expiry -------------------------------------------------------------------------------------


def test_an_expired_entry_is_never_returned_but_exported_until_removed(client: ApiClient, table: Table) -> None:
    # Given an entry that expired a minute ago and one that expires in a day
    past = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    gone = store(client, "the door code is 1234", {"kind": "secret"}, expires_at=past)
    kept = store(client, "the door code is 9876", {"kind": "secret"})
    assert gone["expires_at"] == past.replace("Z", ".000Z")
    assert kept["expires_at"] is None
    # Then get is 404, and no search, list, query or delete count includes it
    assert client.get(f"{ALICE}/memories/{gone['id']}").status == 404
    for mode in MODES:
        hits = client.post(f"{ALICE}/memories/search", {"query": "door code", "mode": mode}).body["entries"]
        assert [h["id"] for h in hits] == [kept["id"]], mode
    assert [e["id"] for e in client.get(f"{ALICE}/memories").body["entries"]] == [kept["id"]]
    queried = client.post(f"{ALICE}/memories/query", {"filter": {"kind": "secret"}}).body["entries"]
    assert [e["id"] for e in queried] == [kept["id"]]
    assert client.delete(f"{ALICE}/memories/{gone['id']}").status == 404
    # And export still lists it, with its expires_at, while the store holds it
    exported = {e["id"]: e["expires_at"] for e in client.get(f"{ALICE}/export").body["entries"]}
    assert exported == {gone["id"]: gone["expires_at"], kept["id"]: None}
    # And a delete by filter counts only the live entry
    assert client.post(f"{ALICE}/memories/delete", {"filter": {"kind": "secret"}}).body == {"deleted": 1}
    # And erasure removes the expired entry too: the store holds nothing of the user afterwards
    assert client.delete(ALICE).status == 202
    assert client.get(f"{ALICE}/export").body["entries"] == []
    held = [
        item
        for item in table.query(Scope("app", "alice").partition, include_expired=True).items
        if item["sk"].startswith(records.ENTRY)
    ]
    assert held == []


def test_ttl_seconds_applies_to_entries_without_their_own_expiry(client: ApiClient) -> None:
    own = (datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    before = datetime.now(UTC)
    reply = client.put(
        f"{ALICE}/sessions/s1/memories",
        {"entries": [entry("first"), entry("second", expires_at=own)], "ttl_seconds": 3600},
    )
    after = datetime.now(UTC)
    assert reply.status == 200
    by_text = {texts([e])[0]: e["expires_at"] for e in client.get(f"{ALICE}/memories").body["entries"]}
    assert by_text["second"] == own
    first = datetime.fromisoformat(by_text["first"].replace("Z", "+00:00"))
    assert before + timedelta(seconds=3599) <= first <= after + timedelta(seconds=3600)
    single = client.post(f"{ALICE}/memories", {"entry": entry("third"), "ttl_seconds": 60}).body
    assert single["expires_at"] is not None
    for bad in (0, 315360001, "soon"):
        assert client.post(f"{ALICE}/memories", {"entry": entry("x"), "ttl_seconds": bad}).status == 422


def test_an_entry_stops_being_returned_at_its_expiry_before_any_removal(table: Table) -> None:
    # Given a service whose clock we move, and an entry that expires in an hour
    now = [datetime.now(UTC)]
    memory = MemoryService(table, clock=lambda: now[0], embedder=HashingEmbedder(64))
    scope = Scope("app", "bob")
    text = MemoryEntry.model_validate({"content": {"parts": [{"text": "parking on level 3"}]}})
    stored = memory.add_entry(scope, text, ttl_seconds=3600)
    assert memory.search(scope, "parking", mode="semantic").entries
    # When the service's clock passes the expiry (the store still holds the item: its ttl is real time)
    now[0] += timedelta(hours=2)
    assert table.get(scope.partition, records.entry_sk(stored.id)) is not None
    # Then no read returns it
    for mode in MODES:
        assert memory.search(scope, "parking", mode=mode).entries == [], mode
    assert memory.list_recent(scope).entries == []
    assert memory.query(scope, parse({"author": {"$exists": False}})).entries == []
    assert memory.delete_entries(scope, "parking") == 0


def test_the_sweep_removes_expired_entries_and_what_points_at_them(sqlite_table: SqliteTable) -> None:
    memory = MemoryService(sqlite_table)
    scope = Scope("app", "carol")
    past = datetime.now(UTC) - timedelta(seconds=5)
    memory.add_entry(scope, MemoryEntry.model_validate({"content": {"parts": [{"text": "lasting words"}]}}))
    baseline = count_items(sqlite_table)
    expiring = {"content": {"parts": [{"text": "fleeting words here"}]}, "expires_at": past}
    memory.add_session(scope, "s1", [MemoryEntry.model_validate(expiring)] * 3)
    assert count_items(sqlite_table) > baseline
    stats = InvertedIndex(sqlite_table, records.INDEX_NAMESPACE)
    docs_before = sqlite_table.get(scope.partition, stats.stats_sk)
    assert docs_before is not None
    assert docs_before["docs"] == 4
    # When the sweep runs
    assert sweep(sqlite_table, memory) == 3
    # Then the entries, pointers and session rows are gone from the file (what expires beside them is the
    # change log's rows: the first entry's write, the session's and the sweep's); the statistics follow
    rows = sqlite_table._connection().execute("SELECT sk FROM items WHERE ttl IS NOT NULL").fetchall()
    assert [sk for (sk,) in rows if not sk.startswith(changes.MEMORY.prefix)] == []
    assert len(rows) == 3
    assert count_items(sqlite_table) == baseline + 1 + 2  # the session head of s1 stays (the session exists)
    after = sqlite_table.get(scope.partition, stats.stats_sk)
    assert after is not None
    assert after["docs"] == 1
    assert [e.content["parts"][0]["text"] for e in memory.list_recent(scope).entries] == ["lasting words"]
    # And a second sweep finds nothing
    assert sweep(sqlite_table, memory) == 0
