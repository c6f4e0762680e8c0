"""The export hands the user the API's documented fields only (issue 43, point 8c): entries as the API
returns them (with expires_at), entities, observations (naming their entity) and relations as the graph
routes show them, episodes as GET /graph/episodes shows them, each with its project; never the table's
keys or bookkeeping (sk, seg, rev, an entity's fact ids, tokens). On both tables, through the handler."""

from __future__ import annotations

from typing import Any

from tests.support import ApiClient, scope_path, text_entry

ALICE = scope_path("shop", "alice")
GRAPH = ALICE + "/graph"

ENTRY = {
    "id",
    "session_id",
    "project_id",
    "content",
    "author",
    "timestamp",
    "metadata",
    "expires_at",
    "revision",
    "updated_at",
}
VERSION = {"memory_id", "project_id", "revision", "content", "metadata", "valid_from", "valid_to", "recorded_at"}
ENTITY = {"name", "entity_type", "project_id", "created_at", "updated_at"}
OBSERVATION = {"entity", "project_id", "id", "content", "valid_from", "valid_to", "recorded_at", "expired_at", "source"}
RELATION = {
    "id",
    "source",
    "relation_type",
    "target",
    "valid_from",
    "valid_to",
    "recorded_at",
    "expired_at",
    "project_id",
}
EPISODE = {"id", "session_id", "project_id", "author", "text", "timestamp", "expires_at"}


def _ok(reply: Any) -> Any:
    assert reply.status in (200, 201), reply.body
    return reply.body


def test_the_export_holds_the_apis_fields_and_no_storage_internals(api: ApiClient) -> None:
    # Given alice's entries (one expiring), a graph with a superseded fact, a relation and episodes, in two scopes
    entry = {**text_entry("My dog is called Pixel"), "expires_at": "2099-01-01T00:00:00Z", "metadata": {"k": 1}}
    pixel_id = _ok(api.post(ALICE + "/memories", {"entry": entry, "project_id": "pets"}))["id"]
    corrected = {"content": {"role": "user", "parts": [{"text": "My dog is called Pixel, a beagle"}]}}
    _ok(api.patch(ALICE + f"/memories/{pixel_id}", {**corrected, "project_id": "pets"}))
    _ok(api.put(ALICE + "/sessions/chat-1/memories", {"entries": [text_entry("I live in Lisbon")]}))
    _ok(api.post(GRAPH + "/tools/remember", {"entity": "Pixel", "entity_type": "dog", "facts": ["is three"]}))
    fact = _ok(api.post(GRAPH + "/entities/Pixel/observations", {"observations": ["likes the beach"]}))
    _ok(api.post(GRAPH + f"/observations/{fact['observations'][0]['id']}/supersede", {"content": "likes the sea"}))
    _ok(api.post(GRAPH + "/tools/relate", {"source": "alice", "relation": "owns", "target": "Pixel"}))
    _ok(api.post(GRAPH + "/episodes", {"session_id": "s1", "entries": [text_entry("hello")]}))
    _ok(api.post(GRAPH + "/episodes", {"session_id": "s2", "entries": [text_entry("bye")], "project_id": "trip"}))
    # When the export is read to its end
    pages, cursor = [], None
    while True:
        page = _ok(api.get(ALICE + "/export", query={"cursor": cursor} if cursor else None))
        pages.append(page)
        if (cursor := page["next_cursor"]) is None:
            break
    entries = [e for p in pages for e in p["entries"]]
    graph = {kind: [i for p in pages for i in p["graph"][kind]] for kind in ("entities", "observations", "relations")}
    episodes = [e for p in pages for e in p["episodes"]]
    versions = [v for p in pages for v in p["memory_history"]]
    # Then every item holds exactly the API's fields
    assert [set(e) for e in entries] == [ENTRY] * 2
    assert [set(e) for e in graph["entities"]] == [ENTITY] * 2  # Pixel, and alice named by the relation
    assert [set(o) for o in graph["observations"]] == [OBSERVATION] * 3
    assert [set(r) for r in graph["relations"]] == [RELATION]
    assert [set(e) for e in episodes] == [EPISODE] * 2
    assert [set(v) for v in versions] == [VERSION]
    # And what the user needs is there: the expiry, the history of a fact, the projects
    pixel = next(e for e in entries if e["project_id"] == "pets")
    assert pixel["expires_at"] == "2099-01-01T00:00:00.000Z"
    assert pixel["metadata"] == {"k": 1}
    assert (pixel["revision"], versions[0]["memory_id"], versions[0]["revision"]) == (2, pixel_id, 1)
    assert versions[0]["content"]["parts"][0]["text"] == "My dog is called Pixel"
    facts = {o["content"]: o for o in graph["observations"] if o["entity"] == "Pixel"}
    assert set(facts) == {"is three", "likes the beach", "likes the sea"}
    assert facts["likes the beach"]["expired_at"] is not None
    assert facts["likes the sea"]["expired_at"] is None
    assert {(e["text"], e["project_id"]) for e in episodes} == {("hello", None), ("bye", "trip")}
    assert {(e["name"], e["entity_type"]) for e in graph["entities"]} >= {("Pixel", "dog")}
