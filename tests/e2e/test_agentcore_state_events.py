"""What is not a memory stays out of memory (issue 43, point 7): events whose payload holds only blobs (what the
Strands session manager writes for its session and agent state) are written by boto3's ``bedrock-agentcore``
client over HTTP to the local server, on both tables. They are listed by ``ListEvents`` and ``GetEvent``
exactly as written, exported and erased with the user, and never searched, listed or counted as memories
(the entry limit, the app's user list)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from tests.e2e.agentcore_support import TABLES, agentcore_client, serving
from tests.e2e.conftest import LiveServer

pytestmark = pytest.mark.xdist_group("agentcore")

LIMIT = 2
AGENT_STATE = '{"agent_id": "default", "state": {"mood": "xyzzy"}, "conversation_manager_state": {}}'


@pytest.fixture(scope="module", params=TABLES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    env = {"MEMORY_MAX_ENTRIES": str(LIMIT)}
    with serving(request.param, tmp_path_factory.mktemp("agentcore-state"), env) as running:
        yield running


def _say(client: Any, memory: str, text: str, session: str = "s1") -> dict[str, Any]:
    payload = [{"conversational": {"content": {"text": text}, "role": "USER"}}]
    return client.create_event(  # type: ignore[no-any-return]
        memoryId=memory, actorId="alice", sessionId=session, eventTimestamp=time.time(), payload=payload
    )["event"]


def _state(client: Any, memory: str, blob: Any, session: str = "s1") -> dict[str, Any]:
    return client.create_event(  # type: ignore[no-any-return]
        memoryId=memory, actorId="alice", sessionId=session, eventTimestamp=time.time(), payload=[{"blob": blob}]
    )["event"]


def _rest(server: LiveServer, memory: str, path: str, **kw: Any) -> Any:
    reply = httpx.request(kw.pop("method", "GET"), f"{server.url}/v1/apps/{memory}{path}", timeout=30, **kw)
    assert reply.status_code < 300, reply.text
    return reply.json()


def test_blob_events_are_events_not_memories(server: LiveServer) -> None:
    client = agentcore_client(server)
    memory = f"state-{uuid.uuid4().hex[:8]}"
    # Given a conversation turn, the agent's state as a JSON string (as Strands writes it) and a JSON object blob
    said = _say(client, memory, "I drink green tea every morning")
    states = [_state(client, memory, AGENT_STATE), _state(client, memory, {"session_id": "s1", "xyzzy": [1, 2]})]
    # Then ListEvents lists all three, newest first, each blob exactly as written
    listed = client.list_events(memoryId=memory, actorId="alice", sessionId="s1", includePayloads=True)["events"]
    assert [e["eventId"] for e in listed] == [e["eventId"] for e in (*reversed(states), said)]
    blobs = [[{"blob": {"session_id": "s1", "xyzzy": [1, 2]}}], [{"blob": AGENT_STATE}]]
    assert [e["payload"] for e in listed[:2]] == blobs
    # And GetEvent reads a blob event as ListEvents does, and the session is listed
    got = client.get_event(memoryId=memory, actorId="alice", sessionId="s1", eventId=states[0]["eventId"])["event"]
    assert got["payload"] == [{"blob": AGENT_STATE}]
    assert [s["sessionId"] for s in client.list_sessions(memoryId=memory, actorId="alice")["sessionSummaries"]] == [
        "s1"
    ]
    # But the user's memories are the conversation only: listed, searched, counted
    entries = _rest(server, memory, "/users/alice/memories")["entries"]
    assert [e["content"]["parts"][0]["text"] for e in entries] == ["I drink green tea every morning"]
    for query in ("xyzzy", "agent state mood", "green tea"):
        search = {"query": query, "mode": "keyword"}
        hits = _rest(server, memory, "/users/alice/memories/search", method="POST", json=search)["entries"]
        assert [h["id"] for h in hits] == ([entries[0]["id"]] if query == "green tea" else [])
    assert _rest(server, memory, "/users")["users"][0]["entries"] == 1
    # And the export returns the blobs apart from the entries
    exported = _rest(server, memory, "/users/alice/export")
    assert len(exported["entries"]) == 1
    assert len(exported["events"]) == 2


def test_blob_events_do_not_count_toward_the_entry_limit(server: LiveServer) -> None:
    client = agentcore_client(server)
    memory = f"state-limit-{uuid.uuid4().hex[:8]}"
    # Given more blob events than the limit of entries
    for n in range(LIMIT + 2):
        _state(client, memory, f'{{"message": {n}}}')
    # When as many conversation turns as the limit are written / Then they are stored
    for n in range(LIMIT):
        _say(client, memory, f"turn {n}")
    # And one more is refused: the limit counts the memories only
    with pytest.raises(ClientError):
        _say(client, memory, "one too many")
    assert len(_rest(server, memory, "/users/alice/memories")["entries"]) == LIMIT


def test_blob_events_are_deleted_by_delete_event_with_their_session_and_by_erasure(server: LiveServer) -> None:
    client = agentcore_client(server)
    memory = f"state-erase-{uuid.uuid4().hex[:8]}"
    kept, gone = _state(client, memory, "kept"), _state(client, memory, "gone")
    _say(client, memory, "hello")
    # When one blob event is deleted / Then it is gone from ListEvents and GetEvent
    client.delete_event(memoryId=memory, actorId="alice", sessionId="s1", eventId=gone["eventId"])
    with pytest.raises(ClientError) as missing:
        client.get_event(memoryId=memory, actorId="alice", sessionId="s1", eventId=gone["eventId"])
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    listed = client.list_events(memoryId=memory, actorId="alice", sessionId="s1")["events"]
    assert gone["eventId"] not in [e["eventId"] for e in listed]
    assert kept["eventId"] in [e["eventId"] for e in listed]
    # When a session is deleted over REST / Then its blob events go with its entries, from ListEvents and export
    _state(client, memory, "of s2", session="s2")
    _say(client, memory, "said in s2", session="s2")
    assert _rest(server, memory, "/users/alice/sessions/s2", method="DELETE") == {"deleted": 1}
    assert client.list_events(memoryId=memory, actorId="alice", sessionId="s2")["events"] == []
    assert {e["session_id"] for e in _rest(server, memory, "/users/alice/export")["events"]} == {"s1"}
    # When the user is erased
    started = _rest(server, memory, "/users/alice", method="DELETE")
    for _ in range(300):
        status = _rest(server, memory, f"/users/alice/deletions/{started['deletion_id']}")
        if status["status"] != "RUNNING":
            break
        time.sleep(0.1)
    assert status["status"] == "SUCCEEDED"
    # Then nothing of the user is served: no event, no export, not in the app's users
    assert client.list_events(memoryId=memory, actorId="alice", sessionId="s1")["events"] == []
    exported = _rest(server, memory, "/users/alice/export")
    assert exported["entries"] == []
    assert exported["events"] == []
    assert _rest(server, memory, "/users")["users"] == []
