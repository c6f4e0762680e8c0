"""Writers racing an erasure against the real local server (worker processes), over HTTP.

Three client threads keep writing for one user (entries, session replacements, graph facts, some with
an Idempotency-Key) while the user is erased; what the race cannot do, whatever the interleaving:
answer anything but 2xx or 409, leave behind a write it refused, keep a write acknowledged before the
erasure was requested, or leave an item no later erasure reaches."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from agentmem.keys import UserRef
from agentmem.stores.sqlite_table import SqliteTable
from tests.e2e.conftest import ServerFactory
from tests.erasure_support import keys_of_user
from tests.support import scope_path, text_entry

pytestmark = pytest.mark.xdist_group("erasure-e2e")

ANA = UserRef("shop", "ana")
PATH = scope_path(ANA.app, ANA.user)


@dataclass(frozen=True)
class Answer:
    marker: str
    status: int
    code: str | None
    answered_at: float


def _write(client: httpx.Client, kind: str, marker: str, n: int) -> httpx.Response:
    headers = {"Idempotency-Key": marker} if n % 3 == 0 else {}
    if kind == "entry":
        return client.post(f"{PATH}/memories", json={"entry": text_entry(marker)}, headers=headers)
    if kind == "session":
        entries = [text_entry(f"{marker} turn {i}") for i in range(5)]
        return client.put(f"{PATH}/sessions/s-{n % 2}/memories", json={"entries": entries}, headers=headers)
    facts = {"entities": [{"name": f"E{n % 4}", "observations": [marker]}]}
    return client.post(f"{PATH}/graph/entities", json=facts, headers=headers)


def _stored_text(client: httpx.Client) -> str:
    """Everything the export holds for the user, as one text to search markers in."""
    pages = []
    cursor = None
    while True:
        reply = client.get(f"{PATH}/export", params={"cursor": cursor} if cursor else None)
        assert reply.status_code == 200, reply.text
        pages.append(reply.text)
        cursor = reply.json()["next_cursor"]
        if cursor is None:
            return "\n".join(pages)


def _erase(client: httpx.Client) -> tuple[float, dict[str, Any]]:
    """DELETE the user; return when it was accepted and its final status."""
    started = client.delete(PATH)
    assert started.status_code == 202, started.text
    accepted_at = time.monotonic()
    deletion_id = started.json()["deletion_id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(f"{PATH}/deletions/{deletion_id}").json()
        if body["status"] != "RUNNING":
            return accepted_at, body
        time.sleep(0.05)
    raise AssertionError("the erasure did not finish")


def test_concurrent_writers_during_an_erasure_leave_nothing_the_erasure_should_have_removed(
    live_server_factory: ServerFactory,
) -> None:
    # Given a server with two worker processes whose erasures wait 2 s for in-flight writes (the
    # hashing embedder keeps each request short, so many of them meet the erasure)
    server = live_server_factory(env={"MEMORY_DELETION_DRAIN_SECONDS": "2", "MEMORY_EMBEDDER": "hashing"})
    answers: list[Answer] = []
    lock = threading.Lock()
    stop = threading.Event()
    counter = itertools.count()

    def writer(kind: str) -> None:
        with server.client() as client:
            while not stop.is_set():
                n = next(counter)
                marker = f"m{n:05d}x"
                reply = _write(client, kind, marker, n)
                code = reply.json()["error"]["code"] if reply.status_code >= 400 else None
                with lock:
                    answers.append(Answer(marker, reply.status_code, code, time.monotonic()))

    threads = [threading.Thread(target=writer, args=(kind,), daemon=True) for kind in ("entry", "session", "graph")]
    with server.client() as client:
        for thread in threads:
            thread.start()
        while len(answers) < 15:  # the writers are under way
            time.sleep(0.02)

        # When the user is erased while the three keep writing, and for a while after it finished (again, up to
        # five times, until a write meets an erasure: the local server's erasure ends as soon as no request of
        # the user is in flight, so one can fall between two writes)
        for _ in range(5):
            sent_at = time.monotonic()
            accepted_at, status = _erase(client)
            assert status["status"] == "SUCCEEDED", status
            seen = len(answers)
            while len(answers) < seen + 15:
                time.sleep(0.02)
            if any(a.status == 409 for a in answers):
                break
        stop.set()
        for thread in threads:
            thread.join(60)
        stored = _stored_text(client)

        # Then the erasure succeeded, and every write was either done (2xx) or refused with the 409 body
        assert status["status"] == "SUCCEEDED", status
        assert {a.status for a in answers} <= {200, 201, 409}, sorted({a.status for a in answers})
        assert {a.code for a in answers if a.status == 409} <= {"user_deletion_in_progress"}
        refused = [a for a in answers if a.status == 409]
        assert refused, "no write met the erasure"
        # a refused write left nothing
        assert [a.marker for a in refused if a.marker in stored] == []
        # a write acknowledged before the erasure was requested did not survive it
        assert [a.marker for a in answers if a.status < 300 and a.answered_at < sent_at and a.marker in stored] == []
        # and what the writers stored after it is all reachable: a second erasure leaves no item at all
        assert any(a.status < 300 and a.answered_at > accepted_at for a in answers)
        assert _erase(client)[1]["status"] == "SUCCEEDED"
    table = SqliteTable(server.db_path)
    try:
        # (the status says SUCCEEDED once the receipt is written; the workflow's last step, which lifts the
        # deletion mark, follows it)
        deadline = time.monotonic() + 30
        while keys_of_user(table, ANA) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert keys_of_user(table, ANA) == []
    finally:
        table.close()
