"""`make bench ONLY=scale`: one user with 100,000 entries through the local server (issue 25, point 5).

The entries (texts of 12 words drawn from 40, as the issue's growth runs) are written in-process with the
hashing embedder (the fast stand-in the issue allows for the ingest), then `agentmem serve` (2 workers, the
same embedder) is started on the file and driven over REST on a keep-alive connection. Printed: the
server's start-up time and memory; each worker's first search (it reads the partition once); p50/p95 of
each search mode, a write, a search right after a write (the other worker catches up from the change
log), a list page and an export page. The OpenSearch backend at 100,000 entries on the real node is in
`make bench ONLY=filters` (filtered k-NN p50).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from benchlib import UNLIMITED_ENTRIES, LocalServer, Rest, report, scaled, unlimited

ENTRIES = scaled(100_000, 1000)
SAMPLES = scaled(50, 5)
WORDS = [f"word{n}" for n in range(40)]
APP, USER = "bench", "scaled"
PATH = f"/v1/apps/{APP}/users/{USER}"


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(12))


def fill(db: Path) -> None:
    from agentmem.embeddings.hashing import HashingEmbedder
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores.sqlite_table import SqliteTable

    table = SqliteTable(db)
    memory = unlimited(MemoryService(table, embedder=HashingEmbedder(384)))
    rng = random.Random(25)
    scope = Scope(APP, USER)
    for start in range(0, ENTRIES, 500):
        entries = [
            MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": _text(rng)}]}})
            for _ in range(min(500, ENTRIES - start))
        ]
        memory.add_session(scope, f"fill-{start}", entries)
    table.close()


def _rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children (the gunicorn workers), from /proc."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return total / 1024


def main() -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "scale.db"
        started = time.perf_counter()
        fill(db)
        print(f"{ENTRIES:,} entries written in-process in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        print(f"SQLite file: {db.stat().st_size / 2**20:,.0f} MB for {ENTRIES:,} entries")
        started = time.perf_counter()
        server = LocalServer(db, workers=2, embedder="hashing", env=UNLIMITED_ENTRIES)
        print(f"start-up (process start to the first health answer): {(time.perf_counter() - started) * 1000:,.0f} ms")
        try:
            rest = Rest(server.port)

            def search(mode: str) -> None:
                query = " ".join(rng.sample(WORDS, 4))
                rest.call("POST", f"{PATH}/memories/search", {"query": query, "mode": mode, "top_k": 10})

            first = []
            for _ in range(4):  # each of the 2 workers reads the partition once; connections may land on either
                begun = time.perf_counter()
                search("hybrid")
                first.append((time.perf_counter() - begun) * 1000)
            print(f"first searches (each worker reads the partition once): {', '.join(f'{m:,.0f} ms' for m in first)}")
            for mode in ("keyword", "semantic", "hybrid"):
                samples = []
                for _ in range(SAMPLES):
                    begun = time.perf_counter()
                    search(mode)
                    samples.append((time.perf_counter() - begun) * 1000)
                report(f"search {mode} at {ENTRIES:,} entries", samples)
            writes, after = [], []
            for n in range(SAMPLES):
                entry = {"content": {"role": "user", "parts": [{"text": _text(rng)}]}}
                begun = time.perf_counter()
                rest.call("POST", f"{PATH}/memories", {"entry": entry, "session_id": "live"}, expect=201)
                writes.append((time.perf_counter() - begun) * 1000)
                begun = time.perf_counter()
                search("hybrid")
                after.append((time.perf_counter() - begun) * 1000)
                if n % 2:  # the other connection: the other worker may answer, and catches up from the log
                    rest.close()
                    rest = Rest(server.port)
            report("write one entry (POST memories)", writes)
            report("hybrid search right after a write", after)
            pages = []
            cursor = None
            for _ in range(SAMPLES):
                begun = time.perf_counter()
                page = rest.call("GET", f"{PATH}/memories?limit=100" + (f"&cursor={cursor}" if cursor else ""))
                pages.append((time.perf_counter() - begun) * 1000)
                cursor = page["next_cursor"]  # type: ignore[index]
            report("list page (GET memories, 100)", pages)
            exports = []
            cursor = None
            for _ in range(max(2, SAMPLES // 5)):
                begun = time.perf_counter()
                page = rest.call("GET", f"{PATH}/export" + (f"?cursor={cursor}" if cursor else ""))
                exports.append((time.perf_counter() - begun) * 1000)
                cursor = page["next_cursor"]  # type: ignore[index]
            report("export page (GET export)", exports)
            print(f"server memory (master and 2 workers): {_rss_mb(server._process.pid):,.0f} MB")
            rest.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
