"""The local server as a real subprocess (``agentmem serve``), driven over HTTP with httpx."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LiveServer:
    base_url: str
    db_path: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return self.base_url

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30.0)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    db_path: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    *,
    args: Sequence[str] = ("--workers", "2"),
    output: Path | None = None,
    errors: Path | None = None,
) -> LiveServer:
    """Start ``agentmem serve`` on a free port with the embedded store at ``db_path``; wait for health.

    The caller's MEMORY_* variables are not inherited: each server is configured only by ``env`` and
    ``args`` (two worker processes unless told otherwise). ``output`` receives the server's stdout
    (the banner, and the access log with ``--access-log``), ``errors`` its stderr.
    """
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    # Erasures do not wait for in-flight writes unless a test asks (MEMORY_DELETION_DRAIN_SECONDS).
    environment.update({"PYTHONUNBUFFERED": "1", "MEMORY_DELETION_DRAIN_SECONDS": "0", **(env or {})})
    command = [sys.executable, "-m", "agentmem.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with open(output or os.devnull, "wb") as stdout, open(errors or os.devnull, "wb") as stderr:
        process = subprocess.Popen(
            [*command, "--db", str(db_path), *args],
            cwd=REPO_ROOT,
            env=environment,
            stdout=stdout,
            stderr=stderr,
        )
    server = LiveServer(f"http://127.0.0.1:{port}", db_path, process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the local server exited with {process.returncode}")
        try:
            if httpx.get(f"{server.base_url}/v1/health", timeout=1.0).status_code < 500:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("the local server did not answer in time")


ServerFactory = Callable[..., LiveServer]


def create_key(db: Path, app: str = "acme", *args: str) -> str:
    """A key of ``app`` made by ``agentmem keys create`` in the store at ``db`` (``args``: its other options)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    command = [sys.executable, "-m", "agentmem.cli", "keys", "create", "--app", app, "--db", str(db), *args]
    made = subprocess.run(command, capture_output=True, text=True, env=env, check=True, cwd=REPO_ROOT)
    return str(json.loads(made.stdout)["api_key"])


@pytest.fixture
def live_server_factory(tmp_path: Path) -> Iterator[ServerFactory]:
    """Start local servers (``factory(env={...}, db_path=..., args=..., output=...)``); all stopped afterwards."""
    started: list[LiveServer] = []

    def factory(env: Mapping[str, str] | None = None, db_path: Path | None = None, **options: Any) -> LiveServer:
        server = start_server(db_path or tmp_path / f"memory-{len(started)}.db", env, **options)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def live_server(live_server_factory: ServerFactory) -> LiveServer:
    """One local server on a fresh SQLite file."""
    return live_server_factory()


@pytest.fixture
def http(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.client() as client:
        yield client


@dataclass
class MotoEndpoint:
    """A moto server over HTTP, in this process. It can be stopped and started again on its port."""

    url: str
    servers: list[Any]

    def stop(self) -> None:
        self.servers[-1].stop()

    def start_again(self) -> None:
        """A new server on the same port: the in-process moto keeps its tables across the restart."""
        from moto.server import ThreadedMotoServer

        self.servers.append(ThreadedMotoServer(ip_address="127.0.0.1", port=int(self.url.rsplit(":", 1)[1])))
        self.servers[-1].start()


@pytest.fixture
def moto_endpoint() -> Iterator[MotoEndpoint]:
    """A fresh moto server: every moto server of this process shares one state, emptied before and after
    each test, so no test finds another's tables."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    endpoint = MotoEndpoint(f"http://127.0.0.1:{port}", [ThreadedMotoServer(ip_address="127.0.0.1", port=port)])
    endpoint.servers[0].start()
    httpx.post(f"{endpoint.url}/moto-api/reset").raise_for_status()
    yield endpoint
    with contextlib.suppress(httpx.HTTPError):  # a test may leave it stopped: the next one empties it first
        httpx.post(f"{endpoint.url}/moto-api/reset", timeout=10)
    endpoint.stop()
