"""The sample events in events/ (also usable with `sam local invoke -e`) drive the real handler."""

from __future__ import annotations

from pathlib import Path

from agentmem.container import Container, set_container
from agentmem.keys import Scope
from agentmem.local.events import LocalContext
from agentmem.search import changes
from agentmem.search.snapshot import place_of
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.support import ApiClient, load_event


def test_sample_events_run_in_order_on_one_user(api: ApiClient) -> None:
    # Given the sample events of one user, in the order a client would send them
    expected = [
        ("api_health.json", 200),
        ("api_put_session.json", 200),
        ("api_add_entry.json", 201),
        ("api_search.json", 200),
        ("api_list.json", 200),
        ("api_delete_by_query.json", 200),
        ("api_delete_project.json", 200),
    ]
    results = {name: api.invoke(load_event(name)) for name, _ in expected}
    # Then each gets its documented status
    assert {name: r.status for name, r in results.items()} == dict(expected)
    # And they act on the same user: the search finds the stored entry, the project list sees both scopes
    assert results["api_search.json"].body["entries"][0]["content"]["parts"][0]["text"] == "I prefer dark mode"
    assert len(results["api_list.json"].body["entries"]) == 2
    assert results["api_delete_by_query.json"].body == {"deleted": 1}
    assert results["api_delete_project.json"].body == {"deleted": 1}


def test_graph_erasure_and_usage_sample_events(api: ApiClient, container: Container) -> None:
    # Given the graph events of one user
    remembered = api.invoke(load_event("api_graph_remember.json"))
    related = api.invoke(load_event("api_graph_relate.json"))
    assert (remembered.status, related.status) == (200, 200)
    # Then the graph search and the profile card see the facts, and the export holds them
    found = api.invoke(load_event("api_graph_search.json")).body["results"]
    assert [r["entity"]["name"] for r in found] == ["Pixel"]
    card = api.invoke(load_event("api_graph_profile_card.json")).body["text"]
    assert card.startswith("[Known about the user]")
    assert "Pixel (dog)" in card
    exported = api.invoke(load_event("api_export.json")).body
    assert {e["name"] for e in exported["graph"]["entities"]} == {"Pixel", "user"}
    # And the erasure starts, and the app's usage counts the requests
    erased = api.invoke(load_event("api_delete_user.json"))
    assert erased.status == 202
    assert erased.body["status"] == "RUNNING"
    container.deletion_runner.wait(30)
    status = api.get(f"/v1/apps/demo-app/users/user%2F42/deletions/{erased.body['deletion_id']}").body
    assert status["status"] == "SUCCEEDED"
    assert status["deleted"]["graph_items"] >= 2
    assert api.invoke(load_event("api_export.json")).body["graph"]["entities"] == []
    usage = api.invoke(load_event("api_usage.json"))
    assert usage.status == 200
    assert usage.body["app"] == "demo-app"
    assert sum(day["requests"] for day in usage.body["days"]) >= 6


def test_the_snapshot_request_sample_writes_the_users_snapshot(table: Table, tmp_path: Path) -> None:
    # Given a store whose search indexes are snapshotted, holding the sample session of the sample user
    from functions.snapshots.handler import handler

    container = Container(Settings(embedder="hashing", snapshots="files", snapshot_dir=str(tmp_path)), table=table)
    set_container(container)
    try:
        assert ApiClient().invoke(load_event("api_put_session.json")).status == 200
        partition = Scope("demo-app", "user/42").partition
        assert container.snapshots is not None
        assert not container.snapshots.exists(partition)
        # When the snapshot function gets the sample request (what the API sends after a cold load)
        answer = handler(load_event("snapshot_request.json"), LocalContext())
        # Then nothing failed and the user's snapshot is there, at the partition's version
        assert answer == {"batchItemFailures": []}
        stored = container.snapshots.get(partition)
        assert stored is not None
        stats = changes.MEMORY.stats(table, partition)
        assert place_of(stored)[:2] == (stats.epoch, stats.version)
    finally:
        set_container(None)
        # the snapshot a cold load asked for in the background is written before the table closes
        assert container.close(60)
