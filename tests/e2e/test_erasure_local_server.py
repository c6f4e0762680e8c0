"""The erasure scenarios on the local server over HTTP: ``agentmem serve`` in a subprocess, its local
runner interpreting the packaged ASL file in a background thread, against the embedded SQLite store.

Graph-like items and episodes are written straight into the server's SQLite file (the graph routes
belong to another capability); entries go through the API."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentmem import users
from agentmem.deletion.runners import WORKFLOW_FILE
from agentmem.keys import UserRef
from agentmem.stores.sqlite_table import SqliteTable
from tests.e2e.conftest import LiveServer, ServerFactory
from tests.erasure_support import PROJECTS, WORKFLOW, graph_like_items
from tests.support import scope_path, text_entry

pytestmark = pytest.mark.xdist_group("erasure-e2e")


def seed(client: httpx.Client, db: Path, user: UserRef) -> None:
    path = scope_path(user.app, user.user)
    for project in (None, *PROJECTS):
        body: dict[str, Any] = {"entries": [text_entry(f"{user.user} says {i}") for i in range(3)]}
        if project:
            body["project_id"] = project
        assert client.put(f"{path}/sessions/s1/memories", json=body).status_code == 200
    table = SqliteTable(db)
    try:
        for project in (None, *PROJECTS):
            table.batch_write(puts=graph_like_items(user.scope(project), project or "global"))
    finally:
        table.close()


def export_all(client: httpx.Client, user: UserRef) -> dict[str, list[Any]]:
    collected: dict[str, list[Any]] = {"entries": [], "graph": [], "episodes": []}
    cursor = None
    while True:
        reply = client.get(f"{scope_path(user.app, user.user)}/export", params={"cursor": cursor} if cursor else None)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        collected["entries"] += body["entries"]
        collected["episodes"] += body["episodes"]
        collected["graph"] += [item for kind in sorted(body["graph"]) for item in body["graph"][kind]]
        cursor = body["next_cursor"]
        if cursor is None:
            return collected


def wait_done(client: httpx.Client, user: UserRef, deletion_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body: dict[str, Any] = client.get(f"{scope_path(user.app, user.user)}/deletions/{deletion_id}").json()
        if body["status"] != "RUNNING" or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def test_erasure_over_http_removes_the_user_and_only_the_user(live_server: LiveServer) -> None:
    ana, bob, namesake = UserRef("shop", "ana/1"), UserRef("shop", "bob"), UserRef("clinic", "ana/1")
    with live_server.client() as client:
        # Given a user in three projects with graph items and episodes, a neighbour and a namesake
        for user in (ana, bob, namesake):
            seed(client, live_server.db_path, user)
        bob_before, namesake_before = export_all(client, bob), export_all(client, namesake)

        # When the user is deleted
        started = client.delete(scope_path(ana.app, ana.user))

        # Then 202 with a deletion id; the background run succeeds with counts per kind
        assert started.status_code == 202
        deletion_id = started.json()["deletion_id"]
        status = wait_done(client, ana, deletion_id)
        assert status["status"] == "SUCCEEDED", status
        # the default local server embeds every entry: its 12 vectors live on the entries and go with them
        assert status["deleted"] == {"entries": 12, "vectors": 12, "graph_items": 12, "episodes": 8}
        assert status["finished_at"] >= status["started_at"]
        # and the export is empty, while the others keep everything
        assert export_all(client, ana) == {"entries": [], "graph": [], "episodes": []}
        assert export_all(client, bob) == bob_before
        assert export_all(client, namesake) == namesake_before


def test_failed_step_over_http_keeps_writes_refused_and_a_rerun_completes(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    # Given a server whose workflow file has a step the steps function does not know (a broken deploy)
    broken = json.loads(WORKFLOW.read_text())
    broken["States"]["Verify"]["Parameters"]["step"] = "verify_everything"
    broken_path = tmp_path / WORKFLOW_FILE
    broken_path.write_text(json.dumps(broken))
    server = live_server_factory(env={"MEMORY_DELETION_WORKFLOW_PATH": str(broken_path)})
    ana = UserRef("shop", "ana")
    path = scope_path(ana.app, ana.user)
    with server.client() as client:
        seed(client, server.db_path, ana)

        # When the user is deleted
        first = client.delete(path).json()["deletion_id"]

        # Then the deletion ends FAILED with the cause; writes get 409 with the error body; reads work
        status = wait_done(client, ana, first)
        assert status["status"] == "FAILED"
        assert status["error"]["code"] == "InvalidInput"
        refused = client.post(f"{path}/memories", json={"entry": text_entry("hello again")})
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "user_deletion_in_progress"
        assert client.get(f"{path}/export").status_code == 200
    server.stop()

    # When the server comes back with the real workflow and the deletion is requested again
    fixed = live_server_factory(db_path=server.db_path)
    with fixed.client() as client:
        rerun = client.delete(path)

        # Then a new deletion completes it and the user may write again
        assert rerun.status_code == 202
        assert rerun.json()["deletion_id"] != first
        assert wait_done(client, ana, rerun.json()["deletion_id"])["status"] == "SUCCEEDED"
        assert export_all(client, ana) == {"entries": [], "graph": [], "episodes": []}
        assert client.post(f"{path}/memories", json={"entry": text_entry("fresh")}).status_code == 201


@pytest.mark.slow
def test_user_with_5000_items_is_erased_over_http(live_server: LiveServer) -> None:
    # Given a user with 5,000 entries in two scopes, written into the server's store
    user = UserRef("shop", "hoarder")
    table = SqliteTable(live_server.db_path)
    try:
        for project in (None, "big"):
            scope = user.scope(project)
            table.batch_write(
                puts=[
                    users.registry_item(scope),
                    *[
                        {
                            "pk": scope.partition,
                            "sk": f"E#{i:06d}",
                            "id": f"{project}{i:06d}",
                            "project_id": project,
                            "content": '{"role":"user","parts":[{"text":"x"}]}',
                            "timestamp": "2026-01-01T00:00:00.000Z",
                        }
                        for i in range(2500)
                    ],
                ]
            )
    finally:
        table.close()
    with live_server.client() as client:
        # When the user is deleted
        started = client.delete(scope_path(user.app, user.user))
        # Then it completes and nothing is left
        status = wait_done(client, user, started.json()["deletion_id"])
        assert status["status"] == "SUCCEEDED"
        assert status["deleted"]["entries"] == 5000
        assert export_all(client, user)["entries"] == []
