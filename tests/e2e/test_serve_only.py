"""A lean serve (issue 36, point 1): `make serve` installs only requirements-serve.txt, and that is all the
server needs. `make test` still installs everything.

The server runs here in the full test environment, with every module of a distribution outside the serve
requirements' closure made unimportable (a ``sitecustomize`` on its path), and is driven over HTTP across
its routes: REST, the graph, MCP, AgentCore, the console, usage and an erasure."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import REPO_ROOT, ServerFactory
from tests.import_blocker import blocked_modules, only_these, requirements_of
from tests.support import make_plan

SERVE = requirements_of(REPO_ROOT / "requirements-serve.txt")


def test_the_server_needs_nothing_outside_the_serve_requirements(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    blocked = blocked_modules(SERVE)
    # (the development tools are outside it: the check would catch an import of any of them)
    assert {"mcp", "pytest", "moto", "langgraph.store", "google.adk", "playwright"} <= blocked
    path = only_these(SERVE, tmp_path)
    # Given the server with every other distribution's modules unimportable (the local embedding model too)
    server = live_server_factory(
        env={"PYTHONPATH": path, "MEMORY_EMBEDDER": "local"},
        errors=tmp_path / "err",
        args=("--workers", "1"),
    )
    scope = "/v1/apps/my-app/users/alice"
    with server.client() as http:
        # When it is used across its routes
        answers = [
            http.put(
                f"{scope}/sessions/chat-1/memories",
                json={"entries": [{"content": {"parts": [{"text": "My dog is called Pixel"}]}}]},
            ),
            http.post(f"{scope}/memories/search", json={"query": "what is my pet called?"}),
            http.post(f"{scope}/graph/tools/relate", json={"source": "alice", "relation": "owns", "target": "Pixel"}),
            http.get(f"{scope}/graph/profile-card"),
            http.post(f"{scope}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            http.post(
                "/agentcore/memories/my-app-memory/events",
                json={
                    "actorId": "alice",
                    "sessionId": "s1",
                    "eventTimestamp": 1_700_000_000,
                    "payload": [{"conversational": {"content": {"text": "hello"}, "role": "USER"}}],
                },
            ),
            http.get("/console"),
            http.get("/v1/openapi.json"),
            http.get("/v1/apps/my-app/usage"),
            http.get(f"{scope}/export"),
        ]
        erasure = http.delete(scope)
        assert erasure.status_code == 202, erasure.text
        deadline = time.monotonic() + 60
        while (status := http.get(f"{scope}/deletions/{erasure.json()['deletion_id']}").json())["status"] == "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.1)
    # Then every route answered, and nothing outside the serve requirements was even tried
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 200, 201, 200, 200, 200, 200], [
        a.text[:200] for a in answers if a.status_code >= 300
    ]
    assert status["status"] == "SUCCEEDED"
    assert answers[1].json()["entries"][0]["content"]["parts"][0]["text"] == "My dog is called Pixel"
    assert "blocked import" not in (tmp_path / "err").read_text()


def _readme_code(row: str) -> tuple[str, str]:
    """The README row's call and its import (its first two code spans)."""
    (line,) = [line for line in (REPO_ROOT / "README.md").read_text().splitlines() if line.startswith(f"| {row} |")]
    call, imported, *_ = re.findall(r"`([^`]+)`", line.split("|")[2])
    return call, imported


def test_the_readmes_python_rows_run_with_only_the_serve_requirements(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    # Given the server, alice's memory holding a fact, and a Python with only the serve requirements importable
    server = live_server_factory(env={"MEMORY_EMBEDDER": "hashing"}, args=("--workers", "1"))
    with server.client() as http:
        put = http.put(
            "/v1/apps/my-app/users/alice/sessions/chat-1/memories",
            json={"entries": [{"content": {"parts": [{"text": "My pet is a dog"}]}}]},
        )
        assert put.status_code == 200, put.text
    call, imported = _readme_code("Python")
    awaited, imported_async = _readme_code("Python, async")
    assert awaited.startswith("await ")
    script = f"""
import asyncio, json
{imported}
{imported_async}

async def main():
    return {awaited}

print(json.dumps([{call}, asyncio.run(main())]))
""".replace("http://127.0.0.1:8000", server.url)
    # When the README's Python rows run there, as written
    run = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": only_these(SERVE, tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Then both find the fact (what was blocked was only tried: httpx's optional imports, such as its CLI's click)
    assert run.returncode == 0, run.stderr[-3000:]
    answers = json.loads(run.stdout)
    assert [[e["content"]["parts"][0]["text"] for e in a] for a in answers] == [["My pet is a dog"]] * 2


def test_make_serve_installs_only_the_serve_requirements_and_make_test_everything(tmp_path: Path) -> None:
    # Given a checkout without a virtual environment
    venv = f"VENV={tmp_path / 'venv'}"
    serve = make_plan("serve", venv)
    test = make_plan("test", venv)
    # Then make serve creates it, installs the serve requirements, says what it does, and starts
    planned = serve
    assert "-m venv" in planned
    assert "-r requirements-serve.txt" in planned
    assert "installing what serving needs" in planned
    assert "building the embedding engine for this CPU in the background" in planned
    assert planned.splitlines()[-1].startswith(f"{tmp_path / 'venv'}/bin/agentmem serve ")
    # and nothing of the test or development tools
    for other in (
        "requirements-dev.txt",
        "requirements-infra.txt",
        "requirements-agents.txt",
        "bench/requirements.txt",
        "npm ",
        "mvn ",
    ):
        assert other not in planned, other
    # While make test installs all of it, in the same environment
    for needed in (
        "-r requirements-serve.txt",
        "-r requirements-dev.txt",
        "-r requirements-infra.txt",
        "-r bench/requirements.txt",
        "tune-engine",
    ):
        assert needed in test, needed
