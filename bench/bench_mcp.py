"""W2 side by side, in one run, against:
- the MCP reference memory server (``@modelcontextprotocol/server-memory``, pinned in peers/) over stdio,
  through the official MCP Python SDK client (the peer),
- ours in-process (``GraphMemoryService`` on a SQLite file) and over the REST graph routes of the real
  local server (gunicorn workers, one keep-alive connection), the same calls in our field names,
- ours over Streamable HTTP (``{scope}/mcp`` on the same local server) and over stdio (``agentmem mcp``),
  through the SDK client.
Then create_entities again as the graph grows to E = 10k (``BENCH_MCP_GROW``; 0 skips it): the last 10
calls of the reference's build, of ours in-process, and over REST on a copy of the in-process store.

W2 (issue 11): E entities with 5 observations each, created 100 per call; E/2 relations, 100 per call;
200 single-word search_nodes; 200 open_nodes of 3 names; one read_graph. Generated deterministically.
Progress goes to stderr. Run alone with ``python bench/bench_mcp.py`` or ``make bench ONLY=mcp``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
from benchlib import LocalServer, Rest, percentiles, ratio, scaled, sentence, server_environment, vocabulary
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "peers/mcp-server-memory/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
ENTITIES = int(os.environ.get("BENCH_MCP_ENTITIES", str(scaled(1_000, 200))))
# create_entities is measured again as the graph grows to GROW entities (0: not measured), on the last LAST calls
GROW = int(os.environ.get("BENCH_MCP_GROW", str(scaled(10_000, 1_200))))
LAST = 10
OBSERVATIONS = 5
BATCH = 100
SEARCHES = scaled(200, 5)
OPENS = scaled(200, 5)
TYPES = ["person", "project", "company", "place", "preference", "tool", "book", "team", "event", "pet"]
OPERATIONS = ["create_entities", "create_relations", "search_nodes", "open_nodes", "read_graph"]


def workload(seed: int = 11, count: int = ENTITIES) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(seed)
    words = vocabulary()
    names = [f"Entity{i:05d}" for i in range(count)]
    entities = [
        {
            "name": name,
            "entityType": rng.choice(TYPES),
            "observations": [sentence(rng, words, (6, 12)) for _ in range(OBSERVATIONS)],
        }
        for name in names
    ]
    relations = [
        {"from": rng.choice(names), "to": rng.choice(names), "relationType": rng.choice(["knows", "uses", "owns"])}
        for _ in range(count // 2)
    ]
    # Single words taken from a target entity's observations (matched by both servers' rules).
    queries = [rng.choice(rng.choice(entities)["observations"][0].split()) for _ in range(SEARCHES)]
    return {
        "create_entities": [{"entities": entities[i : i + BATCH]} for i in range(0, count, BATCH)],
        "create_relations": [{"relations": relations[i : i + BATCH]} for i in range(0, len(relations), BATCH)],
        "search_nodes": [{"query": q} for q in queries],
        "open_nodes": [{"names": rng.sample(names, 3)} for _ in range(OPENS)],
        "read_graph": [{}],
    }


Samples = dict[str, list[float]]


async def run_w2(session: ClientSession, calls: dict[str, list[dict[str, Any]]], label: str) -> Samples:
    await session.list_tools()  # the SDK validates each result against the listed output schemas
    samples: Samples = {}
    for operation in (o for o in OPERATIONS if o in calls):
        timings = []
        for arguments in calls[operation]:
            started = time.perf_counter()
            result = await session.call_tool(operation, arguments)
            timings.append((time.perf_counter() - started) * 1000)
            if result.is_error:
                raise RuntimeError(f"{label} {operation} failed: {result.content[0]}")
        samples[operation] = timings
        print(f"  {label}: {operation} x{len(timings)} done", file=sys.stderr, flush=True)
    return samples


Body = Callable[[ClientSession], Awaitable[Samples]]


async def over_stdio(params: StdioServerParameters, body: Body) -> Samples:
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)


async def over_http(url: str, body: Body) -> Samples:
    async with (
        httpx2.AsyncClient(timeout=120.0) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await body(session)


# -- ours without MCP: the same calls in-process (GraphMemoryService) and over the REST graph routes ---------


def _ours(operation: str, arguments: dict[str, Any]) -> Any:
    """An MCP tool call's arguments as our graph's (snake_case fields, relations by source and target)."""
    if operation == "create_entities":
        return [
            {"name": e["name"], "entity_type": e["entityType"], "observations": e["observations"]}
            for e in arguments["entities"]
        ]
    if operation == "create_relations":
        return [
            {"source": r["from"], "relation_type": r["relationType"], "target": r["to"]} for r in arguments["relations"]
        ]
    return arguments.get("query") or arguments.get("names")


def in_process(calls: dict[str, list[dict[str, Any]]], db: Path) -> Samples:
    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope
    from agentmem.stores.sqlite_table import SqliteTable

    table = SqliteTable(db)
    graph = GraphMemoryService(table)
    scope = Scope("bench", "w2")

    def read_graph(_: Any) -> None:
        cursor = None
        while True:
            cursor = graph.read_graph(scope, cursor=cursor)["next_cursor"]
            if cursor is None:
                return

    run: dict[str, Callable[[Any], Any]] = {
        "create_entities": lambda a: graph.create_entities(scope, a),
        "create_relations": lambda a: graph.create_relations(scope, a),
        "search_nodes": lambda q: graph.search_nodes(scope, q, limit=10),
        "open_nodes": lambda names: graph.open_nodes(scope, names),
        "read_graph": read_graph,
    }
    samples = _timed_w2(calls, run, "ours in-process")
    table.close()
    return samples


def over_rest(calls: dict[str, list[dict[str, Any]]], port: int) -> Samples:
    rest = Rest(port)
    graph = "/v1/apps/bench/users/w2rest/graph"

    def read_graph(_: Any) -> None:
        cursor = None
        while True:
            query = f"?{urlencode({'cursor': cursor})}" if cursor else ""
            page: Any = rest.call("GET", graph + query, expect=200)
            cursor = page["next_cursor"]
            if cursor is None:
                return

    run: dict[str, Callable[[Any], Any]] = {
        "create_entities": lambda a: rest.call("POST", f"{graph}/entities", {"entities": a}, expect=200),
        "create_relations": lambda a: rest.call("POST", f"{graph}/relations", {"relations": a}, expect=200),
        "search_nodes": lambda q: rest.call("GET", f"{graph}/search?{urlencode({'q': q, 'limit': 10})}", expect=200),
        "open_nodes": lambda names: rest.call("GET", f"{graph}/nodes?{urlencode({'name': names}, doseq=True)}"),
        "read_graph": read_graph,
    }
    samples = _timed_w2(calls, run, "ours REST")
    rest.close()
    return samples


def _timed_w2(calls: dict[str, list[dict[str, Any]]], run: dict[str, Callable[[Any], Any]], label: str) -> Samples:
    samples: Samples = {}
    for operation in OPERATIONS:
        if operation not in calls:
            continue
        timings = []
        for arguments in calls[operation]:
            converted = _ours(operation, arguments)
            started = time.perf_counter()
            run[operation](converted)
            timings.append((time.perf_counter() - started) * 1000)
        samples[operation] = timings
        print(f"  {label}: {operation} x{len(timings)} done", file=sys.stderr, flush=True)
    return samples


# -- create_entities as the graph grows to E = 10k ------------------------------------------------------


def growth(folder: Path) -> dict[str, list[float]]:
    """create_entities 100x5 over the last LAST calls of a build to GROW entities: the reference over stdio,
    ours in-process (the whole build) and ours over REST (the last calls, on a copy of the in-process store)."""
    import shutil

    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope
    from agentmem.stores.sqlite_table import SqliteTable

    creates = workload(count=GROW)["create_entities"]
    head, tail = creates[:-LAST], creates[-LAST:]
    reference = StdioServerParameters(
        command="node",
        args=[str(REFERENCE)],
        env={"MEMORY_FILE_PATH": str(folder / "grow.jsonl"), "PATH": os.environ.get("PATH", "")},
    )
    print(f"create_entities growing to E={GROW:,}: reference", file=sys.stderr, flush=True)
    ref = anyio.run(over_stdio, reference, lambda s: run_w2(s, {"create_entities": creates}, "reference grow"))
    print("  ours in-process (the whole build)", file=sys.stderr, flush=True)
    table = SqliteTable(folder / "grow.db")
    graph = GraphMemoryService(table)
    scope = Scope("bench", "w2rest")  # the REST scope: the copy is served and grown further
    for arguments in head:
        graph.create_entities(scope, _ours("create_entities", arguments))
    table.close()
    shutil.copy(folder / "grow.db", folder / "grow-rest.db")
    table = SqliteTable(folder / "grow.db")
    graph = GraphMemoryService(table)
    ours = []
    for arguments in tail:
        converted = _ours("create_entities", arguments)
        started = time.perf_counter()
        graph.create_entities(scope, converted)
        ours.append((time.perf_counter() - started) * 1000)
    table.close()
    print("  ours over REST (the last calls)", file=sys.stderr, flush=True)
    with LocalServer(folder / "grow-rest.db") as server:
        rest = over_rest({"create_entities": tail}, server.port)["create_entities"]
    return {
        "reference (stdio)": ref["create_entities"][-LAST:],
        "ours in-process": ours,
        "ours REST": rest,
    }


def _table(title: str, results: dict[str, Samples], counts: dict[str, int]) -> None:
    print(title)
    peer = "reference (stdio)"
    others = [name for name in results if name != peer]
    print(f"{'call p50 / p95 (ms)':<30}" + "".join(f"{name:>22}" for name in results) + "   ours/reference")
    for operation in OPERATIONS:
        if operation not in results[peer]:
            continue
        cells = []
        for samples in results.values():
            p50, p95 = percentiles(samples[operation])
            cells.append(f"{p50:8.2f} / {p95:8.2f}")
        base = percentiles(results[peer][operation])[0]
        ratios = " ".join(ratio(percentiles(results[n][operation])[0], base) for n in others)
        label = f"{operation} (n={counts[operation]})"
        print(f"{label:<30}" + "".join(f"{c:>22}" for c in cells) + f"   {ratios}")
    print("  (ratios in column order: " + ", ".join(others) + ")")


def main() -> None:
    if not REFERENCE.exists():
        raise SystemExit(f"the MCP reference server is not installed ({REFERENCE}): run make bench")
    calls = workload()
    results: dict[str, Samples] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"W2 with E={ENTITIES}: reference server over stdio", file=sys.stderr, flush=True)
        reference = StdioServerParameters(
            command="node",
            args=[str(REFERENCE)],
            env={"MEMORY_FILE_PATH": str(folder / "memory.jsonl"), "PATH": os.environ.get("PATH", "")},
        )
        results["reference (stdio)"] = anyio.run(over_stdio, reference, lambda s: run_w2(s, calls, "reference"))
        results["ours in-process"] = in_process(calls, folder / "in-process.db")
        print("ours over REST and over Streamable HTTP (local server)", file=sys.stderr, flush=True)
        with LocalServer(folder / "http.db") as server:
            results["ours REST"] = over_rest(calls, server.port)
            url = f"{server.base}/v1/apps/bench/users/w2/mcp"
            results["ours MCP HTTP"] = anyio.run(over_http, url, lambda s: run_w2(s, calls, "ours http"))
        print("ours over stdio (embedded store)", file=sys.stderr, flush=True)
        ours = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "agentmem.cli",
                "mcp",
                "--app",
                "bench",
                "--user",
                "w2",
                "--db",
                str(folder / "stdio.db"),
                "--create",
            ],
            env=server_environment(),
        )
        results["ours MCP stdio"] = anyio.run(over_stdio, ours, lambda s: run_w2(s, calls, "ours stdio"))
        grown = growth(folder) if GROW else None
    counts = {operation: len(calls[operation]) for operation in OPERATIONS}
    title = f"W2, E={ENTITIES:,} entities x {OBSERVATIONS} observations, same run (MCP calls through the SDK client)"
    _table(title, results, counts)
    if grown is not None:
        _table(
            f"create_entities {BATCH}x{OBSERVATIONS} over the last {LAST} calls of a build to E={GROW:,} (same run)",
            {name: {"create_entities": samples} for name, samples in grown.items()},
            {"create_entities": LAST},
        )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    main()
