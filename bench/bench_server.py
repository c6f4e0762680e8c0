"""The local server over REST, as a client calls it: `agentmem serve` (gunicorn worker processes) on one
SQLite file, driven by httpx clients on keep-alive connections.

Prints p50/p95 of ``GET /v1/health``, a keyword search at N = 10k memories (W1: N/10 sessions of 10
turns in one scope, queries of 2-4 words taken from a target memory) and a graph ``search_nodes`` at
E = 1k entities of 5 observations (W2: single-word queries) and one memory write, then keyword-search
throughput with 1, 4 and 16 concurrent clients (each on its own connection, for a fixed time) with the
error count and the server's CPU time per request (what the figures would be on idle cores).

The data is written in-process (no embedder: keyword search needs none), then served. To measure
another checkout's server on the same data: ``BENCH_SERVER_PYTHONPATH=<its layers/core/python>`` and
``BENCH_SERVER_ARGS`` (default ``--workers <cores>``; empty for a server without that option).
"""

from __future__ import annotations

import os
import random
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from benchlib import SCALE, percentiles, report, scaled, sentence, vocabulary

MEMORIES = scaled(10_000, 100)
ENTITIES = scaled(1_000, 100)
QUERIES = scaled(200, 5)
CLIENTS = (1, 4, 16)
SECONDS = 5.0 * min(1.0, max(SCALE, 0.1))
APP, USER = "bench", "user"


def seed(path: Path, rng: random.Random) -> tuple[list[str], list[str]]:
    """W1 and W2 in one scope of one SQLite file; returns the keyword queries and the graph queries."""
    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores.sqlite_table import SqliteTable

    words = vocabulary()
    scope = Scope(APP, USER)
    table = SqliteTable(path)
    memory = MemoryService(table)
    texts = []
    for session in range(MEMORIES // 10):
        turns = [sentence(rng, words) for _ in range(10)]
        texts += turns
        entries = [MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": t}]}}) for t in turns]
        memory.add_session(scope, f"s{session}", entries)
    keyword_queries = []
    for _ in range(QUERIES):
        target = rng.choice(texts).split()
        keyword_queries.append(" ".join(rng.sample(target, min(len(target), rng.randint(2, 4)))))
    graph = GraphMemoryService(table)
    facts_words = words[:1000]
    for start in range(0, ENTITIES, 100):
        batch: list[dict[str, Any]] = [
            {
                "name": f"{rng.choice(words).title()} {i}",
                "entity_type": "thing",
                "observations": [" ".join(rng.choices(facts_words, k=rng.randint(4, 8))) for _ in range(5)],
            }
            for i in range(start, start + 100)
        ]
        graph.create_entities(scope, batch)
    table.close()
    return keyword_queries, [rng.choice(facts_words) for _ in range(QUERIES)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env["MEMORY_EMBEDDER"] = "none"
    if os.environ.get("BENCH_SERVER_PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["BENCH_SERVER_PYTHONPATH"]
    from agentmem.local.server import default_workers

    extra = shlex.split(os.environ.get("BENCH_SERVER_ARGS", f"--workers {default_workers()}"))
    command = [sys.executable, "-m", "agentmem.cli", "serve", "--port", str(port), "--db", str(db), *extra]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {shlex.join(command)}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                print(f"  server: {shlex.join(command[1:6] + extra)}", flush=True)
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the server did not answer in time")


def _latency(client: httpx.Client, label: str, calls: list[tuple[str, str, dict[str, Any]]], status: int = 200) -> None:
    samples = []
    for method, path, options in calls:
        started = time.perf_counter()
        reply = client.request(method, path, **options)
        samples.append((time.perf_counter() - started) * 1000)
        assert reply.status_code == status, reply.text[:200]
    report(f"REST {label}", samples)


def _server_cpu_seconds(pid: int) -> float | None:
    """CPU time used so far by the server's master and workers (Linux /proc), or None elsewhere."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = 0
        for process in [str(pid), *children]:
            fields = Path(f"/proc/{process}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    except OSError:
        return None
    return total / os.sysconf("SC_CLK_TCK")


def _throughput(url: str, calls: list[tuple[str, str, dict[str, Any]]], clients: int, server_pid: int) -> None:
    counts = [0] * clients
    errors = [0] * clients
    samples: list[list[float]] = [[] for _ in range(clients)]
    deadline: list[float] = []
    # The clock runs once every client is connected (16 connecting on a busy machine can take longer than
    # the measurement itself).
    barrier = threading.Barrier(clients, action=lambda: deadline.append(time.monotonic() + SECONDS))

    def run(n: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            client.get("/v1/health")  # connect before the clock runs
            barrier.wait()
            i = n
            while time.monotonic() < deadline[0]:
                method, path, options = calls[i % len(calls)]
                started = time.perf_counter()
                try:
                    ok = client.request(method, path, **options).status_code == 200
                except httpx.HTTPError:
                    ok = False
                samples[n].append((time.perf_counter() - started) * 1000)
                counts[n] += ok
                errors[n] += not ok
                i += clients

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    cpu_before = _server_cpu_seconds(server_pid)
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    cpu_after = _server_cpu_seconds(server_pid)
    p50, p95 = percentiles([s for per in samples for s in per])
    done = sum(counts) + sum(errors)
    cpu = (
        ""
        if cpu_before is None or cpu_after is None
        else f"   server CPU {(cpu_after - cpu_before) / done * 1000:.2f} ms/req"
    )
    print(
        f"REST keyword search, {clients:>2} concurrent clients{'':<17} {sum(counts) / elapsed:7.0f} req/s   "
        f"p50 {p50:6.2f} ms   p95 {p95:7.2f} ms   errors {sum(errors)}{cpu}",
        flush=True,
    )


def measure(url: str, keyword_queries: list[str], graph_queries: list[str], server_pid: int) -> None:
    scope = f"/v1/apps/{APP}/users/{quote(USER, safe='')}"
    health = [("GET", "/v1/health", {})] * QUERIES
    search = [
        ("POST", f"{scope}/memories/search", {"json": {"query": q, "mode": "keyword", "top_k": 10}})
        for q in keyword_queries
    ]
    nodes = [("GET", f"{scope}/graph/search", {"params": {"q": q, "limit": 10}}) for q in graph_queries]
    writes = [
        ("POST", f"/v1/apps/{APP}/users/writer/memories", {"json": {"entry": {"content": {"parts": [{"text": q}]}}}})
        for q in keyword_queries
    ]
    with httpx.Client(base_url=url, timeout=30) as client:
        for call in search[:20] + nodes[:20]:  # warm the worker this connection reaches
            client.request(call[0], call[1], **call[2])
        _latency(client, "GET /v1/health", health)
        _latency(client, f"keyword search, N={MEMORIES:,} memories", search)
        _latency(client, f"graph search_nodes, E={ENTITIES:,} entities", nodes)
        _latency(client, "POST one memory (no embedder; synced commit)", writes, status=201)
    for clients in CLIENTS:
        _throughput(url, search, clients, server_pid)


def main() -> None:
    rng = random.Random(2026)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "server.db"
        started = time.perf_counter()
        keyword_queries, graph_queries = seed(db, rng)
        print(f"  seeded {MEMORIES} memories and {ENTITIES} entities in {time.perf_counter() - started:.1f} s")
        process, url = start_server(db)
        try:
            measure(url, keyword_queries, graph_queries, process.pid)
            print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: other work shares them)")
        finally:
            process.terminate()
            process.wait(30)


if __name__ == "__main__":
    main()
