"""A delete that answered is never undone by a write that read before it (issue 33, point 1), on both tables
through the real handler.

An AgentCore record update reads the record, embeds its new text, then writes. The delete is made to land
exactly in that window, not left to the scheduler: the embedder the update calls runs the delete (in
another thread, as another Lambda container would) before it answers. The update must then report the
record FAILED (not found), and no route may serve the record again: GetMemoryRecord,
RetrieveMemoryRecords, ListMemoryRecords, the REST routes (get, search, list, export).

The graph's hard delete of an entity races the other way: a ``remember`` of the same name lands between
the delete removing the entity and sweeping its facts; what the remember wrote is then either all there
or all gone, never an entity whose fact was swept while it still claims to hold it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.table import Page, Table
from tests.support import ApiClient, ArmedEmbedder, scope_path

MEMORY = "race-memory-0001"
RECORDS = f"/agentcore/memories/{MEMORY}/memoryRecords"
NAMESPACE = "/facts/alice"


@pytest.fixture
def embedder() -> ArmedEmbedder:
    return ArmedEmbedder(384)


@pytest.fixture
def api(table: Table, embedder: ArmedEmbedder) -> Iterator[ApiClient]:
    set_container(Container(Settings(deletion_drain_seconds=0), table=table, embedder=embedder))
    yield ApiClient()
    set_container(None)


def create_record(api: ApiClient, text: str) -> str:
    reply = api.post(
        f"{RECORDS}/batchCreate",
        {
            "records": [
                {"requestIdentifier": "r1", "namespaces": [NAMESPACE], "content": {"text": text}, "timestamp": 1.7e9}
            ]
        },
    )
    assert reply.status == 201, reply.body
    return str(reply.body["successfulRecords"][0]["memoryRecordId"])


def update(api: ApiClient, record: str, text: str) -> dict[str, Any]:
    body = {"records": [{"memoryRecordId": record, "timestamp": 1.7e9 + 60, "content": {"text": text}}]}
    reply = api.post(f"{RECORDS}/batchUpdate", body)
    assert reply.status == 200, reply.body
    return reply.body  # type: ignore[no-any-return]


def everything_served(api: ApiClient, record: str) -> dict[str, Any]:
    """What every route that could serve the record answers about it."""
    user = scope_path(MEMORY, "alice")
    search = {"searchCriteria": {"searchQuery": "sailing boat"}, "namespace": NAMESPACE}
    return {
        "get": api.get(f"/agentcore/memories/{MEMORY}/memoryRecord/{record}").status,
        "retrieve": api.post(f"/agentcore/memories/{MEMORY}/retrieve", search).body["memoryRecordSummaries"],
        "list": api.post(RECORDS, {"namespace": NAMESPACE}).body["memoryRecordSummaries"],
        "search": api.post(f"{user}/memories/search", {"query": "sailing boat"}).body["entries"],
        "recent": api.get(f"{user}/memories").body["entries"],
        "export": api.get(f"{user}/export").body["entries"],
    }


@pytest.mark.parametrize("delete_by", ["DeleteMemoryRecord", "BatchDeleteMemoryRecords", "REST DELETE"])
def test_a_record_deleted_while_its_update_embeds_stays_deleted(
    api: ApiClient, embedder: ArmedEmbedder, delete_by: str
) -> None:
    # Given a record, and a delete that lands after its update read it and before the update writes
    record = create_record(api, "I sail a small wooden boat")
    deleted: list[int] = []

    def delete() -> None:
        if delete_by == "DeleteMemoryRecord":
            deleted.append(api.delete(f"{RECORDS}/{record}").status)
        elif delete_by == "BatchDeleteMemoryRecords":
            reply = api.post(f"{RECORDS}/batchDelete", {"records": [{"memoryRecordId": record}]})
            deleted.append(200 if reply.body["successfulRecords"] else 500)
        else:
            entry_id = api.get(scope_path(MEMORY, "alice") + "/memories").body["entries"][0]["id"]
            deleted.append(api.delete(scope_path(MEMORY, "alice") + f"/memories/{entry_id}").status)

    embedder.action = delete
    # When the update runs
    answer = update(api, record, "I sail a bigger sailing boat now")
    # Then the delete answered, and the update lost: the record is reported failed, not found
    assert deleted == [204 if delete_by == "REST DELETE" else 200]
    assert answer["successfulRecords"] == []
    assert [(f["memoryRecordId"], f["status"], f["errorCode"]) for f in answer["failedRecords"]] == [
        (record, "FAILED", 404)
    ]
    # And no route serves the record, in either version
    assert everything_served(api, record) == {
        "get": 404,
        "retrieve": [],
        "list": [],
        "search": [],
        "recent": [],
        "export": [],
    }


def test_an_update_that_wins_the_race_is_deleted_by_the_delete_after_it(
    api: ApiClient, embedder: ArmedEmbedder
) -> None:
    # Given a record updated twice at once: the second update lands while the first one embeds
    record = create_record(api, "I sail a small wooden boat")
    second: list[dict[str, Any]] = []
    embedder.action = lambda: second.append(update(api, record, "I sold the boat and bought a kayak"))
    first = update(api, record, "I sail a bigger sailing boat now")
    # Then both succeed, one after the other: the first read again after it lost, and wrote last
    assert [r["status"] for r in second[0]["successfulRecords"]] == ["SUCCEEDED"]
    assert [r["status"] for r in first["successfulRecords"]] == ["SUCCEEDED"]
    got = api.get(f"/agentcore/memories/{MEMORY}/memoryRecord/{record}")
    assert got.body["memoryRecord"]["content"]["text"] == "I sail a bigger sailing boat now"
    # And a delete after them leaves nothing
    assert api.delete(f"{RECORDS}/{record}").status == 200
    assert everything_served(api, record)["get"] == 404
    assert everything_served(api, record)["export"] == []


class SweepingTable:
    """The real table; once armed, the first read of an entity's facts (the delete's sweep) first runs
    ``action`` to the end in another thread."""

    def __init__(self, table: Table, prefix: str) -> None:
        self._table = table
        self._prefix = prefix
        self.action: Callable[[], None] | None = None

    def query(self, pk: str, prefix: str = "", **kwargs: Any) -> Page:
        if self.action is not None and prefix.startswith(self._prefix):
            action, self.action = self.action, None
            worker = threading.Thread(target=action)
            worker.start()
            worker.join(timeout=60)
        return self._table.query(pk, prefix, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def test_a_remember_landing_inside_a_delete_of_its_entity_keeps_what_it_answered(table: Table) -> None:
    from agentmem.graph import records

    sweeping = SweepingTable(table, records.observation_prefix("Pixel"))
    set_container(Container(Settings(deletion_drain_seconds=0), table=sweeping))  # type: ignore[arg-type]
    try:
        api = ApiClient()
        graph = scope_path("demo", "alice") + "/graph"
        api.post(f"{graph}/tools/remember", {"entity": "Pixel", "facts": ["is a phone"]})
        remembered: list[Any] = []
        # Given a remember of the entity that lands after its delete removed the entity, before the sweep
        sweeping.action = lambda: remembered.append(
            api.post(f"{graph}/tools/remember", {"entity": "Pixel", "facts": ["has a cracked screen"]})
        )
        # When the delete runs
        assert api.delete(f"{graph}/entities/Pixel").status == 204
        assert [r.status for r in remembered] == [200]
        # Then the deleted fact is gone; the fact the remember answered for is shown, or the entity is gone
        history = api.get(f"{graph}/entities/Pixel/history")
        if history.status == 200:
            facts = [o["content"] for o in history.body["observations"]]
            assert facts == ["has a cracked screen"]
        else:
            assert history.status == 404
        # And remembering it again stores it if it is not shown (nothing claims a fact that was swept)
        again = api.post(f"{graph}/tools/remember", {"entity": "Pixel", "facts": ["has a cracked screen"]})
        shown = api.get(f"{graph}/entities/Pixel/history").body["observations"]
        assert [o["content"] for o in shown] == ["has a cracked screen"], again.body
    finally:
        set_container(None)
