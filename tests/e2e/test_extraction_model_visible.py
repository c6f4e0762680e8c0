"""Learning a newcomer can see, against the real local server (issue 43, point 2): started with a model on a
local port that refuses connections, ``agentmem serve``'s banner names the model and says it is not reachable;
once a session's batch has failed, the Python clients (sync and async) read the app's extraction state
(``model_unreachable``, with the cause), health (``degraded``) and the parked jobs, page by page
(``list_extraction_jobs``), and a bad cursor raises the library's InvalidInput."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem.client import AsyncMemoryClient, MemoryClient
from agentmem.errors import InvalidInput
from tests.e2e.conftest import LiveServer, free_port, start_server

APP = "visible-app"


@pytest.fixture(scope="module")
def refused_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, refused_port: int) -> Iterator[tuple[LiveServer, Path]]:
    """One local server whose model is at a port nothing listens on; its stdout (the banner) in a file."""
    folder = tmp_path_factory.mktemp("visible")
    env = {
        "MEMORY_MODEL": "openai",
        "MEMORY_MODEL_URL": f"http://127.0.0.1:{refused_port}/v1",
        "MEMORY_MODEL_ID": "tiny-model",
        "MEMORY_EMBEDDER": "hashing",
    }
    running = start_server(folder / "memory.db", env, args=("--workers", "1"), output=folder / "out.txt")
    yield running, folder / "out.txt"
    running.stop()


def parked(client: MemoryClient, user: str, session: str) -> list[dict[str, Any]]:
    """Write a session of ``user`` and ask for it to be learnt from until its batch is parked (each ask runs the
    next attempt at once, without the retries' waits): the app's parked jobs then."""
    memory = client.user(APP, user)
    memory.add_session(session, ["Ana plays the cello.", "Nice."])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        jobs = [j for j in client.list_extraction_jobs(APP, limit=100)["jobs"] if j["session"] == session]
        if jobs:
            return jobs
        memory.extract_session(session)
        time.sleep(0.5)
    raise AssertionError("the batch was not parked in time")


def test_the_banner_names_the_model_and_says_it_is_not_reachable(
    server: tuple[LiveServer, Path], refused_port: int
) -> None:
    # Given the server started with its model on a port that refuses connections / Then its banner says so
    banner = server[1].read_text(encoding="utf-8").splitlines()[0]
    assert f"extraction model: tiny-model at http://127.0.0.1:{refused_port}/v1" in banner
    assert "NOT REACHABLE now: ConnectionRefusedError" in banner


def test_the_clients_read_the_models_state_health_and_the_parked_jobs(server: tuple[LiveServer, Path]) -> None:
    client = MemoryClient(server[0].url)
    # Given an app that learns facts
    client.put_extraction(APP, [{"type": "SEMANTIC", "name": "facts"}], trigger_messages=2)
    # When two sessions are written and their batches fail until parked
    first = parked(client, "alice", "s1")
    second = parked(client, "bob", "s2")
    # Then the state says the model cannot be reached, and why
    state = client.get_extraction(APP)["state"]
    assert state["status"] == "model_unreachable"
    assert "ConnectionRefusedError" in state["message"]
    # And health is degraded by the model
    health = client.health()
    assert (health["status"], health["checks"]["model"]) == ("degraded", "failing")
    # And the parked jobs come page by page, each with its reason
    page = client.list_extraction_jobs(APP, limit=1)
    rest = client.list_extraction_jobs(APP, limit=1, cursor=page["next_cursor"])
    assert [j["job_id"] for j in page["jobs"] + rest["jobs"]] == [first[0]["job_id"], second[0]["job_id"]]
    assert rest["next_cursor"] is None
    assert all("unreachable: ConnectionRefusedError" in j["failure"] for j in page["jobs"] + rest["jobs"])
    # And a cursor the API did not give raises the library's error
    with pytest.raises(InvalidInput) as refused:
        client.list_extraction_jobs(APP, cursor="not-a-cursor!")
    assert refused.value.code == "invalid_cursor"

    # And the async client reads the same
    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        async with AsyncMemoryClient(server[0].url) as aclient:
            return await aclient.list_extraction_jobs(APP), await aclient.get_extraction(APP)

    jobs, extraction = asyncio.run(read())
    assert [j["job_id"] for j in jobs["jobs"]] == [first[0]["job_id"], second[0]["job_id"]]
    assert extraction["state"]["status"] == "model_unreachable"
