"""The first hour at the command line (issue 36): what `agentmem serve`, `agentmem keys create` and
`agentmem mcp` tell a new user, run as real processes (the MCP client is the official SDK's stdio client)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import REPO_ROOT, ServerFactory

CLI = [sys.executable, "-m", "agentmem.cli"]


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}


def test_the_banner_names_the_console_and_the_root_leads_to_it(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    # Given a server started as `make serve` starts it
    server = live_server_factory(output=tmp_path / "out")
    lines = (tmp_path / "out").read_text().splitlines()
    # Then its banner names the console, the health route and the OpenAPI document by full URL
    assert f"console: {server.url}/console" in "\n".join(lines)
    assert f"{server.url}/v1/health" in "\n".join(lines)
    with server.client() as http:
        # And GET / sends a browser to the console, and tells curl where things are
        root = http.get("/")
        assert root.status_code == 302
        assert root.headers["location"] == "/console"
        assert root.json()["console"] == "/console"
        assert root.json()["health"] == "/v1/health"
        page = http.get("/", follow_redirects=True)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert http.head("/").status_code == 302


def test_a_port_in_use_is_refused_at_once_with_a_hint(tmp_path: Path) -> None:
    # Given a port some other process listens on
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        # When the server is asked to serve on it
        started = time.monotonic()
        run = subprocess.run(
            [*CLI, "serve", "--port", str(port), "--db", str(tmp_path / "m.db"), "--workers", "1"],
            capture_output=True,
            text=True,
            env=_environment(),
            cwd=REPO_ROOT,
            timeout=60,
        )
        took = time.monotonic() - started
    # Then it stops at once, with one line saying what to do, and none of gunicorn's retries
    assert run.returncode == 2, run.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in run.stderr
    assert f"make serve PORT={port + 1}" in run.stderr
    assert "Connection in use" not in run.stderr
    assert took < 5, took


def test_keys_create_prints_the_key_line_then_the_hint_on_its_own_line(tmp_path: Path) -> None:
    # When a key is made with stdout and stderr in one pipe (as a terminal or `2>&1` shows them)
    made = subprocess.run(
        [*CLI, "keys", "create", "--app", "my-app", "--db", str(tmp_path / "m.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_environment(),
        cwd=REPO_ROOT,
        check=True,
    )
    # Then the key's JSON is a line of its own, and the hint follows it on the next
    key_line, hint, *rest = made.stdout.split("\n")
    assert json.loads(key_line)["api_key"].startswith("amk_")
    assert hint == "store this key now: it is shown once and only its hash is kept"
    assert rest == [""]
