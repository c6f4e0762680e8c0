"""The REST path as clients call it: the real local server (``agentmem serve``: gunicorn worker
processes, one request at a time each) on one SQLite file, keep-alive connections.

1. Throughput of keyword searches with 1, 4 and 16 concurrent clients (each its own connection, for a
   fixed time; W1 data at N = 10k in one scope), with p50/p95 and the error count.
2. How cost grows with size: REST keyword search, a memory write and a listing at N = 1k, 10k and 100k
   memories in one scope (``BENCH_REST_SIZES``). The data is written in-process through MemoryService in
   sessions of 500 (no embedder: keyword search needs none), then served.
Run alone with ``python bench/run.py rest`` or ``make bench ONLY=rest``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import LocalServer, Rest, percentiles, sentence, vocabulary

SIZES = [int(s) for s in os.environ.get("BENCH_REST_SIZES", "1000,10000,100000").split(",")]
THROUGHPUT_AT = 10_000
CLIENTS = (1, 4, 16)
SECONDS = float(os.environ.get("BENCH_REST_SECONDS", "5"))
SCOPE_PATH = "/v1/apps/bench/users/big"


def _entry(text: str) -> dict[str, Any]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def seed(db: Path, have: int, target: int, rng: random.Random, words: list[str]) -> float:
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores.sqlite_table import SqliteTable

    table = SqliteTable(db)
    service = MemoryService(table)
    started = time.perf_counter()
    while have < target:
        count = min(500, target - have)
        entries = [MemoryEntry.model_validate(_entry(sentence(rng, words))) for _ in range(count)]
        service.add_session(Scope("bench", "big"), f"seed-{have}", entries)
        have += count
    table.close()
    return time.perf_counter() - started


def _queries(rng: random.Random, words: list[str], count: int = 200) -> list[str]:
    return [" ".join(rng.sample(sentence(rng, words, (8, 12)).split(), rng.randint(2, 4))) for _ in range(count)]


def latency(port: int, rng: random.Random, words: list[str]) -> dict[str, tuple[float, float]]:
    rest = Rest(port)
    figures: dict[str, tuple[float, float]] = {}
    calls = {
        "keyword search top 10": [
            ("POST", f"{SCOPE_PATH}/memories/search", {"query": q, "top_k": 10, "mode": "keyword"})
            for q in _queries(rng, words)
        ],
        "add a memory (POST /memories)": [
            ("POST", f"{SCOPE_PATH}/memories", {"entry": _entry(sentence(rng, words))}) for _ in range(50)
        ],
        "list newest 20 (GET /memories)": [("GET", f"{SCOPE_PATH}/memories?limit=20", None)] * 50,
    }
    for label, requests in calls.items():
        samples = []
        for method, path, body in requests:
            started = time.perf_counter()
            rest.call(method, path, body)
            samples.append((time.perf_counter() - started) * 1000)
        figures[label] = percentiles(samples)
    rest.close()
    return figures


def throughput(port: int, clients: int, queries: list[str]) -> tuple[float, float, float, int]:
    """Requests per second, p50, p95 and errors of ``clients`` threads searching for SECONDS."""
    samples: list[float] = []
    errors = [0]
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(index: int) -> None:
        rest = Rest(port)
        mine, failed, i = [], 0, index
        start.wait()
        while time.perf_counter() < deadline[0]:
            body = {"query": queries[i % len(queries)], "top_k": 10, "mode": "keyword"}
            i += clients
            began = time.perf_counter()
            try:
                rest.call("POST", f"{SCOPE_PATH}/memories/search", body, expect=200)
            except Exception:
                failed += 1
                rest.close()
                rest = Rest(port)
            mine.append((time.perf_counter() - began) * 1000)
        rest.close()
        with lock:
            samples.extend(mine)
            errors[0] += failed

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    deadline[0] = time.perf_counter() + SECONDS
    begun = time.perf_counter()
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - begun
    p50, p95 = percentiles(samples)
    return len(samples) / elapsed, p50, p95, errors[0]


def main() -> None:
    rng = random.Random(3)
    words = vocabulary()
    workers = os.cpu_count() or 1
    grown: dict[int, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "rest.db"
        have = 0
        for size in sorted(set(SIZES) | {THROUGHPUT_AT}):
            print(f"REST: seeding {size:,} memories in one scope (in-process)", file=sys.stderr, flush=True)
            seconds = seed(db, have, size, rng, words)
            print(f"  seeded {size - have:,} in {seconds:.1f} s", file=sys.stderr, flush=True)
            have = size
            with LocalServer(db) as server:
                if size in SIZES:
                    grown[size] = latency(server.port, rng, words)
                    have += 50  # the writes measured
                if size == THROUGHPUT_AT:
                    queries = _queries(rng, words)
                    print(
                        f"keyword search throughput over REST, N={size:,} in one scope, {workers} workers, "
                        f"{SECONDS:.0f} s per level, each client its own keep-alive connection"
                    )
                    for clients in CLIENTS:
                        print(f"  {clients} clients", file=sys.stderr, flush=True)
                        rate, p50, p95, errors = throughput(server.port, clients, queries)
                        print(
                            f"  {clients:>2} clients: {rate:7.1f} requests/s   p50 {p50:7.2f} ms   "
                            f"p95 {p95:7.2f} ms   errors {errors}",
                            flush=True,
                        )
    print("REST latency as one scope grows (p50 / p95 ms; local server, SQLite, no embedder)")
    labels = list(next(iter(grown.values())))
    print(f"{'call':<34}" + "".join(f"{f'N={size:,}':>22}" for size in grown))
    for label in labels:
        cells = [f"{grown[size][label][0]:8.2f} / {grown[size][label][1]:8.2f}" for size in grown]
        print(f"{label:<34}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
    main()
