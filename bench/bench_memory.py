"""Memory core figures: add_entry and keyword search at 1k and 10k entries in one user scope (SQLite,
in-process through MemoryService), and the cold import time of functions/api/handler.py."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import report, scaled, sentence, timed, vocabulary

from agentmem.keys import Scope
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.stores.sqlite_table import SqliteTable

ROOT = Path(__file__).resolve().parent.parent


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"})


def _fill(service: MemoryService, scope: Scope, rng: random.Random, words: list[str], target: int, have: int) -> None:
    session = have // 500
    while have < target:
        batch = [_entry(sentence(rng, words)) for _ in range(min(500, target - have))]
        service.add_session(scope, f"seed-{session}", batch)
        have += len(batch)
        session += 1


def memory_figures() -> None:
    rng = random.Random(42)
    words = vocabulary()
    with tempfile.TemporaryDirectory() as tmp:
        table = SqliteTable(Path(tmp) / "bench.db")
        service = MemoryService(table)
        scope = Scope("bench", "user-1")
        have = 0
        for size in (scaled(1_000, 50), scaled(10_000, 100)):
            _fill(service, scope, rng, words, size, have)
            have = size
            adds = timed(
                [lambda: service.add_entry(scope, _entry(sentence(rng, words))) for _ in range(scaled(200, 5))]
            )
            have += scaled(200, 5)
            queries = [" ".join(rng.sample(sentence(rng, words, (6, 12)).split(), 3)) for _ in range(scaled(200, 5))]
            searches = timed([lambda q=q: service.search(scope, q, top_k=10) for q in queries])
            report(f"add_entry at {size:,} entries (SQLite, in-process)", adds)
            report(f"keyword search top 10 at {size:,} entries (SQLite, in-process)", searches)
        table.close()


def cold_import() -> None:
    code = "import time; t = time.perf_counter(); import functions.api.handler; print((time.perf_counter() - t) * 1000)"
    env = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true"}
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )
        runs.append(float(out.stdout.strip()))
    runs.sort()
    print(
        f"{'cold import of functions/api/handler.py':<58} median {runs[2]:7.1f} ms   "
        f"min {runs[0]:7.1f} ms   (5 fresh processes)"
    )
    trace = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import functions.api.handler"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    top = []
    for line in trace.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cumulative_us, name = line.removeprefix("import time:").split("|")
        if not name[1:].startswith(" "):  # nested imports are indented further
            top.append((int(cumulative_us), name.strip()))
    top.sort(reverse=True)
    print(
        "  heaviest top-level imports (cumulative, -X importtime): "
        + ", ".join(f"{n} {us / 1000:.0f} ms" for us, n in top[:6])
    )


def main() -> None:
    memory_figures()
    cold_import()
