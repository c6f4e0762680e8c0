"""Differential test: the MCP reference memory server (pinned, from npm, over stdio) and ours (over
Streamable HTTP on the local server, and over stdio on the embedded store) get the same tool calls
through the official SDK client; their graphs must agree up to the differences docs/mcp.md lists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import LiveServer, ServerFactory
from tests.mcp_support import (
    mcp_url,
    ours_over_stdio_params,
    over_http,
    over_stdio,
    reference_params,
    structured,
)

Calls = list[tuple[str, dict[str, Any]]]

SEQUENCE: Calls = [
    (
        "create_entities",
        {
            "entities": [
                {"name": "Alice", "entityType": "person", "observations": ["likes tea", "lives in Oslo"]},
                {"name": "Bob", "entityType": "person", "observations": ["plays chess"]},
                {"name": "Acme", "entityType": "company", "observations": ["makes rockets"]},
            ]
        },
    ),
    (
        "create_relations",
        {
            "relations": [
                {"from": "Alice", "to": "Acme", "relationType": "works_at"},
                {"from": "Bob", "to": "Alice", "relationType": "knows"},
            ]
        },
    ),
    ("create_relations", {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]}),
    (
        "add_observations",
        {
            "observations": [
                {"entityName": "Alice", "contents": ["speaks Norwegian", "likes tea"]},
                {"entityName": "Acme", "contents": ["founded in 1999"]},
            ]
        },
    ),
    ("delete_observations", {"deletions": [{"entityName": "Alice", "observations": ["lives in Oslo", "unknown"]}]}),
    ("delete_relations", {"relations": [{"from": "Bob", "to": "Alice", "relationType": "knows"}]}),
    (
        "create_entities",
        {
            "entities": [
                {"name": "Carol", "entityType": "person", "observations": ["likes jazz"]},
                {"name": "Dave", "entityType": "person", "observations": []},
            ]
        },
    ),
    ("delete_entities", {"entityNames": ["Dave", "Nobody"]}),
    ("create_relations", {"relations": [{"from": "Carol", "to": "Bob", "relationType": "knows"}]}),
    ("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}),  # an error for both
]
READS: Calls = [
    ("open_nodes", {"names": ["Alice", "Carol", "Nobody"]}),
    ("search_nodes", {"query": "chess"}),
    ("search_nodes", {"query": "rockets"}),
    ("read_graph", {}),
]


def normalised(graph: dict[str, Any]) -> dict[str, Any]:
    """Entities by name and relations sorted (the reference keeps insertion order, we sort by name)."""
    return {
        "entities": sorted(graph["entities"], key=lambda e: e["name"]),
        "relations": sorted(graph["relations"], key=lambda r: (r["from"], r["relationType"], r["to"])),
    }


def play(calls: Calls) -> Callable[[ClientSession], Any]:
    async def body(session: ClientSession) -> dict[str, Any]:
        errors = []
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            errors.append(result.is_error)
        reads = [normalised(structured(await session.call_tool(name, arguments))) for name, arguments in READS]
        tools = (await session.list_tools()).tools
        return {"errors": errors, "reads": reads, "tools": {t.name: t for t in tools}}

    return body


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    memory_file = tmp_path_factory.mktemp("reference") / "memory.jsonl"
    return over_stdio(reference_params(memory_file), play(SEQUENCE))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def ours_http(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.e2e.conftest import start_server

    server = start_server(tmp_path_factory.mktemp("ours") / "memory.db", {"MEMORY_EMBEDDER": "none"})
    yield server
    server.stop()


def test_the_same_calls_give_the_same_graph_over_http(reference: dict[str, Any], ours_http: LiveServer) -> None:
    # When the same sequence goes to our server over Streamable HTTP
    ours = over_http(mcp_url(ours_http.url, "app", "differential"), play(SEQUENCE))
    # Then the same calls fail (only the add_observations to an unknown entity), and every read agrees
    assert ours["errors"] == reference["errors"] == [False] * 9 + [True]
    for our_read, their_read in zip(ours["reads"], reference["reads"], strict=True):
        assert our_read == their_read


def test_the_same_calls_give_the_same_graph_over_stdio(reference: dict[str, Any], tmp_path: Path) -> None:
    ours = over_stdio(
        ours_over_stdio_params("app", "differential", "--db", str(tmp_path / "m.db"), "--create"), play(SEQUENCE)
    )
    assert ours["errors"] == reference["errors"]
    assert ours["reads"] == reference["reads"]


def _schema(tool: Any, *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    schema = json.loads(json.dumps(tool))
    for name in drop:
        schema.get("properties", {}).pop(name, None)
    return schema  # type: ignore[no-any-return]


def test_the_nine_tools_declare_the_reference_schemas_and_annotations(
    reference: dict[str, Any], ours_http: LiveServer
) -> None:
    ours = over_http(mcp_url(ours_http.url, "app", "schemas"), play([]))["tools"]
    theirs = reference["tools"]
    for name, their_tool in theirs.items():
        our_tool = ours[name]
        # Same input schema, but for the optional `limit` we add to read_graph and search_nodes
        assert _schema(our_tool.input_schema, drop=("limit",)) == _schema(their_tool.input_schema), name
        # Same output schema, but for the optional `truncated` / `message` of a cut result
        extra = ("truncated", "message") if "truncated" in our_tool.output_schema["properties"] else ()
        assert _schema(our_tool.output_schema, drop=extra) == _schema(their_tool.output_schema), name
        assert our_tool.annotations == their_tool.annotations, name
        assert our_tool.title == their_tool.title, name
    assert "limit" in ours["read_graph"].input_schema["properties"]
    assert "limit" not in ours["read_graph"].input_schema.get("required", [])


DIFFERENCES: Calls = [
    ("create_entities", {"entities": [{"name": "Eve", "entityType": "person", "observations": ["likes tea"]}]}),
    # 1. re-creating an entity upserts: the new type replaces the old, new observations are added
    ("create_entities", {"entities": [{"name": "Eve", "entityType": "robot", "observations": ["likes oil"]}]}),
    # 2. a relation to an entity that does not exist creates it (type general); the reference keeps it dangling
    ("create_relations", {"relations": [{"from": "Eve", "to": "Zed", "relationType": "knows"}]}),
]


def test_the_documented_differences_are_the_only_ones(tmp_path: Path, ours_http: LiveServer) -> None:
    theirs = over_stdio(reference_params(tmp_path / "memory.jsonl"), play(DIFFERENCES))
    ours = over_http(mcp_url(ours_http.url, "app", "differences"), play(DIFFERENCES))
    their_graph, our_graph = theirs["reads"][-1], ours["reads"][-1]
    assert their_graph["entities"] == [{"name": "Eve", "entityType": "person", "observations": ["likes tea"]}]
    assert our_graph["entities"] == [
        {"name": "Eve", "entityType": "robot", "observations": ["likes tea", "likes oil"]},
        {"name": "Zed", "entityType": "general", "observations": []},
    ]
    assert our_graph["relations"] == their_graph["relations"] == [{"from": "Eve", "to": "Zed", "relationType": "knows"}]

    # 3. search_nodes matches whole words, the reference substrings
    async def search(session: ClientSession) -> list[str]:
        found = structured(await session.call_tool("search_nodes", {"query": "lik"}))
        return [e["name"] for e in found["entities"]]

    assert over_stdio(reference_params(tmp_path / "memory.jsonl"), search) == ["Eve"]
    assert over_http(mcp_url(ours_http.url, "app", "differences"), search) == []


AGENTMEM = str(Path(sys.executable).parent / "agentmem")


def test_stdio_on_a_remote_api_uses_its_key(live_server_factory: ServerFactory) -> None:
    server = live_server_factory(env={"MEMORY_AUTH": "required", "MEMORY_EMBEDDER": "none"})
    env = {**os.environ, "MEMORY_STORE": "sqlite"}

    def key(app: str) -> str:
        command = [AGENTMEM, "keys", "create", "--app", app, "--db", str(server.db_path)]
        return str(
            json.loads(subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout)["api_key"]
        )

    key_a, key_b = key("A"), key("B")

    async def remember(session: ClientSession) -> Any:
        return structured(await session.call_tool("remember", {"entity": "Tea", "facts": ["green"]}))

    # Given `agentmem mcp --url` with the app's key / Then the tools run on the remote API
    remote = ours_over_stdio_params("A", "u", "--url", server.url, "--api-key", key_a, "--project", "p")
    assert over_stdio(remote, remember) == {"stored": True, "entity": "Tea", "facts_added": 1}

    async def graph(session: ClientSession) -> Any:
        return structured(await session.call_tool("read_graph", {}))

    assert over_http(mcp_url(server.url, "A", "u", "p"), graph, {"x-api-key": key_a})["entities"][0]["name"] == "Tea"
    # And with another app's key the handshake itself is refused
    refused = ours_over_stdio_params("A", "u", "--url", server.url, "--api-key", key_b)
    with pytest.raises(BaseException) as caught:
        over_stdio(refused, remember)
    assert _contains(caught.value, MCPError, "403")


def _contains(error: BaseException, kind: type[BaseException], text: str) -> bool:
    if isinstance(error, kind) and text in str(error):
        return True
    return any(_contains(e, kind, text) for e in getattr(error, "exceptions", ()))
