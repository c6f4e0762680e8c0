"""AgentCore's own clients switched to this service by the endpoint alone, on both tables: the
``bedrock-agentcore`` SDK (``MemoryClient``, ``MemorySessionManager``), a Strands agent with the AgentCore
session manager (a scripted model, in its own environment), and tenancy with keys (``--auth required``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pytest
from botocore.exceptions import ClientError

from tests.e2e.agentcore_support import TABLES, agentcore_client, serving
from tests.e2e.conftest import REPO_ROOT, LiveServer

pytestmark = pytest.mark.xdist_group("agentcore")

AGENTS_PYTHON = REPO_ROOT / ".venv" / "agents" / "bin" / "python"
STRANDS_AGENT = Path(__file__).with_name("agentcore_strands_agent.py")


@pytest.fixture(scope="module", params=TABLES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with serving(request.param, tmp_path_factory.mktemp("agentcore-clients")) as running:
        yield running


@pytest.fixture
def endpoint(server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """The one-line switch: every boto3 client of the service (the SDK's included) goes to this endpoint."""
    url = f"{server.url}/agentcore"
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "unused")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "unused")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return url


def test_the_sdk_stores_and_recalls_a_conversation(server: LiveServer, endpoint: str) -> None:
    from bedrock_agentcore.memory import MemoryClient
    from bedrock_agentcore.memory.constants import ConversationalMessage, MessageRole
    from bedrock_agentcore.memory.session import MemorySessionManager

    memory = f"agentcore-sdk-{uuid.uuid4().hex[:8]}"
    # Given a conversation stored through the session manager, as its README shows
    manager = MemorySessionManager(memory_id=memory, region_name="us-east-1")
    session = manager.create_memory_session(actor_id="alice", session_id="chat-1")
    session.add_turns(
        messages=[
            ConversationalMessage("I adopted a grey cat called Miso", MessageRole.USER),
            ConversationalMessage("Miso is a lovely name for a cat", MessageRole.ASSISTANT),
        ]
    )
    session.add_turns(messages=[ConversationalMessage("She likes sleeping on the piano", MessageRole.USER)])
    # Then the last turns come back grouped as the SDK groups them, and the session and actor are listed
    turns = session.get_last_k_turns(k=5)
    flattened = [message["content"]["text"] for turn in turns for message in turn]
    assert set(flattened) == {
        "I adopted a grey cat called Miso",
        "Miso is a lovely name for a cat",
        "She likes sleeping on the piano",
    }
    assert [s["sessionId"] for s in manager.list_actor_sessions(actor_id="alice")] == ["chat-1"]
    assert [a["actorId"] for a in manager.list_actors()] == ["alice"]
    # And MemoryClient (the older API) reads the same events and writes and retrieves a long-term record
    client = MemoryClient(region_name="us-east-1")
    events = client.list_events(memory_id=memory, actor_id="alice", session_id="chat-1")
    assert len(events) == 2
    client.create_event(
        memory_id=memory,
        actor_id="alice",
        session_id="chat-2",
        messages=[("Remind me to buy cat food", "USER"), ("I will remind you", "ASSISTANT")],
    )
    assert len(client.get_last_k_turns(memory_id=memory, actor_id="alice", session_id="chat-2", k=1)) == 1
    created = client.batch_create_memory_records(
        memoryId=memory,
        records=[
            {
                "requestIdentifier": "cat",
                "namespaces": ["/facts/alice/"],
                "content": {"text": "Alice has a grey cat called Miso"},
                "timestamp": time.time(),
            }
        ],
    )
    assert created["failedRecords"] == []
    recalled = client.retrieve_memories(memory_id=memory, namespace="/facts/alice/", query="what is my cat called")
    assert [r["content"]["text"] for r in recalled] == ["Alice has a grey cat called Miso"]
    found = session.search_long_term_memories(query="cat", namespace_path="/facts/alice/")
    assert [r["content"]["text"] for r in found] == ["Alice has a grey cat called Miso"]
    # And the conversation is this service's memory: the REST API searches it
    hits = httpx.post(
        f"{server.url}/v1/apps/{memory}/users/alice/memories/search",
        json={"query": "piano", "mode": "keyword"},
        timeout=30,
    ).json()["entries"]
    assert [h["session_id"] for h in hits] == ["chat-1"]


def test_a_strands_agent_remembers_across_sessions(server: LiveServer, endpoint: str) -> None:
    assert AGENTS_PYTHON.exists(), "the agents' environment is missing: make test creates it (requirements-agents.txt)"
    memory = f"agentcore-strands-{uuid.uuid4().hex[:8]}"
    # When the Strands agent runs its three steps with nothing but the environment pointing it here
    done = subprocess.run(
        [str(AGENTS_PYTHON), str(STRANDS_AGENT), memory],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": endpoint},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # Then the first session kept a fact with its tool and answered
    assert report["first_reply"] == ["Noted: aisle seats."]
    # And the same session, in a new agent, was restored from the events
    assert report["restored"] == ["Please remember that I prefer aisle seats on long flights.", "Noted: aisle seats."]
    # And a new session started empty, yet the model was given the fact before the user's question
    assert report["new_session_history"] == []
    assert report["model_saw"] == [
        "<user_context>Alice prefers aisle seats on long flights</user_context>",
        "Book me a seat for the flight to Lima.",
    ]
    # And what the agent wrote is this service's memory of the user, in its export
    export = httpx.get(f"{server.url}/v1/apps/{memory}/users/alice/export", timeout=30).json()
    exported = export["entries"]
    assert {e["session_id"] for e in exported} == {"trip-1", "trip-2", None}
    # And the session manager's session and agent state (blob events) are exported as events, never as
    # memories: every memory holds text, and the user's memories list none of the blobs
    assert {e["session_id"] for e in export["events"]} == {"trip-1", "trip-2"}
    assert all(any("text" in part for part in e["content"]["parts"]) for e in exported)
    listed = httpx.get(f"{server.url}/v1/apps/{memory}/users/alice/memories", timeout=30).json()["entries"]
    assert {e["id"] for e in listed} <= {e["id"] for e in exported}
    assert not {e["id"] for e in listed} & {e["id"] for e in export["events"]}

    # And a message, stored as Strands' JSON envelope, is searched by its words only, never by the envelope's
    def keyword(query: str) -> list[str]:
        search = f"{server.url}/v1/apps/{memory}/users/alice/memories/search"
        hits = httpx.post(search, json={"query": query, "mode": "keyword"}, timeout=30).json()["entries"]
        return [h["session_id"] for h in hits]

    assert "trip-1" in keyword("aisle seats")
    assert keyword("message_id created_at toolUseId") == []


def _agentmem(*args: str, db: Path) -> str:
    command = [str(Path(sys.executable).parent / "agentmem"), *args, "--db", str(db)]
    env = {**os.environ, "MEMORY_STORE": "sqlite"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout


def test_a_memory_of_another_app_is_refused(tmp_path: Path) -> None:
    with serving("sqlite", tmp_path, {"MEMORY_AUTH": "required"}) as server:
        # Given keys of two apps made with the console command
        mine = json.loads(_agentmem("keys", "create", "--app", "agentcore-app-a", db=server.db_path))["api_key"]
        theirs = json.loads(_agentmem("keys", "create", "--app", "agentcore-app-b", db=server.db_path))["api_key"]
        event = {"actorId": "u", "sessionId": "s", "eventTimestamp": time.time(), "payload": []}
        for key in (None, theirs):
            # When app A's memory is called without a key, or with app B's / Then AccessDeniedException, 403
            with pytest.raises(ClientError) as refused:
                agentcore_client(server, key).create_event(memoryId="agentcore-app-a", **event)
            assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
            assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        with pytest.raises(ClientError) as listing:
            agentcore_client(server, theirs).list_actors(memoryId="agentcore-app-a")
        assert listing.value.response["Error"]["Code"] == "AccessDeniedException"
        # And with its own key (added by the documented botocore hook) the call goes through
        created = agentcore_client(server, mine).create_event(memoryId="agentcore-app-a", **event)["event"]
        assert created["actorId"] == "u"
        assert agentcore_client(server, theirs).list_actors(memoryId="agentcore-app-b")["actorSummaries"] == []
        # And a boto3 session carrying the hook serves the SDK's clients, which it builds from that session
        from bedrock_agentcore.memory.session import MemorySessionManager

        session = boto3.Session(region_name="us-east-1", aws_access_key_id="unused", aws_secret_access_key="unused")
        session.events.register_first(
            "before-sign.bedrock-agentcore.*", lambda request, **_: request.headers.__setitem__("x-api-key", mine)
        )
        os.environ["AWS_ENDPOINT_URL_BEDROCK_AGENTCORE"] = f"{server.url}/agentcore"
        try:
            manager = MemorySessionManager(memory_id="agentcore-app-a", boto3_session=session)
            assert [a["actorId"] for a in manager.list_actors()] == ["u"]
        finally:
            del os.environ["AWS_ENDPOINT_URL_BEDROCK_AGENTCORE"]
        # And the app's usage counts its AgentCore calls
        usage = httpx.get(f"{server.url}/v1/apps/agentcore-app-a/usage", headers={"x-api-key": mine}).json()
        assert usage["days"][0]["requests"] == 3  # CreateEvent, ListActors, this read
