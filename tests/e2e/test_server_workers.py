"""The local server's worker processes: several serve at once, share one SQLite file without losing a
write, and an erasure started in one worker finishes while another answers the polls.

Which worker served a request is read from the access log (``--access-log``: the worker's pid first).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.e2e.conftest import LiveServer, ServerFactory
from tests.support import text_entry

_ACCESS = re.compile(r'^<(\d+)> \S+ "(\S+) (\S+) HTTP/1\.1" (\d+)')
CLIENTS = 16


def served_by(log: Path) -> list[tuple[int, str, str, int]]:
    """(worker pid, method, target, status) of every request in the access log so far."""
    lines = log.read_text(encoding="utf-8").splitlines()
    return [(int(m[1]), m[2], m[3], int(m[4])) for m in map(_ACCESS.match, lines) if m]


def logged_pid(log: Path, method: str, target: str, timeout: float = 10.0) -> int:
    """The worker that served a request (its access-log line is written just after the answer is sent)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [pid for pid, m, t, _ in served_by(log) if (m, t) == (method, target)]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"{method} {target} is not in the access log"
        time.sleep(0.05)


def worker_pids(server: LiveServer) -> set[int]:
    """The server's worker processes: the children of its master process."""
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()
    return {int(pid) for pid in children}


def logged_server(factory: ServerFactory, tmp_path: Path, **env: str) -> tuple[LiveServer, Path]:
    log = tmp_path / "access.log"
    return factory(env=env or None, args=("--workers", "2", "--access-log"), output=log), log


def in_parallel(calls: list[Callable[[], Any]], clients: int = CLIENTS) -> list[Any]:
    with ThreadPoolExecutor(clients) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


def test_concurrent_writes_across_worker_processes_are_all_kept(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    server, log = logged_server(live_server_factory, tmp_path, MEMORY_EMBEDDER="hashing")
    scopes = [f"/v1/apps/load/users/{quote(f'u/{n}', safe='')}" for n in range(2)]

    # Given 16 clients writing 15 entries each into two scopes, a new connection per request (so that
    # every worker gets some)
    def writer(client_no: int) -> list[tuple[str, str]]:
        acknowledged = []
        with httpx.Client(
            base_url=server.base_url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0)
        ) as client:
            for i in range(15):
                scope = scopes[(client_no + i) % 2]
                reply = client.post(f"{scope}/memories", json={"entry": text_entry(f"client {client_no} note {i}")})
                assert reply.status_code == 201, reply.text
                acknowledged.append((scope, reply.json()["id"]))
        return acknowledged

    results = in_parallel([lambda n=n: writer(n) for n in range(CLIENTS)])
    acknowledged = [pair for batch in results for pair in batch]

    # Then both worker processes wrote, and every acknowledged entry is listed, once
    writers = {pid for pid, method, _, status in served_by(log) if method == "POST" and status == 201}
    assert writers == worker_pids(server)
    assert len(writers) == 2
    with server.client() as client:
        for scope in scopes:
            listed: list[str] = []
            cursor = None
            while True:
                params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
                page = client.get(f"{scope}/memories", params=params).json()
                listed += [entry["id"] for entry in page["entries"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert sorted(listed) == sorted(entry_id for s, entry_id in acknowledged if s == scope)
    assert len(acknowledged) == CLIENTS * 15


def test_an_erasure_started_in_one_worker_finishes_while_another_answers(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    server, log = logged_server(live_server_factory, tmp_path)
    path = f"/v1/apps/shop/users/{quote('ana/1', safe='')}"
    with server.client() as client:
        for session in ("s1", "s2"):
            body = {"entries": [text_entry(f"ana says {i}") for i in range(5)]}
            assert client.put(f"{path}/sessions/{session}/memories", json=body).status_code == 200
        # When the user is deleted (the workflow runs in the background of the worker that answered)
        started = client.delete(path)
        assert started.status_code == 202
    deletion_id = started.json()["deletion_id"]
    starter = logged_pid(log, "DELETE", path)

    # And the status is polled on fresh connections, several at a time, until the other worker says it is done
    def poll(n: int) -> tuple[int, str]:
        with server.client() as client:
            reply = client.get(f"{path}/deletions/{deletion_id}", params={"poll": n})
            assert reply.status_code == 200, reply.text
            return n, reply.json()["status"]

    statuses: dict[int, str] = {}
    deadline = time.monotonic() + 120
    while True:
        statuses.update(in_parallel([lambda n=n: poll(n) for n in range(len(statuses), len(statuses) + 4)], 4))
        succeeded = [n for n, status in statuses.items() if status == "SUCCEEDED"]
        done_elsewhere = [
            n for n in succeeded if logged_pid(log, "GET", f"{path}/deletions/{deletion_id}?poll={n}") != starter
        ]
        if done_elsewhere:
            break
        assert time.monotonic() < deadline, f"no other worker saw the erasure finish: {statuses}"
        time.sleep(0.05)

    # Then it succeeded (no poll ever saw a failure) and the user has nothing left
    assert set(statuses.values()) <= {"RUNNING", "SUCCEEDED"}
    with server.client() as client:
        exported = client.get(f"{path}/export").json()
        assert exported["entries"] == []
        assert exported["episodes"] == []
