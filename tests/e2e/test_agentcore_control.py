"""AgentCore's control plane for memories (issue 34, point 5) through boto3's own ``bedrock-agentcore-control``
client and the AgentCore SDK's ``MemoryClient``, against the real local server, on both tables: a memory made
with strategies learns from the events written to it (a scripted model behind an OpenAI-compatible endpoint,
set with MEMORY_MODEL=openai), is listed, updated and deleted (with everything its users held); without a
model, the memory says so and nothing fails; with keys, no key acts on another tenant's memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.exceptions import ClientError

from tests.e2e.agentcore_support import TABLES, agentcore_client, serving
from tests.e2e.conftest import LiveServer
from tests.scripted_model import ScriptedModelServer

pytestmark = pytest.mark.xdist_group("agentcore")


def answer(request: dict[str, Any]) -> str:
    """The scripted model: a fact from every conversation that mentions a boat, and nothing else."""
    name = request.get("response_format", {}).get("json_schema", {}).get("name", "")
    prompt = request["messages"][-1]["content"]
    if name == "Facts":
        facts = [{"text": "Alice sails a wooden boat.", "about": "alice", "messages": [1]}] if "boat" in prompt else []
        return json.dumps({"facts": facts})
    if name == "Summary":
        return json.dumps({"summary": "Alice talked about sailing."})
    return json.dumps({name.lower(): []})  # Preferences, Decisions, Episodes: nothing


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(answer) as server:
        yield server


@pytest.fixture(scope="module", params=TABLES)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer
) -> Iterator[LiveServer]:
    env = {"MEMORY_MODEL": "openai", "MEMORY_MODEL_URL": model.url, "MEMORY_MODEL_ID": model.model}
    with serving(request.param, tmp_path_factory.mktemp("control"), env) as running:
        yield running


def control(server: LiveServer, api_key: str | None = None) -> Any:
    client = boto3.client(
        "bedrock-agentcore-control",
        endpoint_url=f"{server.url}/agentcore",
        region_name="us-east-1",
        aws_access_key_id="unused",
        aws_secret_access_key="unused",
    )
    if api_key is not None:
        client.meta.events.register_first(
            "before-sign.bedrock-agentcore-control.*",
            lambda request, **_: request.headers.__setitem__("x-api-key", api_key),
        )
    return client


def eventually(check: Callable[[], Any], seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def said(client: Any, memory: str, session: str, *turns: tuple[str, str]) -> None:
    start = time.time()
    for i, (role, text) in enumerate(turns):
        client.create_event(
            memoryId=memory,
            actorId="alice",
            sessionId=session,
            eventTimestamp=start + i,
            payload=[{"conversational": {"content": {"text": text}, "role": role}}],
        )


CONVERSATION = [
    ("USER", "I sail a small wooden boat on weekends"),
    ("ASSISTANT", "That sounds peaceful"),
    ("USER", "It is, the lake is calm in the morning"),
    ("ASSISTANT", "Do you sail alone?"),
    ("USER", "Mostly, sometimes with my brother"),
    ("ASSISTANT", "Nice"),
]


def test_a_memory_made_with_a_semantic_strategy_learns_from_its_events(server: LiveServer) -> None:
    client = control(server)
    # Given a memory created with a semantic strategy
    memory = client.create_memory(
        name="sailing",
        eventExpiryDuration=30,
        memoryStrategies=[{"semanticMemoryStrategy": {"name": "facts", "namespaceTemplates": ["/facts/{actorId}/"]}}],
    )["memory"]
    assert memory["id"].startswith("sailing-")
    assert memory["status"] == "CREATING"  # until every process sees it
    [strategy] = memory["strategies"]
    assert (strategy["type"], strategy["namespaces"]) == ("SEMANTIC", ["/facts/{actorId}/"])
    assert eventually(lambda: client.get_memory(memoryId=memory["id"])["memory"]["status"] == "ACTIVE", 10)
    # When a conversation is written to it as events
    data = agentcore_client(server)
    said(data, memory["id"], "weekend", *CONVERSATION)

    # Then RetrieveMemoryRecords in the strategy's namespace returns what was learnt, with its strategy
    def learnt() -> list[dict[str, Any]]:
        found = data.retrieve_memory_records(
            memoryId=memory["id"], namespace="/facts/alice/", searchCriteria={"searchQuery": "boat"}
        )
        return found["memoryRecordSummaries"]  # type: ignore[no-any-return]

    records = eventually(learnt)
    assert [(r["content"]["text"], r["memoryStrategyId"]) for r in records] == [
        ("Alice sails a wooden boat.", strategy["strategyId"])
    ]
    # And the memory is listed, and GetMemory shows it with no failure
    listed = client.list_memories()["memories"]
    assert memory["id"] in [m["id"] for m in listed]
    assert "failureReason" not in client.get_memory(memoryId=memory["id"])["memory"]


def test_update_adds_changes_and_removes_strategies(server: LiveServer) -> None:
    client = control(server)
    memory = client.create_memory(name="updating", eventExpiryDuration=7)["memory"]
    # When a strategy is added, then changed, then removed
    added = client.update_memory(
        memoryId=memory["id"],
        memoryStrategies={"addMemoryStrategies": [{"userPreferenceMemoryStrategy": {"name": "likes"}}]},
    )["memory"]
    [likes] = added["strategies"]
    assert likes["namespaces"] == ["/strategies/{memoryStrategyId}/actors/{actorId}/"]
    changed = client.update_memory(
        memoryId=memory["id"],
        description="what alice likes",
        memoryStrategies={
            "modifyMemoryStrategies": [
                {"memoryStrategyId": likes["strategyId"], "namespaceTemplates": ["/likes/{actorId}/"]}
            ]
        },
    )["memory"]
    assert changed["description"] == "what alice likes"
    assert changed["strategies"][0]["namespaces"] == ["/likes/{actorId}/"]
    removed = client.update_memory(
        memoryId=memory["id"],
        memoryStrategies={"deleteMemoryStrategies": [{"memoryStrategyId": likes["strategyId"]}]},
    )["memory"]
    assert removed["strategies"] == []
    # And a template that would put records outside the actor is refused
    with pytest.raises(ClientError) as refused:
        client.update_memory(
            memoryId=memory["id"],
            memoryStrategies={
                "addMemoryStrategies": [{"semanticMemoryStrategy": {"name": "x", "namespaces": ["/shared/"]}}]
            },
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_deleting_a_memory_erases_what_its_users_held(server: LiveServer) -> None:
    client = control(server)
    memory = client.create_memory(name="doomed", eventExpiryDuration=7)["memory"]
    data = agentcore_client(server)
    said(data, memory["id"], "s1", ("USER", "remember my locker code"))
    with httpx.Client(base_url=server.url, timeout=10) as http:
        http.post(
            f"/v1/apps/{memory['id']}/users/bob/memories", json={"entry": {"content": {"parts": [{"text": "hi"}]}}}
        )
        # When the memory is deleted
        assert client.delete_memory(memoryId=memory["id"])["status"] == "DELETING"

        # Then it ends gone, and so is everything its users held
        def gone() -> bool:
            try:
                client.get_memory(memoryId=memory["id"])
            except ClientError as error:
                return error.response["Error"]["Code"] == "ResourceNotFoundException"
            return False

        assert eventually(gone, 60)
        for user in ("alice", "bob"):
            held = http.get(f"/v1/apps/{memory['id']}/users/{user}/export")
            assert held.status_code == 404, user  # the deleted memory serves nothing, from anywhere
            assert held.json()["error"]["code"] == "memory_not_found"

    assert memory["id"] not in [m["id"] for m in client.list_memories()["memories"]]


def test_the_sdk_creates_a_memory_and_waits_for_it(server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from bedrock_agentcore.memory import MemoryClient

    # Given the SDK pointed at this service by the endpoint variables alone
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", f"{server.url}/agentcore")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL", f"{server.url}/agentcore")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "unused")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "unused")
    sdk = MemoryClient(region_name="us-east-1")
    # When it creates a memory and waits, then adds a semantic strategy and waits
    memory = sdk.create_memory_and_wait(name="sdkmemory", strategies=[], poll_interval=1, max_wait=30)
    assert memory["status"] == "ACTIVE"
    sdk.add_semantic_strategy_and_wait(memory_id=memory["id"], name="facts", max_wait=30, poll_interval=1)
    # Then the strategy is there, in AgentCore's default namespace
    [strategy] = sdk.get_memory_strategies(memory["id"])
    assert strategy["type"] == "SEMANTIC"
    assert strategy["namespaces"] == ["/strategies/{memoryStrategyId}/actors/{actorId}/"]


def _agentmem(*args: str, db: Path) -> str:
    command = [str(Path(sys.executable).parent / "agentmem"), *args, "--db", str(db)]
    env = {**os.environ, "MEMORY_STORE": "sqlite"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout


def test_no_key_acts_on_another_tenants_memory(tmp_path: Path) -> None:
    with serving("sqlite", tmp_path, {"MEMORY_AUTH": "required"}) as server:
        mine = json.loads(_agentmem("keys", "create", "--app", "tenant-a", db=server.db_path))["api_key"]
        theirs = json.loads(_agentmem("keys", "create", "--app", "tenant-b", db=server.db_path))["api_key"]
        # Given a memory tenant A created with its key
        memory = control(server, mine).create_memory(name="private", eventExpiryDuration=7)["memory"]
        # Then tenant A uses it, as its own app, through the data plane and the REST API
        said(agentcore_client(server, mine), memory["id"], "s", ("USER", "my secret"))
        with httpx.Client(base_url=server.url, timeout=10) as http:
            own = http.get(f"/v1/apps/{memory['id']}/users/alice/memories", headers={"x-api-key": mine})
            assert own.status_code == 200
            assert len(own.json()["entries"]) == 1
            # And tenant B can neither read, change nor delete it, nor see it listed
            other = http.get(f"/v1/apps/{memory['id']}/users/alice/memories", headers={"x-api-key": theirs})
            assert other.status_code == 403
        for call, params in [
            ("get_memory", {}),
            ("update_memory", {"description": "mine now"}),
            ("delete_memory", {}),
        ]:
            with pytest.raises(ClientError) as refused:
                getattr(control(server, theirs), call)(memoryId=memory["id"], **params)
            assert refused.value.response["Error"]["Code"] == "AccessDeniedException", call
        with pytest.raises(ClientError) as read:
            agentcore_client(server, theirs).list_events(memoryId=memory["id"], actorId="alice", sessionId="s")
        assert read.value.response["Error"]["Code"] == "AccessDeniedException"
        assert control(server, theirs).list_memories()["memories"] == []
        assert [m["id"] for m in control(server, mine).list_memories()["memories"]] == [memory["id"]]
        # And without a key nothing is created
        with pytest.raises(ClientError) as anonymous:
            control(server).create_memory(name="anonymous", eventExpiryDuration=7)
        assert anonymous.value.response["ResponseMetadata"]["HTTPStatusCode"] in (401, 403)


def test_without_a_model_the_memory_says_so_and_nothing_fails(tmp_path: Path) -> None:
    with serving("sqlite", tmp_path) as server:
        client = control(server)
        memory = client.create_memory(
            name="nomodel", eventExpiryDuration=7, memoryStrategies=[{"semanticMemoryStrategy": {"name": "facts"}}]
        )["memory"]
        said(agentcore_client(server), memory["id"], "s", *CONVERSATION)
        got = client.get_memory(memoryId=memory["id"])["memory"]
        assert "no extraction model is configured" in got["failureReason"]
        events = agentcore_client(server).list_events(memoryId=memory["id"], actorId="alice", sessionId="s")
        assert len(events["events"]) == len(CONVERSATION)


def test_events_keep_the_memorys_event_expiry(server: LiveServer) -> None:
    memory = control(server).create_memory(name="shortlived", eventExpiryDuration=3)["memory"]
    said(agentcore_client(server), memory["id"], "s", ("USER", "a passing remark"))
    with httpx.Client(base_url=server.url, timeout=10) as http:
        [entry] = http.get(f"/v1/apps/{memory['id']}/users/alice/memories").json()["entries"]
    expires = datetime.fromisoformat(entry["expires_at"].replace("Z", "+00:00")).timestamp()
    assert abs(expires - (time.time() + 3 * 86_400)) < 120
