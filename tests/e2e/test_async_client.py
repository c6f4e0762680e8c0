"""AsyncMemoryClient against the real local server: every route, and retries that are safe to make."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentmem.client import AsyncMemoryClient, MemoryClient, RetryPolicy
from agentmem.errors import Conflict, NotFound, RateLimited, Unavailable
from tests.e2e.conftest import LiveServer, MotoEndpoint, ServerFactory, free_port, start_server

FAST = RetryPolicy(retries=3, base=0.05, cap=0.2)


def test_the_async_client_corrects_a_memory_and_reads_its_history(live_server: LiveServer) -> None:
    async def scenario() -> None:
        async with AsyncMemoryClient(live_server.url) as client:
            memory = client.user("async-app", f"fix/{uuid.uuid4().hex}")
            entry = await memory.add_entry("The meeting is on Monday")
            content = {"role": "user", "parts": [{"text": "The meeting is on Tuesday"}]}
            fixed = await memory.update(entry["id"], content, metadata={"moved": True}, revision=1)
            assert (fixed["id"], fixed["revision"], fixed["metadata"]) == (entry["id"], 2, {"moved": True})
            assert await memory.search("Monday", mode="keyword") == []
            versions = await memory.memory_history(entry["id"])
            assert [v["content"]["parts"][0]["text"] for v in versions] == [
                "The meeting is on Monday",
                "The meeting is on Tuesday",
            ]
            assert versions[0]["valid_to"] == versions[1]["valid_from"] == fixed["updated_at"]
            with pytest.raises(Conflict) as stale:
                await memory.update(entry["id"], "The meeting is on Friday", revision=1)
            assert stale.value.code == "revision_conflict"
            with pytest.raises(NotFound):
                await memory.update("never-made", "x")

    asyncio.run(scenario())


def test_the_async_client_covers_the_memory_routes(live_server: LiveServer) -> None:
    async def scenario() -> None:
        async with AsyncMemoryClient(live_server.url) as client:
            memory = client.user("async-app", f"user/{uuid.uuid4().hex}")
            # Given a session and a project entry stored through the client
            stored = await memory.add_session("chat", ["I prefer dark mode", "My dog is called Pixel"])
            assert stored == {"session_id": "chat", "stored": 2, "skipped": 0}
            budget = await memory.add_entry("Trip budget is 2000 EUR", project_id="trip", idempotency_key="once")
            again = await memory.add_entry("Trip budget is 2000 EUR", project_id="trip", idempotency_key="once")
            assert again == budget  # the same key replays the first answer
            # When reading them back
            assert [e["id"] for e in await memory.search("budget", project_id="trip", mode="keyword")] == [budget["id"]]
            assert await memory.search("budget", mode="keyword") == []
            page = await memory.list_recent(limit=1, project_id="trip")
            assert len(page["entries"]) == 1
            assert page["next_cursor"] is not None
            assert len([e async for e in memory.iter_entries(project_id="trip", page_size=1)]) == 3
            assert (await memory.get_entry(budget["id"]))["project_id"] == "trip"
            # Then deletes report what they removed, and errors raise the library's error classes
            assert await memory.delete_entries("dark mode") == 1
            assert await memory.delete_session("chat") == 1
            assert await memory.delete_project("trip") == 1
            with pytest.raises(NotFound) as missing:
                await memory.get_entry(budget["id"])
            assert missing.value.code == "not_found"
            single = await memory.add_entry("a passing thought")
            assert await memory.delete_entry(single["id"]) is None
            assert [e async for e in memory.iter_entries()] == []

    asyncio.run(scenario())


def test_the_async_client_covers_the_graph_erasure_and_service_routes(live_server: LiveServer) -> None:
    async def scenario() -> None:
        async with AsyncMemoryClient(live_server.url) as client:
            memory = client.user("async-app", f"graph-{uuid.uuid4().hex}")
            # Given entities, observations and relations made through every graph write route
            [pixel] = await memory.create_entities([{"name": "Pixel", "entity_type": "dog", "observations": ["barks"]}])
            assert pixel["name"] == "Pixel"
            [beach] = await memory.add_observations("Pixel", ["likes the beach"])
            assert beach["content"] == "likes the beach"
            swapped = await memory.supersede_observation(beach["id"], "likes the lake")
            assert swapped["invalidated"]["id"] == beach["id"]
            barks = pixel["observations"][0]["id"]
            assert (await memory.invalidate_observation(barks))["valid_to"] is not None
            assert await memory.delete_observation(swapped["created"]["id"]) is None
            assert (await memory.remember("Alice", ["is a nurse"], entity_type="person"))["facts_added"] == 1
            assert (await memory.relate("Alice", "owns", "Pixel"))["related"] is True
            [walks] = await memory.create_relations([{"source": "Alice", "relation_type": "walks", "target": "Pixel"}])
            assert (await memory.invalidate_relation(walks["id"]))["valid_to"] is not None
            # Then the read routes see them
            assert [r["entity"]["name"] for r in await memory.search_nodes("nurse")] == ["Alice"]
            nodes = await memory.open_nodes(["Alice", "Pixel"])
            assert {e["name"] for e in nodes["entities"]} == {"Alice", "Pixel"}
            assert [r["relation_type"] for r in nodes["relations"]] == ["owns"]
            history = await memory.history("Pixel")
            assert [o["content"] for o in history["observations"]] == [
                "barks",
                "likes the beach",
            ]  # the lake was deleted
            assert {e["name"] for e in (await memory.read_graph())["entities"]} == {"Alice", "Pixel"}
            assert "Alice (person): is a nurse" in await memory.profile_card()
            owns = next(r for r in (await memory.read_graph())["relations"] if r["relation_type"] == "owns")
            assert await memory.delete_relation(owns["id"]) is None
            assert await memory.delete_relation(walks["id"]) is None
            assert await memory.delete_entity("Pixel") is None
            assert {e["name"] for e in (await memory.read_graph())["entities"]} == {"Alice"}
            assert await memory.add_episodes("chat", ["we talked about the lake"]) == 1
            assert [e["session_id"] for e in await memory.list_episodes(query="lake")] == ["chat"]
            # When the user is erased
            started = await memory.delete_user()
            status = await memory.deletion_status(started["deletion_id"])
            deadline = time.monotonic() + 30
            while status["status"] == "RUNNING" and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                status = await memory.deletion_status(started["deletion_id"])
            # Then nothing is left to export
            assert status["status"] == "SUCCEEDED"
            pages = [page async for page in memory.export()]
            assert pages[-1]["entries"] == []
            assert pages[-1]["graph"]["entities"] == []
            # And the service routes answer
            assert (await client.health())["status"] == "ok"
            assert (await client.capabilities())["graph"] is True
            assert "/v1/health" in (await client.openapi())["paths"]
            usage = await client.usage("async-app")
            assert usage["app"] == "async-app"
            assert usage["days"][-1]["requests"] > 0
            assert (await client.request("GET", "/v1/health"))["status"] == "ok"

    asyncio.run(scenario())


# -- retries ---------------------------------------------------------------------------------------


_REQUEST_LINE = re.compile(r'^<\d+> \S+ "(\S+) ([^ ?"]+)\S* [^"]*" (\d+) ')


def _access_log(path: Path) -> list[tuple[str, str, int]]:
    """(method, path, status) of every request the server logged (``--access-log``), in order."""
    lines = (_REQUEST_LINE.match(line) for line in path.read_text().splitlines())
    return [(m[1], m[2], int(m[3])) for m in lines if m]


def _logged(path: Path, count: int) -> list[tuple[str, str, int]]:
    """The access log once it holds ``count`` requests (a line is written just after its answer)."""
    deadline = time.monotonic() + 10
    while len(rows := _access_log(path)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return rows


@pytest.fixture
def quota_server(live_server_factory: ServerFactory, tmp_path: Path) -> tuple[LiveServer, str, Path]:
    """A server with keys required, and a key of app Q with a quota of 2 requests a day."""
    log = tmp_path / "access.log"
    server = live_server_factory(env={"MEMORY_AUTH": "required"}, args=("--workers", "1", "--access-log"), output=log)
    agentmem = str(Path(sys.executable).parent / "agentmem")
    created = subprocess.run(
        [agentmem, "keys", "create", "--app", "Q", "--quota", "2", "--db", str(server.db_path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MEMORY_STORE": "sqlite"},
    )
    return server, json.loads(created.stdout)["api_key"], log


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_throttled_request_is_retried_then_raises(quota_server: tuple[LiveServer, str, Path], kind: str) -> None:
    server, key, log = quota_server
    path = "/v1/apps/Q/users/u/memories"

    def run(call: str, *args: Any, idempotency_keys: bool = True) -> Any:
        if kind == "sync":
            memory = MemoryClient(server.url, api_key=key, retry=FAST, idempotency_keys=idempotency_keys).user("Q", "u")
            return getattr(memory, call)(*args)

        async def scenario() -> Any:
            client = AsyncMemoryClient(server.url, api_key=key, retry=FAST, idempotency_keys=idempotency_keys)
            async with client:
                return await getattr(client.user("Q", "u"), call)(*args)

        return asyncio.run(scenario())

    # Given an app whose daily quota of 2 requests is used up
    run("add_entry", "likes tea")
    run("list_recent")
    # When a read is throttled (429), it is sent again up to the policy's 3 retries, then raised
    with pytest.raises(RateLimited):
        run("list_recent")
    # And a write is retried too: the client gave it an Idempotency-Key
    with pytest.raises(RateLimited):
        run("add_entry", "likes coffee")
    # But a write without a key is not repeated
    with pytest.raises(RateLimited):
        run("add_entry", "likes cocoa", idempotency_keys=False)
    # Then the server saw each retry (the client stops at the policy's limit)
    # (counted, not ordered: a line is logged by the thread that answered, just after its answer, so the
    # next request, sent as soon as the answer arrives, may be logged by another thread first)
    assert Counter(row for row in _logged(log, 12) if row[1] == path) == Counter(
        [("POST", path, 201), ("GET", path, 200), *[("GET", path, 429)] * 4, *[("POST", path, 429)] * 5]
    )


def test_a_write_answered_503_is_retried_once_the_table_is_back(moto_endpoint: MotoEndpoint, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    env = {"MEMORY_DYNAMODB_ENDPOINT_URL": moto_endpoint.url, "MEMORY_EMBEDDER": "hashing"}
    server = start_server(tmp_path / "unused.db", env, args=("--workers", "1", "--access-log"), output=log)
    path = "/v1/apps/a/users/u/memories"

    def restart_after_first_503() -> None:
        deadline = time.monotonic() + 60
        while ("POST", path, 503) not in _access_log(log) and time.monotonic() < deadline:
            time.sleep(0.05)
        moto_endpoint.start_again()

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        retry = RetryPolicy(retries=6, base=0.2, cap=1.0)
        async with AsyncMemoryClient(server.url, retry=retry, timeout=60) as client:
            memory = client.user("a", "u")
            await memory.add_entry("stored before the outage")
            # Given the table goes down
            moto_endpoint.stop()
            back = threading.Thread(target=restart_after_first_503)
            back.start()
            # When a write is sent: the first attempt is answered 503, the table comes back, a retry lands
            written = await memory.add_entry("likes sailing")
            back.join()
            return written, [e async for e in memory.iter_entries()]

    try:
        written, entries = asyncio.run(scenario())
    finally:
        server.stop()
    # Then the write was acknowledged once and is stored once
    posts = [status for method, target, status in _access_log(log) if (method, target) == ("POST", path)]
    assert posts[0] == 201
    assert posts[1] == 503
    assert posts[-1] == 201
    assert [e["id"] for e in entries if e["content"]["parts"][0]["text"] == "likes sailing"] == [written["id"]]


def test_an_unreachable_server_raises_unavailable_after_the_retries() -> None:
    port = free_port()  # nothing listens there

    async def scenario() -> None:
        async with AsyncMemoryClient(f"http://127.0.0.1:{port}", retry=FAST) as client:
            await client.health()

    with pytest.raises(Unavailable):
        asyncio.run(scenario())
    with pytest.raises(Unavailable):
        MemoryClient(f"http://127.0.0.1:{port}", retry=FAST).health()
