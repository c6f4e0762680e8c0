"""A deleted memory is gone at once, in every process, and answers as AgentCore does (issue 40, point 3), on both
tables, through the API handler with keys: AgentCore's control plane (CreateMemory, GetMemory, DeleteMemory)
and its data plane, and the REST API.

A process trusts a memory it read for a few seconds (extraction/config.py CACHE_SECONDS) and a request runs for
the API's timeout: a write that read the memory before the delete may land after it. The memory is removed only
once no such write can still land, and every user written meanwhile is erased with the others."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.extraction.config import CACHE_SECONDS
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.support import ApiClient, Clock, inline_deletion_runner, scope_path, text_entry

DRAIN = 20


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _process(table: Table, clock: Clock) -> Container:
    return Container(
        Settings(auth="required", embedder="hashing", deletion_drain_seconds=DRAIN),
        table=table,
        deletion_runner=inline_deletion_runner(),
        clock=clock,
    )


@pytest.fixture
def owner(table: Table, clock: Clock) -> Iterator[tuple[Container, str]]:
    built = _process(table, clock)
    set_container(built)
    yield built, built.tenants.create_key("owner-app").secret
    set_container(None)


def _create(api: ApiClient, key: str, token: str | None = None) -> str:
    body = {"name": "doomed", "eventExpiryDuration": 7, **({"clientToken": token} if token else {})}
    made = api.post("/agentcore/memories/create", body, headers={"x-api-key": key})
    assert made.status in (200, 201, 202), made.body
    return str(made.body["memory"]["id"])


def _get(api: ApiClient, key: str, memory: str) -> tuple[int, str | None]:
    """GetMemory's status and AgentCore's error type (its x-amzn-ErrorType header)."""
    reply = api.get(f"/agentcore/memories/{memory}/details", headers={"x-api-key": key})
    kind = {k.lower(): v for k, v in reply.headers.items()}.get("x-amzn-errortype")
    return reply.status, kind.split(":")[0] if kind else None


def test_deleting_a_memory_with_no_users_succeeds_and_its_owner_then_finds_it_gone(
    owner: tuple[Container, str], clock: Clock
) -> None:
    _, key = owner
    api = ApiClient()
    memory = _create(api, key)
    # When its owner deletes a memory nobody wrote to
    deleted = api.delete(f"/agentcore/memories/{memory}/delete", headers={"x-api-key": key})
    # Then the delete succeeded (it answered 404 before), and once drained the memory is gone: 404 to its owner
    # (403 before), and to every data-plane call
    assert deleted.status in (200, 202), deleted.body
    assert deleted.body["status"] == "DELETING"
    clock.hold()
    clock.advance(DRAIN + CACHE_SECONDS + 1)
    assert _get(api, key, memory) == (404, "ResourceNotFoundException")
    assert _get(api, key, memory) == (404, "ResourceNotFoundException")
    event = {"actorId": "alice", "sessionId": "s", "eventTimestamp": 1.77e9, "payload": []}
    wrote = api.post(f"/agentcore/memories/{memory}/events", event, headers={"x-api-key": key})
    assert wrote.status == 404, wrote.body


def test_a_create_retried_with_its_client_token_after_the_delete_makes_a_new_memory(
    owner: tuple[Container, str], clock: Clock
) -> None:
    _, key = owner
    api = ApiClient()
    first = _create(api, key, token="once-only-token")
    assert _create(api, key, token="once-only-token") == first  # a retry: the same memory
    assert api.delete(f"/agentcore/memories/{first}/delete", headers={"x-api-key": key}).status in (200, 202)
    clock.hold()
    clock.advance(DRAIN + CACHE_SECONDS + 1)
    assert _get(api, key, first)[0] == 404
    # When the same token is sent again within the day, after the delete: a new memory, not a 404
    again = _create(api, key, token="once-only-token")
    assert again != first
    assert _get(api, key, again)[0] == 200


def test_a_write_by_a_process_that_read_the_memory_before_its_delete_is_erased_with_it(
    owner: tuple[Container, str], table: Table, clock: Clock
) -> None:
    deleter, key = owner
    api = ApiClient()
    memory = _create(api, key)
    assert api.post(f"{scope_path(memory, 'alice')}/memories", {"entry": text_entry("x")}, headers={"x-api-key": key})
    # Given another process that read the memory (its cache holds it for a few seconds)
    other = _process(table, clock)
    assert other.memories.get(memory) is not None
    clock.hold()
    # When the memory is deleted, and that process then writes for a user nobody wrote for before
    assert api.delete(f"/agentcore/memories/{memory}/delete", headers={"x-api-key": key}).status in (200, 202)
    set_container(other)
    try:
        late = api.post(
            f"{scope_path(memory, 'bob')}/memories", {"entry": text_entry("late")}, headers={"x-api-key": key}
        )
    finally:
        set_container(deleter)
    # Then the memory is not gone while such a write could still land ...
    assert _get(api, key, memory)[0] == 200
    # ... and once it is, nothing of that user remains (the user was listed and erased with the others)
    clock.advance(DRAIN + CACHE_SECONDS + 1)
    for _ in range(3):  # each look at a deleting memory moves its deletion on
        status, _ = _get(api, key, memory)
    assert status == 404
    assert late.status == 201, late.body  # (the other process trusted what it had read)
    left = [k for k in _keys(table) if "bob" in k[0] or "bob" in k[1]]
    assert left == [], left
    assert api.get(f"{scope_path(memory, 'bob')}/export", headers={"x-api-key": key}).status == 404


def _keys(table: Table) -> list[tuple[str, str]]:
    from tests.support import stored_keys

    return stored_keys(table)


def test_without_keys_a_deleted_memory_accepts_nothing_and_serves_nothing(table: Table, clock: Clock) -> None:
    # Given a local store without keys (auth none) and a memory with a user's event
    built = Container(
        Settings(embedder="hashing", deletion_drain_seconds=DRAIN),
        table=table,
        deletion_runner=inline_deletion_runner(),
        clock=clock,
    )
    set_container(built)
    try:
        api = ApiClient()
        made = api.post("/agentcore/memories/create", {"name": "local", "eventExpiryDuration": 7})
        memory = made.body["memory"]["id"]
        event = {"actorId": "alice", "sessionId": "s", "eventTimestamp": 1.77e9, "payload": []}
        assert api.post(f"/agentcore/memories/{memory}/events", event).status == 201
        # When it is deleted, and the deletion has ended
        assert api.delete(f"/agentcore/memories/{memory}/delete").status in (200, 202)
        clock.hold()
        clock.advance(DRAIN + CACHE_SECONDS + 1)
        for _ in range(3):
            status = api.get(f"/agentcore/memories/{memory}/details").status
        assert status == 404
        # Then a new event is refused as AgentCore does (it was accepted, 201), and nothing is served over REST
        wrote = api.post(f"/agentcore/memories/{memory}/events", event)
        assert wrote.status == 404, wrote.body
        assert api.get(f"{scope_path(memory, 'alice')}/export").status == 404
        assert api.post(f"{scope_path(memory, 'bob')}/memories", {"entry": text_entry("x")}).status == 404
    finally:
        set_container(None)


EVERY_ROUTE = [
    ("GetMemory", "GET", "/agentcore/memories/{m}/details", None),
    ("UpdateMemory", "PUT", "/agentcore/memories/{m}/update", {"description": "mine now"}),
    (
        "CreateEvent",
        "POST",
        "/agentcore/memories/{m}/events",
        {"actorId": "alice", "sessionId": "s", "eventTimestamp": 1.77e9, "payload": []},
    ),
    ("ListEvents", "POST", "/agentcore/memories/{m}/actor/alice/sessions/s", {}),
    ("ListSessions", "POST", "/agentcore/memories/{m}/actor/alice/sessions", {}),
    ("ListActors", "POST", "/agentcore/memories/{m}/actors", {}),
    ("ListMemoryRecords", "POST", "/agentcore/memories/{m}/memoryRecords", {"namespace": "/facts/alice/"}),
    (
        "RetrieveMemoryRecords",
        "POST",
        "/agentcore/memories/{m}/retrieve",
        {"namespace": "/facts/alice/", "searchCriteria": {"searchQuery": "x"}},
    ),
    ("ListMemoryExtractionJobs", "POST", "/agentcore/memories/{m}/extractionJobs", {}),
    ("REST list", "GET", "/v1/apps/{m}/users/alice/memories", None),
    ("DeleteMemory", "DELETE", "/agentcore/memories/{m}/delete", None),
]


def _answers(api: ApiClient, memory: str, key: str | None) -> dict[str, tuple[int, str | None]]:
    """Each route's status and AgentCore error type for ``memory``."""
    answers = {}
    for name, method, path, body in EVERY_ROUTE:
        reply = api.request(method, path.format(m=memory), body, headers={"x-api-key": key} if key else {})
        kind = {k.lower(): v for k, v in reply.headers.items()}.get("x-amzn-errortype")
        answers[name] = (reply.status, kind.split(":")[0] if kind else None)
    return answers


def test_with_keys_an_id_never_created_answers_as_another_tenants_memory_does_on_every_route(
    owner: tuple[Container, str],
) -> None:
    # Given tenant B's memory, and an id nobody created
    built, mine = owner
    theirs = built.tenants.create_key("tenant-b-app").secret
    api = ApiClient()
    their_memory = _create(api, theirs)
    # When the owner's key calls every route on each
    never = _answers(api, "never-made-memory", mine)
    other = _answers(api, their_memory, mine)
    # Then both answer AccessDeniedException (403) everywhere: a key cannot tell whether another tenant's id exists
    assert set(never.values()) == {(403, "AccessDeniedException"), (403, None)}, never
    assert never == other
    assert never["REST list"] == (403, None)  # the REST API's own error body, not AgentCore's header
    assert [key for key in _keys(built.table) if "never-made-memory" in key[0] + key[1]] == []  # nothing written


def test_an_id_never_created_is_an_app_to_the_data_plane_and_no_memory_to_the_control_plane(
    owner: tuple[Container, str],
) -> None:
    # Given the owner's own app, never made by CreateMemory (as every REST app is)
    _, mine = owner
    api = ApiClient()
    answers = _answers(api, "owner-app", mine)
    # Then the control plane knows no memory of that id: ResourceNotFoundException, and DeleteMemory erases nothing
    for call in ("GetMemory", "UpdateMemory", "DeleteMemory"):
        assert answers[call] == (404, "ResourceNotFoundException"), call
    # And every data-plane route and the REST API serve the app by that name (docs/agentcore.md, "Memory ids")
    served = {
        name: status
        for name, (status, _) in answers.items()
        if name not in ("GetMemory", "UpdateMemory", "DeleteMemory")
    }
    assert served == {"CreateEvent": 201} | {name: 200 for name in served if name != "CreateEvent"}
    assert (
        len(api.get(f"{scope_path('owner-app', 'alice')}/memories", headers={"x-api-key": mine}).body["entries"]) == 1
    )
