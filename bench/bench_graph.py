"""Graph memory figures: search_nodes and profile_card latency at 1k and 10k entities (5 observations
each) in one scope, in-process on SQLite, and the items a search reads at 10k (its read cost on DynamoDB).

Run alone with ``python bench/bench_graph.py`` or through ``make bench``.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import scaled

from agentmem.graph.service import GraphMemoryService
from agentmem.keys import Scope
from agentmem.stores.sqlite_table import SqliteTable
from tests.counting import CountingTable

SIZES = (scaled(1_000, 50), scaled(10_000, 100))
OBSERVATIONS = 5
QUERIES = scaled(200, 4)
CARDS = scaled(200, 4)
SCOPE = Scope("bench", "user")
TYPES = ["person", "project", "company", "place", "preference", "tool", "book", "team", "event", "pet"]


def _vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def _build(graph: GraphMemoryService, count: int, rng: random.Random, words: list[str]) -> list[str]:
    names = []
    batch: list[dict[str, Any]] = []
    for i in range(count):
        name = f"{rng.choice(words).title()} {rng.choice(words).title()} {i}"
        names.append(name)
        facts = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 8))) for _ in range(OBSERVATIONS)]
        batch.append({"name": name, "entity_type": rng.choice(TYPES), "observations": facts})
        if len(batch) == 100:
            graph.create_entities(SCOPE, batch)
            batch = []
    if batch:
        graph.create_entities(SCOPE, batch)
    return names


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _measure(size: int, workdir: Path) -> dict[str, Any]:
    rng = random.Random(size)
    words = _vocabulary(rng)
    sqlite = SqliteTable(workdir / f"graph-{size}.db")
    counting = CountingTable(sqlite)
    graph = GraphMemoryService(counting)  # type: ignore[arg-type]
    started = time.perf_counter()
    names = _build(graph, size, rng, words)
    build_seconds = time.perf_counter() - started
    kinds = {
        # two words of the facts' vocabulary: each matches ~100 observations at 10k
        "fact words": [" ".join(rng.choice(words) for _ in range(2)) for _ in range(QUERIES // 2)],
        # a name word and an entity type: the type alone matches a tenth of all entities
        "name + type": [rng.choice(names).split()[0] + " " + rng.choice(TYPES) for _ in range(QUERIES // 2)],
    }
    search: dict[str, tuple[float, float]] = {}
    reads: list[int] = []
    reads_by_kind: dict[str, float] = {}
    search_all: list[float] = []
    for kind, queries in kinds.items():
        samples, kind_reads = [], []
        for query in queries:
            counting.items_read = 0
            begin = time.perf_counter()
            graph.search_nodes(SCOPE, query, limit=10)
            samples.append((time.perf_counter() - begin) * 1000)
            kind_reads.append(counting.items_read)
        search[kind] = _percentiles(samples)
        search_all += samples
        reads += kind_reads
        reads_by_kind[kind] = statistics.mean(kind_reads)
    card_ms, card_reads = [], []
    for _ in range(CARDS):
        counting.items_read = 0
        begin = time.perf_counter()
        graph.profile_card(SCOPE)
        card_ms.append((time.perf_counter() - begin) * 1000)
        card_reads.append(counting.items_read)
    import sqlite3

    with sqlite3.connect(sqlite.path) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    sqlite.close()
    return {
        "stored": stored,
        "size": size,
        "build_s": build_seconds,
        "search": _percentiles(search_all),
        "by_kind": search,
        "reads_by_kind": reads_by_kind,
        "card": _percentiles(card_ms),
        "reads_mean": statistics.mean(reads),
        "reads_p95": _percentiles([float(r) for r in reads])[1],
        "reads_max": max(reads),
        "card_reads": statistics.mean(card_reads),
    }


def main() -> None:
    print("== graph memory (in-process, SQLite, one scope, 5 observations per entity)")
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            r = _measure(size, Path(tmp))
            print(
                f"{r['size']:>6} entities (built in {r['build_s']:.0f} s): "
                f"search_nodes p50 {r['search'][0]:.2f} ms p95 {r['search'][1]:.2f} ms | "
                f"profile_card p50 {r['card'][0]:.2f} ms p95 {r['card'][1]:.2f} ms"
            )
            for kind, (p50, p95) in r["by_kind"].items():
                print(
                    f"{'':>8}{kind:<12} search p50 {p50:.2f} ms p95 {p95:.2f} ms, "
                    f"items read per search {r['reads_by_kind'][kind]:.0f}"
                )
            print(
                f"{'':>8}items read per search: mean {r['reads_mean']:.0f}, p95 {r['reads_p95']:.0f}, "
                f"max {r['reads_max']} (the table holds {r['stored']} items); "
                f"per profile card: {r['card_reads']:.0f}"
            )


if __name__ == "__main__":
    main()
