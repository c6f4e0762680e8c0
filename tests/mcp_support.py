"""Sessions of the official MCP Python SDK (the client under test): Streamable HTTP and stdio.

Each helper runs one async body inside a connected, initialised ``ClientSession`` and returns what
the body returns, so the tests stay synchronous (``anyio.run``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO_ROOT = Path(__file__).resolve().parent.parent
REFERENCE_SERVER = REPO_ROOT / "peers/mcp-server-memory/node_modules/@modelcontextprotocol/server-memory/dist/index.js"

REFERENCE_TOOLS = [
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
]
OWN_TOOLS = [
    "search_memory",
    "add_memory",
    "profile_card",
    "remember",
    "relate",
    "entity_history",
    "update_memory",
    "memory_history",
]

T = TypeVar("T")
Body = Callable[[ClientSession], Awaitable[T]]


def mcp_url(base_url: str, app: str, user: str, project_id: str | None = None) -> str:
    url = f"{base_url}/v1/apps/{quote(app, safe='')}/users/{quote(user, safe='')}/mcp"
    return url + (f"?{urlencode({'project_id': project_id})}" if project_id else "")


async def _over_http(
    url: str, headers: Mapping[str, str] | None, body: Body[T], transport: httpx2.AsyncBaseTransport | None
) -> T:
    async with (
        httpx2.AsyncClient(headers=dict(headers or {}), timeout=60.0, transport=transport) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await body(session)


def over_http(
    url: str,
    body: Body[T],
    headers: Mapping[str, str] | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> T:
    """``transport``: where the HTTP requests go (default: the network)."""
    return anyio.run(_over_http, url, headers, body, transport)


def ours_over_stdio_params(
    app: str, user: str, *args: str, env: Mapping[str, str] | None = None
) -> StdioServerParameters:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    environment.update({"MEMORY_EMBEDDER": "none", **(env or {})})
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentmem.cli", "mcp", "--app", app, "--user", user, *args],
        env=environment,
        cwd=str(REPO_ROOT),
    )


def reference_params(memory_file: Path) -> StdioServerParameters:
    if not REFERENCE_SERVER.exists():
        raise RuntimeError(f"the MCP reference server is not installed: run `make test` ({REFERENCE_SERVER})")
    return StdioServerParameters(
        command="node",
        args=[str(REFERENCE_SERVER)],
        env={"MEMORY_FILE_PATH": str(memory_file), "PATH": os.environ.get("PATH", "")},
    )


async def _over_stdio(params: StdioServerParameters, body: Body[T]) -> T:
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)


def over_stdio(params: StdioServerParameters, body: Body[T]) -> T:
    return anyio.run(_over_stdio, params, body)


def structured(result: Any) -> Any:
    """The structuredContent of a successful tool result (fails the test on an isError result)."""
    assert not result.is_error, result.content
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error, result
    return str(result.content[0].text)


def create_thing(name: str) -> Body[Any]:
    """A session body creating one entity ``name`` of type ``thing`` with one fact."""

    async def body(session: ClientSession) -> Any:
        spec = {"entities": [{"name": name, "entityType": "thing", "observations": [f"{name} fact"]}]}
        return structured(await session.call_tool("create_entities", spec))

    return body


async def graph_names(session: ClientSession) -> list[str]:
    """The names of the entities read_graph shows."""
    return [e["name"] for e in structured(await session.call_tool("read_graph", {}))["entities"]]
