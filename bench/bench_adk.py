"""W1 side by side, in one run: Google ADK's ``InMemoryMemoryService`` (in-process, keyword matching) and
ours in-process (``MemoryService`` on a SQLite file, keyword search) and over REST (the real local server,
gunicorn workers, through one keep-alive connection), on the same generated data.

W1 (issue 11): N memories as N/10 sessions of 10 turns, each session ingested in one call; 200 keyword
queries of 2-4 words taken from a target memory (the share of queries whose target comes back in the
top 10 is printed too: speed of a search that finds nothing is no figure). Ingest over REST is measured
without embeddings (as ADK and in-process), and on a 100-memory sample with the default local model.
Run alone with ``python bench/run.py adk`` or ``make bench ONLY=adk``; ``BENCH_W1_N`` sets N.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import LocalServer, Rest, percentiles, ratio, scaled, w1

N = int(os.environ.get("BENCH_W1_N", str(scaled(10_000, 100))))
SCOPE_PATH = "/v1/apps/bench/users/w1"
EMBEDDED_SAMPLE = scaled(10)  # sessions ingested over REST with the local embedding model

Figures = dict[str, tuple[list[float], float | None]]  # call -> (samples in ms, share of targets found)


def _turn(text: str) -> dict[str, Any]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def adk(sessions: list[list[str]], queries: list[tuple[str, str]]) -> Figures:
    from google.adk.events import Event
    from google.adk.memory import InMemoryMemoryService
    from google.adk.sessions import Session
    from google.genai import types

    def session(index: int, turns: list[str]) -> Session:
        events = [Event(author="user", content=types.Content(role="user", parts=[types.Part(text=t)])) for t in turns]
        return Session(id=f"s{index}", app_name="bench", user_id="w1", events=events)

    built = [session(i, turns) for i, turns in enumerate(sessions)]  # outside the timings: the caller has them
    service = InMemoryMemoryService()

    async def run() -> Figures:
        ingest = []
        for item in built:
            started = time.perf_counter()
            await service.add_session_to_memory(item)
            ingest.append((time.perf_counter() - started) * 1000 / len(item.events))
        searches, found = [], 0
        for query, target in queries:
            started = time.perf_counter()
            response = await service.search_memory(app_name="bench", user_id="w1", query=query)
            searches.append((time.perf_counter() - started) * 1000)
            found += any(m.content.parts[0].text == target for m in response.memories)
        return {"ingest per memory": (ingest, None), "search top 10": (searches, found / len(queries))}

    return asyncio.run(run())


def in_process(sessions: list[list[str]], queries: list[tuple[str, str]], db: Path) -> Figures:
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores.sqlite_table import SqliteTable

    table = SqliteTable(db)
    service = MemoryService(table)  # no embedder: keyword search, as ADK's
    scope = Scope("bench", "w1")
    built = [[MemoryEntry.model_validate(_turn(t)) for t in turns] for turns in sessions]
    ingest = []
    for index, entries in enumerate(built):
        started = time.perf_counter()
        service.add_session(scope, f"s{index}", entries)
        ingest.append((time.perf_counter() - started) * 1000 / len(entries))
    searches, found = [], 0
    for query, target in queries:
        started = time.perf_counter()
        result = service.search(scope, query, top_k=10, mode="keyword")
        searches.append((time.perf_counter() - started) * 1000)
        found += any(e.content["parts"][0]["text"] == target for e in result.entries)
    table.close()
    return {"ingest per memory": (ingest, None), "search top 10": (searches, found / len(queries))}


def _rest_ingest(rest: Rest, sessions: list[list[str]], prefix: str) -> list[float]:
    samples = []
    for index, turns in enumerate(sessions):
        body = {"entries": [_turn(t) for t in turns]}
        started = time.perf_counter()
        rest.call("PUT", f"{SCOPE_PATH}/sessions/{prefix}{index}/memories", body, expect=200)
        samples.append((time.perf_counter() - started) * 1000 / len(turns))
    return samples


def over_rest(sessions: list[list[str]], queries: list[tuple[str, str]], folder: Path) -> Figures:
    with LocalServer(folder / "rest.db") as server:
        rest = Rest(server.port)
        ingest = _rest_ingest(rest, sessions, "s")
        searches, found = [], 0
        for query, target in queries:
            body = {"query": query, "top_k": 10, "mode": "keyword"}
            started = time.perf_counter()
            result: Any = rest.call("POST", f"{SCOPE_PATH}/memories/search", body, expect=200)
            searches.append((time.perf_counter() - started) * 1000)
            found += any(e["content"]["parts"][0]["text"] == target for e in result["entries"])
        rest.close()
    print("  ours over REST with the local model: ingest sample", file=sys.stderr, flush=True)
    with LocalServer(folder / "embedded.db", embedder="local") as server:
        rest = Rest(server.port)
        rest.call("PUT", f"{SCOPE_PATH}/sessions/warm/memories", {"entries": [_turn("warm up the model")]})
        embedded = _rest_ingest(rest, sessions[:EMBEDDED_SAMPLE], "e")
        rest.close()
    return {
        "ingest per memory": (ingest, None),
        "search top 10": (searches, found / len(queries)),
        "ingest per memory, local model": (embedded, None),
    }


def main() -> None:
    sessions, queries = w1(N, scaled(200, 5))
    results: dict[str, Figures] = {}
    print(f"W1 with N={N:,}: Google ADK InMemoryMemoryService", file=sys.stderr, flush=True)
    results["ADK InMemory"] = adk(sessions, queries)
    with tempfile.TemporaryDirectory() as tmp:
        print("  ours in-process (SQLite)", file=sys.stderr, flush=True)
        results["ours in-process"] = in_process(sessions, queries, Path(tmp) / "in-process.db")
        print("  ours over REST (local server)", file=sys.stderr, flush=True)
        results["ours REST"] = over_rest(sessions, queries, Path(tmp))
    print(f"W1, N={N:,} memories in one scope ({N // 10:,} sessions of 10 turns), {len(queries)} queries, same run")
    names = list(results)
    print(f"{'call p50 / p95 (ms)':<34}" + "".join(f"{n:>24}" for n in names) + "   ours/ADK (in-process, REST)")
    calls = ["ingest per memory", "search top 10", "ingest per memory, local model"]
    for call in calls:
        cells, p50s = [], []
        for name in names:
            figures = results[name].get(call)
            if figures is None:
                cells.append("-")
                p50s.append(0.0)
                continue
            p50, p95 = percentiles(figures[0])
            p50s.append(p50)
            cells.append(f"{p50:8.3f} / {p95:8.3f}")
        peer = p50s[0]
        ratios = "   " + " ".join(ratio(p, peer) for p in p50s[1:]) if peer else ""
        print(f"{call:<34}" + "".join(f"{c:>24}" for c in cells) + ratios)
    found = ", ".join(f"{n} {results[n]['search top 10'][1]:.2f}" for n in names)
    print(f"  queries whose target memory is in the top 10: {found}")


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
    main()
