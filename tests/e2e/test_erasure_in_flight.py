"""A local erasure waits for the user's requests in flight, not for the whole drain (issue 36, point 5).

The real server (two worker processes, the default 30 s drain made 60 here so that a wait for it cannot pass
for a wait for the request), driven over HTTP: an erasure of a user with no request in flight finishes in
a few seconds; one that meets a slow write of that user (a session the local model embeds for seconds,
on a kept-alive connection of the other worker) finishes only after that write was answered, and still
long before the drain."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentmem.in_flight import UserLocks, store_identity
from agentmem.keys import UserRef
from tests.e2e.conftest import ServerFactory
from tests.support import scope_path, text_entry

pytestmark = pytest.mark.xdist_group("erasure-e2e")

DRAIN = 60


def _finish(client: httpx.Client, path: str, deletion_id: str) -> tuple[float, dict[str, Any]]:
    """Poll the erasure; when it was first seen finished (monotonic) and its status."""
    deadline = time.monotonic() + 2 * DRAIN
    while time.monotonic() < deadline:
        status: dict[str, Any] = client.get(f"{path}/deletions/{deletion_id}").json()
        if status["status"] != "RUNNING":
            return time.monotonic(), status
        time.sleep(0.05)
    raise AssertionError("the erasure did not finish")


def _worker_of(client: httpx.Client, log: Path) -> str:
    """The pid of the worker that answers ``client``'s connection (the access log's line of a request it
    sends now: gunicorn writes it once the answer is sent, so it is waited for)."""
    seen = len(log.read_text().splitlines())
    assert client.get("/v1/health").status_code == 200
    deadline = time.monotonic() + 10
    while len(lines := log.read_text().splitlines()) <= seen:
        assert time.monotonic() < deadline, "no access log line"
        time.sleep(0.02)
    return lines[seen].split()[0]


def _wait_until_in_flight(locks: UserLocks, user: UserRef, answered: dict[str, Any]) -> None:
    """Until a request of ``user`` holds its lock (the write has passed its first check and embeds), or the write
    was answered first."""
    deadline = time.monotonic() + 120
    while locks.wait_idle(user, 0):
        assert "at" not in answered, f"the write was answered before it was seen in flight: {answered}"
        assert time.monotonic() < deadline, "the write never began"
        time.sleep(0.005)


def test_an_erasure_with_no_request_in_flight_does_not_wait_for_the_drain(live_server_factory: ServerFactory) -> None:
    # Given a user with memories, on a server whose erasures may wait up to a minute for writes in flight
    server = live_server_factory(env={"MEMORY_DELETION_DRAIN_SECONDS": str(DRAIN), "MEMORY_EMBEDDER": "hashing"})
    path = scope_path("my-app", "alice")
    with server.client() as client:
        stored = client.put(f"{path}/sessions/chat-1/memories", json={"entries": [text_entry("I like tea")]})
        assert stored.status_code == 200
        # When the user is erased
        started = time.monotonic()
        erasure = client.delete(path)
        assert erasure.status_code == 202
        finished_at, status = _finish(client, path, erasure.json()["deletion_id"])
        # Then it has finished within seconds, with the counts, and the user may write again
        assert status["status"] == "SUCCEEDED", status
        assert status["deleted"]["entries"] == 1
        assert finished_at - started < 10, finished_at - started
        deadline = time.monotonic() + 10
        while (again := client.post(f"{path}/memories", json={"entry": text_entry("back")})).status_code == 409:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert again.status_code == 201


def test_an_erasure_waits_for_a_write_of_that_user_in_flight_and_no_longer(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    # Given two kept-alive connections, each to another worker process (the access log names the worker)
    log = tmp_path / "access.log"
    server = live_server_factory(
        env={"MEMORY_DELETION_DRAIN_SECONDS": str(DRAIN), "MEMORY_EMBEDDER": "local"},
        args=("--workers", "2", "--access-log"),
        output=log,
    )
    path = scope_path("my-app", "alice")
    writer = httpx.Client(base_url=server.url, timeout=120)
    eraser = httpx.Client(base_url=server.url, timeout=120)
    try:
        mine = _worker_of(writer, log)
        for _ in range(50):
            eraser.close()
            eraser = httpx.Client(base_url=server.url, timeout=120)
            if _worker_of(eraser, log) != mine:
                break
        else:
            pytest.fail("no connection reached the second worker")
        assert eraser.post(f"{path}/memories", json={"entry": text_entry("I like tea")}).status_code == 201

        # When a long session of the user is being written (the local model embeds it: a second or more on any
        # machine, and well inside the request's 25 s on a busy one) ...
        long_text = " ".join(f"word{j} about the garden and the dog" for j in range(60))
        session = {"entries": [text_entry(f"turn {i}: {long_text}") for i in range(6)]}
        answered: dict[str, Any] = {}

        def write() -> None:
            reply = writer.put(f"{path}/sessions/long/memories", json=session)
            answered.update(at=time.monotonic(), status=reply.status_code, body=reply.json())

        thread = threading.Thread(target=write)
        thread.start()
        # ... and, once the write is in flight (it holds the user's lock from its first check, before it embeds),
        # the user is erased through the other worker
        locks = UserLocks.for_store(store_identity("sqlite", str(server.db_path), "", None))
        _wait_until_in_flight(locks, UserRef("my-app", "alice"), answered)
        erasure = eraser.delete(path)
        accepted_at = time.monotonic()
        assert erasure.status_code == 202
        assert "at" not in answered, "the write finished before the erasure began: it did not meet it"
        finished_at, status = _finish(eraser, path, erasure.json()["deletion_id"])
        thread.join(120)
    finally:
        writer.close()
        eraser.close()

    # Then the write, which met the mark, was refused and left nothing
    assert answered["status"] == 409, answered
    assert answered["body"]["error"]["code"] == "user_deletion_in_progress"
    # and the erasure finished only after it was answered, and long before the drain
    assert status["status"] == "SUCCEEDED", status
    assert finished_at > answered["at"]
    assert finished_at - accepted_at < DRAIN / 2, finished_at - accepted_at
    with server.client() as client:
        export = client.get(f"{path}/export").json()
    assert export["entries"] == []
