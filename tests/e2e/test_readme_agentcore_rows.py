"""The README's AgentCore rows run as written, with no credentials and no route to AWS, on both tables
(issue 43, point 1).

Each row's code is read from README.md (a row that drifts breaks this test) and run in a process whose
environment has no AWS_* setting, no ~/.aws (HOME is an empty folder), no instance metadata, and every
proxy pointed at a closed port, so that a call to a real AWS host fails loudly instead of reaching an
account; only the local server (NO_PROXY) answers.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.agentcore_support import TABLES, serving
from tests.e2e.conftest import REPO_ROOT, LiveServer

pytestmark = pytest.mark.xdist_group("agentcore")

LOCAL_URL = "http://127.0.0.1:8000"
AGENTS_PYTHON = REPO_ROOT / ".venv" / "agents" / "bin" / "python"
E2E = Path(__file__).parent


def readme_row(name: str) -> list[str]:
    """The code spans of the README's "Connect from anything" row named ``name``."""
    rows = [line for line in (REPO_ROOT / "README.md").read_text().splitlines() if line.startswith(f"| {name} |")]
    assert len(rows) == 1, f"README.md has no single row {name!r}"
    return re.findall(r"`([^`]+)`", rows[0].split("|")[2])


@pytest.fixture(scope="module", params=TABLES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with serving(request.param, tmp_path_factory.mktemp("readme-rows")) as running:
        yield running


@pytest.fixture
def no_aws(tmp_path: Path) -> dict[str, str]:
    """A reader's shell with nothing of AWS: no credentials anywhere, and every proxy a closed port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"  # nothing listens once the socket is closed
    home = tmp_path / "home"
    home.mkdir()
    scrubbed = ("AWS_", "MEMORY_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    kept = {k: v for k, v in os.environ.items() if not k.upper().startswith(scrubbed)}
    return {
        **kept,
        "HOME": str(home),
        "AWS_EC2_METADATA_DISABLED": "true",
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
        "http_proxy": closed,
        "https_proxy": closed,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "PYTHONPATH": str(E2E),
    }


def run(command: list[str], env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def exported_texts(server: LiveServer, app: str) -> set[str]:
    entries = httpx.get(f"{server.url}/v1/apps/{app}/users/alice/export", timeout=30).json()["entries"]
    return {part["text"] for entry in entries for part in entry["content"]["parts"] if "text" in part}


def test_the_environment_lets_no_call_reach_aws(no_aws: dict[str, str]) -> None:
    # Given the scrubbed environment, a client left to find credentials finds none
    script = "import boto3; boto3.client('sts', region_name='us-east-1').get_caller_identity()"
    done = subprocess.run([sys.executable, "-c", script], env=no_aws, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "NoCredentialsError" in done.stderr
    # And one given credentials cannot reach AWS's real control plane: the proxy refuses it
    script = (
        "import boto3, botocore.config; boto3.client('bedrock-agentcore-control', region_name='us-west-2',"
        " aws_access_key_id='local', aws_secret_access_key='local',"
        " config=botocore.config.Config(retries={'max_attempts': 1})).list_memories()"
    )
    done = subprocess.run([sys.executable, "-c", script], env=no_aws, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "ProxyConnectionError" in done.stderr, done.stderr[-2000:]


def test_the_boto3_row_runs_as_written(server: LiveServer, no_aws: dict[str, str]) -> None:
    (expression,) = readme_row("AgentCore, boto3")
    app = f"row-{uuid.uuid4().hex[:8]}"
    # When the row's client is built as the README writes it and stores an event
    script = f"""
import json, sys
from datetime import UTC, datetime
import boto3
client = {expression.replace(LOCAL_URL, server.url)}
memory = "arn:aws:bedrock-agentcore:us-east-1:000000000000:memory/" + sys.argv[1]
client.create_event(memoryId=memory, actorId="alice", sessionId="chat-1", eventTimestamp=datetime.now(UTC),
    payload=[{{"conversational": {{"content": {{"text": "My dog is called Pixel"}}, "role": "USER"}}}}])
events = client.list_events(memoryId=memory, actorId="alice", sessionId="chat-1")["events"]
print(json.dumps([e["payload"][0]["conversational"]["content"]["text"] for e in events]))
"""
    texts = run([sys.executable, "-c", script, app], no_aws)
    # Then the event came back, and it is the app's memory over REST
    assert texts == ["My dog is called Pixel"]
    assert exported_texts(server, app) == {"My dog is called Pixel"}


def sdk_row(server: LiveServer) -> str:
    """The row's shell line, on this server: ``export ...``."""
    export, *clients = readme_row("AgentCore SDK, Strands")
    assert export.startswith("export ")
    assert clients == ["MemoryClient()", "AgentCoreMemorySessionManager(...)"]
    return export.replace(LOCAL_URL, server.url)


def test_the_sdk_row_makes_a_memory_here_not_in_aws(server: LiveServer, no_aws: dict[str, str]) -> None:
    # When MemoryClient(), with nothing but the row's environment, makes a memory and writes to it
    script = """
import json
from bedrock_agentcore.memory import MemoryClient
client = MemoryClient()
memory = client.create_memory_and_wait(name="readme", strategies=[], poll_interval=1)
client.create_event(memory_id=memory["id"], actor_id="alice", session_id="chat-2",
    messages=[("I moved to Lisbon last spring", "USER")])
print(json.dumps({"region": client.region_name, "memory": memory["id"], "status": memory["status"]}))
"""
    made = run(["bash", "-c", f'{sdk_row(server)}; exec "$0" -c "$1"', sys.executable, script], no_aws)
    # Then the memory is made by this server's control plane, in the row's Region, and is an app here
    assert made["region"] == "us-east-1"
    assert made["status"] == "ACTIVE"
    assert str(made["memory"]).startswith("readme-")
    assert exported_texts(server, str(made["memory"])) == {"I moved to Lisbon last spring"}


def test_the_strands_row_keeps_the_conversation_here(server: LiveServer, no_aws: dict[str, str]) -> None:
    assert AGENTS_PYTHON.exists(), "the agents' environment is missing: make test creates it (requirements-agents.txt)"
    app = f"row-{uuid.uuid4().hex[:8]}"
    # When a Strands agent (a scripted model) uses AgentCoreMemorySessionManager as usual, no Region given
    script = """
import json, sys
from agentcore_strands_agent import ScriptedModel
from bedrock_agentcore.memory.integrations.strands.config import AgentCoreMemoryConfig
from bedrock_agentcore.memory.integrations.strands.session_manager import AgentCoreMemorySessionManager
from strands import Agent
config = AgentCoreMemoryConfig(memory_id="arn:aws:bedrock-agentcore:us-east-1:000000000000:memory/" + sys.argv[1],
    session_id="chat-3", actor_id="alice")
manager = AgentCoreMemorySessionManager(config)
agent = Agent(model=ScriptedModel([{"text": "Pixel is a fine name."}]), session_manager=manager, callback_handler=None)
agent("My dog is called Pixel")
print(json.dumps({"region": manager.memory_client.region_name}))
"""
    done = run(["bash", "-c", f'{sdk_row(server)}; exec "$0" -c "$1" "$2"', str(AGENTS_PYTHON), script, app], no_aws)
    # Then both turns (as Strands writes its messages: JSON) are this service's memory of alice
    assert done["region"] == "us-east-1"
    turns = [json.loads(text)["message"] for text in exported_texts(server, app)]
    assert sorted((t["role"], t["content"][0]["text"]) for t in turns) == [
        ("assistant", "Pixel is a fine name."),
        ("user", "My dog is called Pixel"),
    ]


def docs_key_hook() -> str:
    """docs/agentcore.md's block that adds the API key to a boto3 session's requests."""
    text = (REPO_ROOT / "docs" / "agentcore.md").read_text()
    blocks = [textwrap.dedent(b) for b in re.findall(r"```python\n(.*?)^\s*```", text, re.M | re.S)]
    (hook,) = [b for b in blocks if "before-sign." in b and "API_KEY" in b]
    return hook


def test_the_documented_key_hook_reaches_the_control_plane_too(tmp_path: Path, no_aws: dict[str, str]) -> None:
    with serving("sqlite", tmp_path, {"MEMORY_AUTH": "required"}) as server:
        # Given the server requiring keys, and a key of the app my-app
        agentmem = Path(sys.executable).parent / "agentmem"
        created = subprocess.run(
            [str(agentmem), "keys", "create", "--app", "my-app", "--db", str(server.db_path)],
            capture_output=True,
            text=True,
            env={**os.environ, "MEMORY_STORE": "sqlite"},
            check=True,
        )
        key = json.loads(created.stdout)["api_key"]
        # When the docs' hook is installed on a session, and MemoryClient built from it makes a memory (the control
        # plane) and writes to it (the data plane); and a session hooked on the data plane alone tries the same
        script = (
            docs_key_hook().replace("amk_...", key).replace(LOCAL_URL, server.url)
            + """
import json
from botocore.exceptions import ClientError
from bedrock_agentcore.memory import MemoryClient

client = MemoryClient(boto3_session=session)
memory = client.create_memory_and_wait(name="keyed", strategies=[], poll_interval=1)
client.create_event(memory_id=memory["id"], actor_id="alice", session_id="s", messages=[("hello", "USER")])
data_only = boto3.Session(region_name="us-east-1", aws_access_key_id="local", aws_secret_access_key="local")
data_only.events.register_first("before-sign.bedrock-agentcore.*", add_key)
try:
    MemoryClient(boto3_session=data_only).create_memory(name="unkeyed", strategies=[])
    refused = None
except ClientError as error:
    refused = error.response["Error"]["Code"]
print(json.dumps({"memory": memory["id"], "refused": refused}))
"""
        )
        done = run(["bash", "-c", f'{sdk_row(server)}; exec "$0" -c "$1"', sys.executable, script], no_aws)
        # Then the memory was made and written with the key, and without the control plane's hook it is refused
        assert done["refused"] == "AccessDeniedException"
        listed = httpx.get(
            f"{server.url}/v1/apps/{done['memory']}/users/alice/memories", headers={"x-api-key": key}, timeout=30
        )
        assert listed.status_code == 200, listed.text
        assert [e["content"]["parts"][0]["text"] for e in listed.json()["entries"]] == ["hello"]
