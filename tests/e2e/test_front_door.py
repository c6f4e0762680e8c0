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

from mcp import ClientSession, StdioServerParameters

from tests.e2e.conftest import REPO_ROOT, ServerFactory
from tests.mcp_support import over_stdio, structured

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


def test_the_stdio_server_refuses_a_store_that_does_not_exist_unless_told_to_create_it(tmp_path: Path) -> None:
    missing = tmp_path / "elsewhere" / "memory.db"
    # When the stdio server is started on a file that does not exist
    refused = subprocess.run(
        [*CLI, "mcp", "--app", "my-app", "--user", "alice", "--db", str(missing)],
        input="",
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=tmp_path,
        timeout=60,
    )
    # Then it does not start, says where it looked and what to do, and creates nothing
    assert refused.returncode == 2
    assert f"there is no store at {missing}" in refused.stderr
    assert "--create" in refused.stderr
    assert refused.stdout == ""
    assert not missing.parent.exists()
    # And without --db, from another directory, it names the absolute path it would have opened
    default = subprocess.run(
        [*CLI, "mcp", "--app", "my-app", "--user", "alice"],
        input="",
        capture_output=True,
        text=True,
        env={**_environment(), "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd=tmp_path,
        timeout=60,
    )
    assert default.returncode == 2
    assert f"there is no store at {tmp_path / '.data' / 'memory.db'}" in default.stderr

    # When it is told to create one, it serves the tools on a new, empty store
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentmem.cli", "mcp", "--app", "my-app", "--user", "alice", "--db", str(missing), "--create"],
        env={**_environment(), "MEMORY_EMBEDDER": "none"},
        cwd=str(REPO_ROOT),
    )

    async def read(session: ClientSession) -> object:
        return structured(await session.call_tool("read_graph", {}))

    assert over_stdio(params, read) == {"entities": [], "relations": []}
    assert missing.exists()


def test_the_printed_desktop_configuration_runs_from_any_directory(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    # Given a store that `make serve` serves, holding a fact written over REST
    server = live_server_factory()
    with server.client() as http:
        remembered = http.post(
            "/v1/apps/my-app/users/alice/graph/tools/remember",
            json={"entity": "Pixel", "entity_type": "dog", "facts": ["likes the beach"]},
        )
        assert remembered.status_code == 200, remembered.text
    # When the configuration is printed by the venv's own `agentmem` command, with the store's path as given
    launcher = Path(sys.executable).parent / "agentmem"
    command = [str(launcher)] if launcher.exists() else CLI
    relative = os.path.relpath(server.db_path, REPO_ROOT)
    printed = subprocess.run(
        [*command, "mcp", "--app", "my-app", "--user", "alice", "--db", relative, "--print-config"],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=REPO_ROOT,
        check=True,
    )
    entry = json.loads(printed.stdout)["mcpServers"]["memory"]
    # Then it names the command and the store by absolute paths
    assert os.path.isabs(entry["command"])
    assert entry["args"][-2:] == ["--db", str(server.db_path)]
    # And a client that starts it from another directory (as Claude Desktop does) reads that store
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environment = {"MEMORY_EMBEDDER": "none", "PATH": os.environ.get("PATH", "")}
    if os.environ.get("PYTHONPATH"):  # a work tree beside the venv's own checkout
        environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=environment, cwd=str(elsewhere))

    async def search(session: ClientSession) -> object:
        return structured(await session.call_tool("search_nodes", {"query": "beach"}))

    found = over_stdio(params, search)
    assert [e["name"] for e in found["entities"]] == ["Pixel"]  # type: ignore[index]
    assert not (elsewhere / ".data").exists()


def _print_config(cwd: Path, *db: str) -> subprocess.CompletedProcess[str]:
    launcher = Path(sys.executable).parent / "agentmem"
    command = [str(launcher)] if launcher.exists() else CLI
    return subprocess.run(
        [*command, "mcp", "--app", "my-app", "--user", "alice", *db, "--print-config"],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=cwd,
        check=True,
    )


def test_the_configuration_printed_outside_the_clone_names_the_clones_store(tmp_path: Path) -> None:
    # When the configuration is printed from a directory outside the clone, naming no store (issue 43, point 8b)
    printed = _print_config(tmp_path)
    entry = json.loads(printed.stdout)["mcpServers"]["memory"]
    # Then it names the store `make serve` keeps in the clone, not one in that directory
    store = REPO_ROOT / ".data" / "memory.db"
    assert entry["args"][-2:] == ["--db", str(store)]
    # And it says so when that store does not exist yet (the entry would refuse to start)
    assert ("there is no store at" in printed.stderr) == (not store.exists())


def test_the_configuration_says_when_its_store_does_not_exist(tmp_path: Path) -> None:
    # When the configuration names a file that is not there / one that is
    missing = _print_config(tmp_path, "--db", "nowhere/memory.db")
    (tmp_path / "here.db").write_bytes(b"")
    present = _print_config(tmp_path, "--db", "here.db")
    # Then the first says there is no store at its absolute path and how to make one; the second says nothing
    assert json.loads(missing.stdout)["mcpServers"]["memory"]["args"][-1] == str(tmp_path / "nowhere" / "memory.db")
    assert f"there is no store at {tmp_path / 'nowhere' / 'memory.db'} yet" in missing.stderr
    assert "--create" in missing.stderr
    assert json.loads(present.stdout)["mcpServers"]["memory"]["args"][-1] == str(tmp_path / "here.db")
    assert present.stderr == ""
