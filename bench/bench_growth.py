"""`make bench ONLY=growth`: what each call of an agent's loop reads as one user's memory grows (issue 25, point 2).

One user holds N entries (1,000, 10,000 and 100,000; texts of 12 words drawn from 40, so each word is in
about a quarter of them, as the issue measured) and N graph entities. Two containers share the user's
SQLite file, each in a process of its own with its own caches, as two Lambda containers share the
table: the writer stores a turn, the searcher searches, the writer stores a turn, 20 times. For each call
the items it read and the read units it would cost on DynamoDB are counted at the Table port (the same
rules as agentmem/capacity.py: 4 KiB a unit per item read by key, per call on the total of a query), so
the figure is the same on any store and on any version of the code (BENCH_BEFORE=<git ref> runs the same
loop on that ref's library, for the slope before). A searcher's first search (its container's cold
start) is shown apart. Also printed: each call's p50 wall time here (hashing embedder, 2 cores).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchlib import scaled, unlimited

ROOT = Path(__file__).resolve().parent.parent
SIZES = [scaled(1000, 10), scaled(10_000, 100), scaled(100_000, 1000)]
LOOPS = scaled(20, 2)
WORDS = [f"word{n}" for n in range(40)]
READ_UNIT = 4096


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, dict):
        return 3 + sum(_size(k) + _size(v) + 1 for k, v in value.items())
    if isinstance(value, list | tuple):
        return 3 + sum(_size(v) + 1 for v in value)
    return 8


def _item_size(item: dict[str, Any]) -> int:
    return sum(len(k) + _size(v) for k, v in item.items())


class Counted:
    """A Table that counts, per call, the items it read and the read units DynamoDB would bill."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self.items = 0
        self.units = 0

    def get(self, pk: str, sk: str) -> Any:
        item = self._table.get(pk, sk)
        self.items += item is not None
        self.units += max(1, math.ceil(_item_size(item) / READ_UNIT)) if item else 1
        return item

    def batch_get(self, keys: Sequence[Any]) -> list[Any]:
        items = self._table.batch_get(keys)
        self.items += len(items)
        self.units += sum(max(1, math.ceil(_item_size(i) / READ_UNIT)) for i in items) + len(set(keys)) - len(items)
        return items

    def query(self, pk: str, prefix: str = "", **kw: Any) -> Any:
        page = self._table.query(pk, prefix, **kw)
        self.items += len(page.items)
        self.units += max(1, math.ceil(sum(_item_size(i) for i in page.items) / READ_UNIT))
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def _services(path: str) -> tuple[Counted, Any, Any]:
    from agentmem.embeddings.hashing import HashingEmbedder
    from agentmem.graph.service import GraphMemoryService
    from agentmem.memory.service import MemoryService
    from agentmem.stores.sqlite_table import SqliteTable

    table = Counted(SqliteTable(path))
    memory = unlimited(MemoryService(table, embedder=HashingEmbedder(384)))  # type: ignore[arg-type]
    return table, memory, GraphMemoryService(table)  # type: ignore[arg-type]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(12))


def _entry(text: str, author: str = "user") -> Any:
    from agentmem.models.memory import MemoryEntry

    return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}, "author": author})


def fill(path: str, entries: int, entities: int) -> None:
    from agentmem.keys import Scope

    _, memory, graph = _services(path)
    rng = random.Random(entries)
    scope = Scope("bench", "grower")
    for start in range(0, entries, 100):
        memory.add_session(scope, f"fill-{start}", [_entry(_text(rng)) for _ in range(min(100, entries - start))])
    for start in range(0, entities, 100):
        batch = [
            {"name": f"entity {n}", "entity_type": "thing", "observations": [_text(rng)]}
            for n in range(start, min(entities, start + 100))
        ]
        graph.create_entities(scope, batch)


def _searcher(path: str, requests: Any, answers: Any) -> None:
    from agentmem.keys import Scope

    table, memory, graph = _services(path)
    scope = Scope("bench", "grower")
    rng = random.Random(1)
    while True:
        kind = requests.get()
        if kind is None:
            return
        table.items = table.units = 0
        started = time.perf_counter()
        if kind == "graph search":
            graph.search_nodes(scope, " ".join(rng.sample(WORDS, 3)), 10)
        else:
            memory.search(scope, " ".join(rng.sample(WORDS, 4)), top_k=10, mode=kind.split()[-1])
        answers.put((kind, table.items, table.units, (time.perf_counter() - started) * 1000))


def loop(path: str) -> dict[str, list[tuple[int, int, float]]]:
    """The agent's loop, the searcher in its own process; per call kind, (items, units, ms) of each call."""
    from agentmem.keys import Scope

    table, memory, graph = _services(path)
    scope = Scope("bench", "grower")
    context = multiprocessing.get_context("spawn")
    requests, answers = context.Queue(), context.Queue()
    searcher = context.Process(target=_searcher, args=(path, requests, answers))
    searcher.start()
    calls: dict[str, list[tuple[int, int, float]]] = {}
    rng = random.Random(2)

    def ask(kind: str) -> None:
        requests.put(kind)
        name, items, units, ms = answers.get(timeout=600)
        calls.setdefault(name, []).append((items, units, ms))

    def write(kind: str, call: Callable[[], Any]) -> None:
        table.items = table.units = 0
        started = time.perf_counter()
        call()
        calls.setdefault(kind, []).append((table.items, table.units, (time.perf_counter() - started) * 1000))

    try:
        for kind in ("hybrid", "keyword", "semantic", "graph search"):  # a new container's first calls
            requests.put(kind if kind == "graph search" else f"search {kind}")
            name, items, units, ms = answers.get(timeout=1800)
            calls.setdefault(f"first {name} of a container", []).append((items, units, ms))
        for n in range(LOOPS):
            write("store a turn", lambda: memory.add_entry(scope, _entry(_text(rng), "user"), session_id="live"))
            for mode in ("hybrid", "keyword", "semantic"):
                ask(f"search {mode}")
            write("store a turn", lambda: memory.add_entry(scope, _entry(_text(rng), "assistant"), session_id="live"))
            write("graph remember", lambda n=n: graph.remember(scope, f"entity {n % 50}", [_text(rng)]))
            ask("graph search")
    finally:
        requests.put(None)
        searcher.join(timeout=60)
    return calls


def run(size: int) -> dict[str, list[tuple[int, int, float]]]:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "growth.db")
        started = time.perf_counter()
        fill(path, size, size)
        print(f"  filled {size:,} entries and entities in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        return loop(path)


def main() -> None:
    before = os.environ.get("BENCH_BEFORE")
    if before and not os.environ.get("BENCH_GROWTH_CHILD"):
        _run_before(before)
    results = {size: run(size) for size in SIZES}
    _report(results, "this tree")


def _report(results: dict[int, dict[str, list[tuple[int, int, float]]]], label: str) -> None:
    kinds = list(next(iter(results.values())))
    print(f"\nitems read / DynamoDB read units per call ({label}; mean of {LOOPS} loops), and p50 ms here:")
    print("| call | " + " | ".join(f"N = {size:,}" for size in results) + " | slope (units, first to last N) |")
    print("|---|" + "---|" * (len(results) + 1))
    for kind in kinds:
        cells = []
        means = []
        for size in results:
            samples = results[size].get(kind, [])
            items = statistics.mean(s[0] for s in samples)
            units = statistics.mean(s[1] for s in samples)
            ms = statistics.median(s[2] for s in samples)
            means.append(units)
            cells.append(f"{items:,.1f} / {units:,.1f} ({ms:,.1f} ms)")
        slope = (means[-1] - means[0]) / (SIZES[-1] - SIZES[0]) * 1000
        print(f"| {kind} | " + " | ".join(cells) + f" | {slope:+.3f} per 1,000 entries |")


def _run_before(ref: str) -> None:
    """This bench on ``ref``'s library (a worktree of it), for the slope before."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tree), ref], cwd=ROOT, check=True, capture_output=True
        )
        try:
            env = {
                **os.environ,
                "PYTHONPATH": f"{tree / 'layers/core/python'}:{ROOT / 'bench'}",
                "BENCH_GROWTH_CHILD": "1",
            }
            code = "import sys, bench_growth as g; g.main_before()"
            subprocess.run([sys.executable, "-c", code], cwd=ROOT / "bench", env=env, check=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)


def main_before() -> None:
    import agentmem

    results = {size: run(size) for size in SIZES}
    _report(results, f"before: {Path(agentmem.__file__).parents[3].name}")


if __name__ == "__main__":
    main()
