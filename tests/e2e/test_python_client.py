"""The bundled Python client against the real local server."""

from __future__ import annotations

import uuid

import pytest

from agentmem.client import MemoryClient
from agentmem.errors import Conflict, InvalidInput, NotFound
from tests.e2e.conftest import LiveServer


def test_the_client_covers_the_memory_routes(live_server: LiveServer) -> None:
    memory = MemoryClient(live_server.url).user("client-app", f"user/{uuid.uuid4().hex}")
    # Given a session and a project entry stored through the client
    assert memory.add_session("chat", ["I prefer dark mode", "My dog is called Pixel"]) == {
        "session_id": "chat",
        "stored": 2,
        "skipped": 0,
    }
    budget = memory.add_entry("Trip budget is 2000 EUR", project_id="trip", idempotency_key="once")
    assert memory.add_entry("Trip budget is 2000 EUR", project_id="trip", idempotency_key="once") == budget
    # When reading them back
    # (keyword mode: exact word matches; the default hybrid mode ranks every entry, best first)
    assert [e["id"] for e in memory.search("budget", project_id="trip", mode="keyword")] == [budget["id"]]
    assert memory.search("budget", mode="keyword") == []
    assert memory.search("budget", project_id="trip")[0]["id"] == budget["id"]
    assert len(list(memory.iter_entries(project_id="trip", page_size=1))) == 3
    assert memory.get_entry(budget["id"])["project_id"] == "trip"
    # Then deletes report what they removed, and errors raise the library's error classes
    assert memory.delete_entries("dark mode") == 1
    assert memory.delete_session("chat") == 1
    assert memory.delete_project("trip") == 1
    with pytest.raises(NotFound) as missing:
        memory.get_entry(budget["id"])
    assert missing.value.code == "not_found"
    with pytest.raises(InvalidInput):
        memory.search("x", top_k=500)


def test_the_client_corrects_a_memory_and_reads_its_history(live_server: LiveServer) -> None:
    memory = MemoryClient(live_server.url).user("client-app", f"fix/{uuid.uuid4().hex}")
    # Given a memory in a project
    entry = memory.add_entry("I live in Paris", project_id="home", metadata={"kind": "address"})
    assert entry["revision"] == 1
    # When its text is corrected at its revision, then its metadata alone
    fixed = memory.update(entry["id"], "I live in Lyon", revision=1, project_id="home")
    assert (fixed["id"], fixed["revision"], fixed["metadata"]) == (entry["id"], 2, {"kind": "address"})
    assert memory.update(entry["id"], metadata=None)["metadata"] == {}
    # Then search finds only the new words, and the history holds every version, oldest first
    assert memory.search("Paris", project_id="home", mode="keyword") == []
    assert [e["id"] for e in memory.search("Lyon", project_id="home", mode="keyword")] == [entry["id"]]
    versions = memory.memory_history(entry["id"])
    assert [(v["revision"], v["content"]["parts"][0]["text"]) for v in versions] == [
        (1, "I live in Paris"),
        (2, "I live in Lyon"),
        (3, "I live in Lyon"),
    ]
    assert versions[-1]["valid_to"] is None
    # And a stale revision raises the client's Conflict with the API's code, changing nothing
    with pytest.raises(Conflict) as stale:
        memory.update(entry["id"], "I live in Nice", revision=1)
    assert stale.value.code == "revision_conflict"
    assert memory.get_entry(entry["id"])["revision"] == 3
    # And a deleted memory has no history
    memory.delete_entry(entry["id"])
    with pytest.raises(NotFound):
        memory.memory_history(entry["id"])


def test_the_client_covers_the_graph_and_erasure(live_server: LiveServer) -> None:
    import time

    memory = MemoryClient(live_server.url).user("client-app", f"graph-{uuid.uuid4().hex}")
    # Given facts told through the agent tools
    assert memory.remember("Pixel", ["likes the beach"], entity_type="dog")["facts_added"] == 1
    assert memory.relate("Alice", "owns", "Pixel")["related"] is True
    # Then the graph answers searches and builds the profile card
    assert [r["entity"]["name"] for r in memory.search_nodes("beach")] == ["Pixel"]
    assert "Pixel (dog): likes the beach" in memory.profile_card()
    assert {e["name"] for e in memory.open_nodes(["Pixel", "Alice"])["entities"]} == {"Pixel", "Alice"}
    assert len(memory.history("Pixel")["observations"]) == 1
    # When the user is erased
    started = memory.delete_user()
    deadline = time.monotonic() + 30
    status = memory.deletion_status(started["deletion_id"])
    while status["status"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.1)
        status = memory.deletion_status(started["deletion_id"])
    # Then nothing is left to export
    assert status["status"] == "SUCCEEDED"
    pages = list(memory.export())
    assert pages[-1]["entries"] == []
    assert pages[-1]["graph"]["entities"] == []
