"""How the cost of the REST path grows with size: keyword search, a memory write and a listing at N = 1k,
10k and 100k memories in one scope (``BENCH_REST_SIZES``), through the real local server (``agentmem
serve``: gunicorn worker processes) on one SQLite file and a keep-alive connection. The data is written
in-process through MemoryService in sessions of 500 (no embedder: keyword search needs none), then
served; the seeding rate is printed too (bulk ingest in-process). Throughput with 1, 4 and 16 clients
is bench_server.py's.
Run alone with ``python bench/run.py rest`` or ``make bench ONLY=rest``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import UNLIMITED_ENTRIES, LocalServer, Rest, percentiles, scaled, sentence, unlimited, vocabulary

SIZES = [
    int(s)
    for s in os.environ.get(
        "BENCH_REST_SIZES", f"{scaled(1_000, 100)},{scaled(10_000, 200)},{scaled(100_000, 500)}"
    ).split(",")
]
SCOPE_PATH = "/v1/apps/bench/users/big"


def _entry(text: str) -> dict[str, Any]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def seed(db: Path, have: int, target: int, rng: random.Random, words: list[str]) -> float:
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores.sqlite_table import SqliteTable

    table = SqliteTable(db)
    service = unlimited(MemoryService(table))
    started = time.perf_counter()
    while have < target:
        count = min(500, target - have)
        entries = [MemoryEntry.model_validate(_entry(sentence(rng, words))) for _ in range(count)]
        service.add_session(Scope("bench", "big"), f"seed-{have}", entries)
        have += count
    table.close()
    return time.perf_counter() - started


def _queries(rng: random.Random, words: list[str], count: int = scaled(200, 5)) -> list[str]:
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
            ("POST", f"{SCOPE_PATH}/memories", {"entry": _entry(sentence(rng, words))}) for _ in range(scaled(50, 5))
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


def main() -> None:
    rng = random.Random(3)
    words = vocabulary()
    grown: dict[int, dict[str, tuple[float, float]]] = {}
    seeding: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "rest.db"
        have = 0
        for size in sorted(SIZES):
            print(f"REST: seeding {size:,} memories in one scope (in-process)", file=sys.stderr, flush=True)
            seconds = seed(db, have, size, rng, words)
            print(f"  seeded {size - have:,} in {seconds:.1f} s", file=sys.stderr, flush=True)
            seeding[size] = (size - have) / seconds
            with LocalServer(db, env=UNLIMITED_ENTRIES) as server:
                grown[size] = latency(server.port, rng, words)
            have = size + 50  # the writes measured
    print("REST latency as one scope grows (p50 / p95 ms; local server, SQLite, no embedder)")
    labels = list(next(iter(grown.values())))
    print(f"{'call':<34}" + "".join(f"{f'N={size:,}':>22}" for size in grown))
    for label in labels:
        cells = [f"{grown[size][label][0]:8.2f} / {grown[size][label][1]:8.2f}" for size in grown]
        print(f"{label:<34}" + "".join(f"{c:>22}" for c in cells))
    rates = [f"{seeding[size]:8.0f}/s" for size in grown]
    print(f"{'seeding in-process (memories/s)':<34}" + "".join(f"{r:>22}" for r in rates))


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
    main()
