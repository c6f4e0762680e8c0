"""The local server over real HTTP: what a user does after `make serve`, following the README."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from urllib.parse import quote

import httpx

from tests.e2e.conftest import start_server
from tests.support import make_plan


def new_scope() -> str:
    return f"/v1/apps/e2e/users/{quote('user/' + uuid.uuid4().hex, safe='')}"


def entry(text: str) -> dict[str, object]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def test_the_readme_flow_store_search_list_get_delete(http: httpx.Client) -> None:
    scope = new_scope()
    # Given a finished session stored with PUT
    stored = http.put(
        f"{scope}/sessions/chat-1/memories",
        json={"entries": [entry("I prefer dark mode"), entry("My dog is called Pixel")]},
    )
    assert stored.status_code == 200
    assert stored.json() == {"session_id": "chat-1", "stored": 2, "skipped": 0}
    # When searching, listing and reading one entry
    found = http.post(f"{scope}/memories/search", json={"query": "what is my dog called"}).json()["entries"]
    # (the default local server searches in hybrid mode: every entry is ranked, the dog first)
    assert found[0]["content"]["parts"][0]["text"] == "My dog is called Pixel"
    listed = http.get(f"{scope}/memories", params={"limit": 10}).json()
    assert len(listed["entries"]) == 2
    one = http.get(f"{scope}/memories/{found[0]['id']}")
    assert one.json()["id"] == found[0]["id"]
    # Then deleting it makes it unreachable
    assert http.delete(f"{scope}/memories/{found[0]['id']}").status_code == 204
    assert http.get(f"{scope}/memories/{found[0]['id']}").status_code == 404


def test_errors_over_http_carry_the_error_body(http: httpx.Client) -> None:
    scope = new_scope()
    malformed = http.post(f"{scope}/memories", content=b"{oops", headers={"Content-Type": "application/json"})
    assert malformed.status_code == 400
    assert malformed.json()["error"]["code"] == "malformed_json"
    unknown = http.get("/v1/does-not-exist")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "route_not_found"
    too_big = http.post(f"{scope}/memories", content=b"x" * (6 * 1024 * 1024 + 10))
    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "payload_too_large"
    assert http.get(f"{scope}/memories").json()["entries"] == []


def test_concurrent_writes_are_all_kept(http: httpx.Client, live_server: object) -> None:
    # Given 6 clients writing 10 entries each at the same time
    scope = new_scope()
    failures: list[tuple[int, str]] = []

    def writer(worker: int) -> None:
        with httpx.Client(base_url=http.base_url, timeout=30) as client:
            for i in range(10):
                reply = client.post(f"{scope}/memories", json={"entry": entry(f"worker {worker} note {i}")})
                if reply.status_code != 201:
                    failures.append((reply.status_code, reply.text[:200]))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then every acknowledged write is listed
    assert failures == []
    seen = 0
    cursor = None
    while True:
        params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        page = http.get(f"{scope}/memories", params=params).json()
        seen += len(page["entries"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == 60
    assert len(http.post(f"{scope}/memories/search", json={"query": "note", "top_k": 100}).json()["entries"]) == 60


def test_acknowledged_writes_survive_a_server_restart(tmp_path: Path) -> None:
    db = tmp_path / "restart.db"
    server = start_server(db)
    try:
        reply = httpx.post(
            f"{server.url}/v1/apps/a/users/u/memories", json={"entry": entry("remember across restarts")}
        )
        assert reply.status_code == 201
    finally:
        server.stop()
    again = start_server(db)
    try:
        found = httpx.post(f"{again.url}/v1/apps/a/users/u/memories/search", json={"query": "restarts"}).json()
        assert [e["id"] for e in found["entries"]] == [reply.json()["id"]]
    finally:
        again.stop()


def test_make_serve_passes_port_and_db_through() -> None:
    # `make -n` prints the command without running it
    printed = make_plan("serve", "PORT=8001", "DB=/tmp/x.db")
    assert "agentmem serve --host 127.0.0.1 --port 8001 --db /tmp/x.db" in printed
