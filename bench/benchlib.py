"""Small helpers shared by the benchmarks."""

from __future__ import annotations

import importlib.util
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

SCALE = float(os.environ.get("BENCH_SCALE", "1"))
"""How much of each workload runs: 1 for ``make bench``; the test tier's smoke run (tests/bench) uses a
hundredth, which checks that every section still runs, not how fast."""


def data_module(name: str) -> ModuleType:
    """``bench/data/<name>.py`` (the benchmarks' own generated sets), imported once by its file."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "data" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def emulated_aws(region: str = "us-east-1") -> None:
    """Region and stand-in credentials for the emulators (moto), unless the environment has its own."""
    for name, value in {
        "AWS_DEFAULT_REGION": region,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
    }.items():
        os.environ.setdefault(name, value)


def scaled(full: int, least: int = 1) -> int:
    """``full`` items of a workload at :data:`SCALE`, at least ``least``."""
    return max(least, round(full * SCALE))


UNLIMITED_ENTRIES = {"MEMORY_MAX_ENTRIES": "10000000"}
"""A server's environment for a bench that holds more entries a user than the table backend serves by default
(agentmem/vectors/exact.py MAX_ENTRIES): the bench measures past it."""


def unlimited(service: Any) -> Any:
    """``service`` (a MemoryService) without the table backend's entries-per-user limit, where the code under
    test has one (a bench run against an older tree has none)."""
    index = service._search.vector_index
    if hasattr(index, "max_entries"):
        index.max_entries = None
    return service


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def agentcore_client(server: LocalServer) -> Any:
    """boto3's own ``bedrock-agentcore`` client against the local server's AgentCore API (no credentials it
    checks)."""
    import boto3

    return boto3.client(
        "bedrock-agentcore",
        endpoint_url=f"{server.base}/agentcore",
        region_name="us-east-1",
        aws_access_key_id="unused",
        aws_secret_access_key="unused",
    )


def timed(calls: Sequence[Callable[[], object]]) -> list[float]:
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def report(label: str, samples_ms: list[float]) -> None:
    p50, p95 = percentiles(samples_ms)
    print(f"{label:<58} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   (n={len(samples_ms)})", flush=True)


def vocabulary(size: int = 3000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ra", "su", "to", "vi", "ze", "po", "an", "el", "or", "ti", "ba", "qu"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


_ZIPF_OFFSET = 100  # the head of a Zipf distribution is stopwords, which the tokenizer drops


def _zipf_weights(size: int) -> list[float]:
    return [1 / (rank + _ZIPF_OFFSET) for rank in range(1, size + 1)]


def sentence(rng: random.Random, words: list[str], length: tuple[int, int] = (8, 20)) -> str:
    """Words drawn by a Zipf law over content words: a few are common, most are rare, as in real notes."""
    weights = _zipf_weights(len(words))
    return " ".join(rng.choices(words, weights=weights, k=rng.randint(*length)))


# -- the real local server and a keep-alive REST client -------------------------------------------


def server_environment(embedder: str = "none") -> dict[str, str]:
    """The environment of a bench's own server or stdio process: no MEMORY_* of the caller, our tree first."""
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(
        {"MEMORY_EMBEDDER": embedder, "PYTHONPATH": os.pathsep.join([str(root / "layers/core/python"), str(root)])}
    )
    return env


class LocalServer:
    """``agentmem serve`` (gunicorn worker processes) on a free loopback port, on a SQLite file."""

    def __init__(
        self, db: object, *, workers: int = 0, embedder: str = "none", env: dict[str, str] | None = None
    ) -> None:
        import socket
        import subprocess
        import sys
        import urllib.request

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        command = [sys.executable, "-m", "agentmem.cli", "serve", "--port", str(self.port), "--db", str(db)]
        if workers:
            command += ["--workers", str(workers)]
        self._process = subprocess.Popen(
            command,
            env={**server_environment(embedder), **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/v1/health", timeout=1):
                    return
            except OSError:
                if self._process.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the local server did not start")

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except Exception:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


class Rest:
    """One keep-alive HTTP/1.1 connection (stdlib http.client: little client overhead in the figures).

    The server closes a connection idle past its read timeout (15 s): a call on it then opens a new one
    and sends again (the server never read the first: nothing was done twice)."""

    def __init__(self, port: int) -> None:
        import http.client

        self._connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method: str, path: str, body: object = None, expect: int | None = None) -> object:
        import http.client
        import json

        payload = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        try:
            self._connection.request(method, path, body=payload, headers=headers)
            response = self._connection.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self._connection.close()
            self._connection.request(method, path, body=payload, headers=headers)
            response = self._connection.getresponse()
        data = response.read()
        if (expect is not None and response.status != expect) or response.status >= 400:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:300]!r}")
        return json.loads(data) if data else None

    def close(self) -> None:
        self._connection.close()


def ratio(ours_ms: float, peer_ms: float) -> str:
    """Ours over the peer's (below 1: we are faster)."""
    return f"{ours_ms / peer_ms:6.2f}x" if peer_ms > 0 else "     -"


# -- W1 (issue 11): N memories as N/10 sessions of 10 turns, 200 keyword queries of 2-4 words ---------


def w1(memories: int, queries: int = 200, seed: int = 1) -> tuple[list[list[str]], list[tuple[str, str]]]:
    """The sessions (10 turns each) and (query, the memory it was taken from), generated deterministically."""
    rng = random.Random(seed)
    words = vocabulary()
    sessions = [[sentence(rng, words) for _ in range(10)] for _ in range(memories // 10)]
    asked = []
    for _ in range(queries):
        target = rng.choice(rng.choice(sessions))
        asked.append((" ".join(rng.sample(target.split(), rng.randint(2, 4))), target))
    return sessions, asked
