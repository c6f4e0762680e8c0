"""One tenant's flood is not another tenant's outage on the local server (issue 41, point 7).

A real ``agentmem serve`` with keys, one worker (one request at a time, as one Lambda execution environment):
tenant A sends a dozen large session uploads at once, again and again; tenant B searches meanwhile. Before, A's
uploads held every request thread and queued ahead of B, whose searches waited for all of them or timed out. Now
A holds at most its threads (the rest of its flood answered 429 ``too_many_in_flight`` with Retry-After) and B's
search takes the handler's next turn: every one of B's requests is answered, none with an error."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx

from agentmem.local.server import TENANT_THREADS
from tests.e2e.conftest import ServerFactory, create_key
from tests.support import scope_path, text_entry

FLOOD = 12
"""A's uploads in flight at once (the review's flood)."""


def test_a_tenants_flood_of_uploads_leaves_another_tenants_searches_answered(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    db = tmp_path / "memory.db"
    noisy, quiet = create_key(db, "noisy"), create_key(db, "quiet")
    server = live_server_factory(db_path=db, env={"MEMORY_EMBEDDER": "hashing"}, args=("--workers", "1"))
    quiet_path = scope_path("quiet", "bo")
    with httpx.Client(base_url=server.url, timeout=120, headers={"x-api-key": quiet}) as client:
        assert client.post(f"{quiet_path}/memories", json={"entry": text_entry("bo likes jazz")}).status_code == 201
    # (a session of about 300 KB: the review sent 640 KB)
    turn = " ".join(f"word{j} of the long meeting notes" for j in range(300))
    upload = {"entries": [text_entry(f"{i}: {turn}") for i in range(30)]}
    noisy_answers: list[tuple[int, str | None, str | None]] = []
    quiet_answers: list[int] = []
    flooding = threading.Event()
    flooding.set()

    def flood_one(n: int) -> None:
        with httpx.Client(base_url=server.url, timeout=120, headers={"x-api-key": noisy}) as client:
            while flooding.is_set():
                reply = client.put(f"{scope_path('noisy', f'u{n}')}/sessions/s/memories", json=upload)
                code = reply.json().get("error", {}).get("code") if reply.status_code >= 400 else None
                noisy_answers.append((reply.status_code, code, reply.headers.get("retry-after")))

    threads = [threading.Thread(target=flood_one, args=(n,), daemon=True) for n in range(FLOOD)]
    for thread in threads:
        thread.start()
    try:
        # When B searches while A's flood runs (until A has been refused: it meets its cap once B is about)
        with httpx.Client(base_url=server.url, timeout=120, headers={"x-api-key": quiet}) as client:
            for _ in range(200):
                found = client.post(f"{quiet_path}/memories/search", json={"query": "jazz"})
                quiet_answers.append(found.status_code)
                if len(quiet_answers) >= 5 and any(status == 429 for status, _, _ in noisy_answers):
                    break
    finally:
        flooding.clear()
        for thread in threads:
            thread.join(120)

    # Then every search of B was answered, none with an error
    assert quiet_answers == [200] * len(quiet_answers)
    # And A was refused past its threads, with the code and a Retry-After, and served otherwise
    refused: list[Any] = [a for a in noisy_answers if a[0] == 429]
    assert refused, noisy_answers
    assert all(code == "too_many_in_flight" and retry == "1" for _, code, retry in refused), refused
    assert any(status == 200 for status, _, _ in noisy_answers), noisy_answers
    assert FLOOD > TENANT_THREADS
