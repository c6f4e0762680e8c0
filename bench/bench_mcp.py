"""W2 through the official MCP Python SDK client, in one run, against:
- the MCP reference memory server (``@modelcontextprotocol/server-memory``, pinned in peers/) over stdio,
- ours over Streamable HTTP (``{scope}/mcp`` on the real local server, embedded SQLite store),
- ours over stdio (``agentmem mcp`` on the embedded store).

W2 (issue 11): E entities with 5 observations each, created 100 per call; E/2 relations, 100 per call;
200 single-word search_nodes; 200 open_nodes of 3 names; one read_graph. Generated deterministically.
Progress goes to stderr. Run alone with ``python bench/bench_mcp.py`` or ``make bench ONLY=mcp``.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from benchlib import percentiles, sentence, vocabulary
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "peers/mcp-server-memory/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
ENTITIES = int(os.environ.get("BENCH_MCP_ENTITIES", "1000"))
OBSERVATIONS = 5
BATCH = 100
SEARCHES = 200
OPENS = 200
TYPES = ["person", "project", "company", "place", "preference", "tool", "book", "team", "event", "pet"]
OPERATIONS = ["create_entities", "create_relations", "search_nodes", "open_nodes", "read_graph"]


def workload(seed: int = 11) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(seed)
    words = vocabulary()
    names = [f"Entity{i:05d}" for i in range(ENTITIES)]
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
        for _ in range(ENTITIES // 2)
    ]
    # Single words taken from a target entity's observations (matched by both servers' rules).
    queries = [rng.choice(rng.choice(entities)["observations"][0].split()) for _ in range(SEARCHES)]
    return {
        "create_entities": [{"entities": entities[i : i + BATCH]} for i in range(0, ENTITIES, BATCH)],
        "create_relations": [{"relations": relations[i : i + BATCH]} for i in range(0, len(relations), BATCH)],
        "search_nodes": [{"query": q} for q in queries],
        "open_nodes": [{"names": rng.sample(names, 3)} for _ in range(OPENS)],
        "read_graph": [{}],
    }


Samples = dict[str, list[float]]


async def run_w2(session: ClientSession, calls: dict[str, list[dict[str, Any]]], label: str) -> Samples:
    await session.list_tools()  # the SDK validates each result against the listed output schemas
    samples: Samples = {}
    for operation in OPERATIONS:
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


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(
        {"MEMORY_EMBEDDER": "none", "PYTHONPATH": os.pathsep.join([str(ROOT / "layers/core/python"), str(ROOT)])}
    )
    return env


def start_local_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "agentmem.cli", "serve", "--port", str(port), "--db", str(db)]
    process = subprocess.Popen(command, env=_environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/v1/health", timeout=1):
                return process, base
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the local server did not start")


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
        print("ours over Streamable HTTP (local server)", file=sys.stderr, flush=True)
        process, base = start_local_server(folder / "http.db")
        try:
            url = f"{base}/v1/apps/bench/users/w2/mcp"
            results["ours (HTTP)"] = anyio.run(over_http, url, lambda s: run_w2(s, calls, "ours http"))
        finally:
            process.terminate()
            process.wait(timeout=10)
        print("ours over stdio (embedded store)", file=sys.stderr, flush=True)
        ours = StdioServerParameters(
            command=sys.executable,
            args=["-m", "agentmem.cli", "mcp", "--app", "bench", "--user", "w2", "--db", str(folder / "stdio.db")],
            env=_environment(),
        )
        results["ours (stdio)"] = anyio.run(over_stdio, ours, lambda s: run_w2(s, calls, "ours stdio"))
    print(f"W2 through the MCP Python SDK client, E={ENTITIES} entities x {OBSERVATIONS} observations, same run")
    print(f"{'call':<34}" + "".join(f"{name:>26}" for name in results) + "   ours/reference (HTTP, stdio)")
    reference_name = "reference (stdio)"
    for operation in OPERATIONS:
        cells = []
        for samples in results.values():
            p50, p95 = percentiles(samples[operation])
            cells.append(f"{p50:9.2f} / {p95:9.2f} ms")
        base50 = percentiles(results[reference_name][operation])[0]
        ratios = [percentiles(results[n][operation])[0] / base50 for n in ("ours (HTTP)", "ours (stdio)")]
        label = f"{operation} (n={len(calls[operation])}) p50/p95"
        print(f"{label:<34}" + "".join(f"{c:>26}" for c in cells) + f"   {ratios[0]:5.2f}x {ratios[1]:5.2f}x")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    main()
