"""``{scope}/mcp`` on the real local server, driven by the official MCP Python SDK over Streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import LiveServer, ServerFactory
from tests.mcp_support import (
    OWN_TOOLS,
    REFERENCE_TOOLS,
    create_thing,
    error_text,
    graph_names,
    mcp_url,
    over_http,
    structured,
)

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.e2e.conftest import start_server

    started = start_server(tmp_path_factory.mktemp("mcp") / "memory.db", {"MEMORY_EMBEDDER": "hashing"})
    yield started
    started.stop()


def rpc(method: str, params: dict[str, Any] | None = None, request_id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if request_id is not None:
        message["id"] = request_id
    return message


def test_initialize_negotiates_both_protocol_versions_and_lists_every_tool(server: LiveServer) -> None:
    url = mcp_url(server.url, "app", "init-user")

    async def body(session: ClientSession) -> Any:
        return session.initialize_result, await session.list_tools(), await session.list_resources()

    # Given the SDK client (it offers 2025-11-25)
    initialized, tools, resources = over_http(url, body)
    # Then the server speaks it, and lists the nine reference tools and our six, each with an output schema
    assert initialized.protocol_version == "2025-11-25"
    assert initialized.server_info.name == "agentmem"
    names = [t.name for t in tools.tools]
    assert names == REFERENCE_TOOLS + OWN_TOOLS
    assert all(t.output_schema and t.output_schema["type"] == "object" for t in tools.tools)
    by_name = {t.name: t for t in tools.tools}
    assert by_name["read_graph"].annotations.read_only_hint is True
    assert by_name["delete_entities"].annotations.destructive_hint is True
    assert by_name["create_entities"].annotations.idempotent_hint is False
    assert [str(r.uri) for r in resources.resources] == ["memory://knowledge-graph"]
    # And a client asking for 2025-06-18 gets it; one asking for an unknown version is offered the newest
    with httpx.Client(timeout=10) as http:
        assert http.post(url, json=rpc("initialize", INIT)).json()["result"]["protocolVersion"] == "2025-06-18"
        other = http.post(url, json=rpc("initialize", {**INIT, "protocolVersion": "2024-01-01"})).json()
        assert other["result"]["protocolVersion"] == "2025-11-25"


def test_streamable_http_is_stateless_json(server: LiveServer) -> None:
    url = mcp_url(server.url, "app", "wire-user")
    with httpx.Client(timeout=10) as http:
        # A notification: 202 and no body; a request: one application/json answer, no session id
        note = http.post(url, json=rpc("notifications/initialized", request_id=None))
        assert (note.status_code, note.content) == (202, b"")
        answer = http.post(url, json=rpc("ping", request_id=7))
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert "mcp-session-id" not in answer.headers
        # GET (no server-sent stream): 405
        stream = http.get(url, headers={"accept": "text/event-stream"})
        assert stream.status_code == 405
        assert stream.headers["allow"] == "POST"
        # Malformed JSON: a parse error; a batch or a non-JSON-RPC object: invalid request
        assert http.post(url, content=b"{nope").json()["error"]["code"] == -32700
        assert http.post(url, json=[rpc("ping")]).json()["error"]["code"] == -32600
        # An unknown method: method not found; an unsupported protocol version header: 400
        assert http.post(url, json=rpc("prompts/list")).json()["error"]["code"] == -32601
        refused = http.post(url, json=rpc("ping"), headers={"mcp-protocol-version": "1999-01-01"})
        assert refused.status_code == 400
        assert refused.json()["error"]["data"]["supported"] == ["2025-11-25", "2025-06-18"]


def test_every_tool_through_the_sdk_with_results_matching_their_output_schemas(server: LiveServer) -> None:
    url = mcp_url(server.url, "app", "tools-user")

    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        call = session.call_tool  # the SDK checks every structuredContent against the tool's outputSchema
        out["created"] = structured(
            await call(
                "create_entities",
                {
                    "entities": [
                        {"name": "Alice", "entityType": "person", "observations": ["likes green tea", "lives in Oslo"]},
                        {"name": "Acme", "entityType": "company", "observations": ["makes rockets"]},
                    ]
                },
            )
        )
        out["related"] = structured(
            await call("create_relations", {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]})
        )
        out["added"] = structured(
            await call("add_observations", {"observations": [{"entityName": "Alice", "contents": ["plays chess"]}]})
        )
        out["search"] = structured(await call("search_nodes", {"query": "chess"}))
        out["open"] = structured(await call("open_nodes", {"names": ["Acme", "Nobody"]}))
        out["deleted_obs"] = structured(
            await call(
                "delete_observations", {"deletions": [{"entityName": "Alice", "observations": ["lives in Oslo"]}]}
            )
        )
        out["history"] = structured(await call("entity_history", {"name": "Alice"}))
        out["deleted_rel"] = structured(
            await call("delete_relations", {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]})
        )
        out["remember"] = structured(await call("remember", {"entity": "Bob", "facts": ["owns a cat"]}))
        out["relate"] = structured(await call("relate", {"source": "Bob", "relation": "knows", "target": "Alice"}))
        out["memory"] = structured(
            await call("add_memory", {"text": "My favourite colour is teal", "session_id": "s1"})
        )
        out["found"] = structured(await call("search_memory", {"query": "favourite colour", "mode": "keyword"}))
        out["card"] = structured(await call("profile_card", {"max_entities": 5}))
        out["deleted"] = structured(await call("delete_entities", {"entityNames": ["Acme", "Ghost"]}))
        out["graph"] = structured(await call("read_graph", {}))
        resource = await session.read_resource("memory://knowledge-graph")
        out["resource"] = json.loads(resource.contents[0].text)
        return out

    out = over_http(url, body)
    # create / relate / add: the reference shapes
    assert out["created"]["entities"][0] == {
        "name": "Alice",
        "entityType": "person",
        "observations": ["likes green tea", "lives in Oslo"],
    }
    assert out["related"] == {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]}
    assert out["added"] == {"results": [{"entityName": "Alice", "addedObservations": ["plays chess"]}]}
    # search / open: entities with the relations touching them
    assert [e["name"] for e in out["search"]["entities"]] == ["Alice"]
    assert out["search"]["relations"] == [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]
    assert [e["name"] for e in out["open"]["entities"]] == ["Acme"]
    assert len(out["open"]["relations"]) == 1
    # delete_observations / delete_relations retire facts that entity_history still shows
    assert out["deleted_obs"] == {"success": True, "message": "Observations deleted successfully"}
    oslo = [o for o in out["history"]["observations"] if o["content"] == "lives in Oslo"]
    assert len(oslo) == 1
    assert oslo[0]["expired_at"] is not None
    assert out["deleted_rel"]["success"] is True
    # our tools
    assert out["remember"] == {"stored": True, "entity": "Bob", "facts_added": 1}
    assert out["relate"] == {"related": True, "source": "Bob", "relation": "knows", "target": "Alice"}
    assert out["memory"]["session_id"] == "s1"
    assert [e["id"] for e in out["found"]["entries"]] == [out["memory"]["id"]]
    assert out["card"]["text"].startswith("[Known about the user]")
    # the card tells relations on their source's line (Bob knows Alice; Alice's works_at Acme was retired)
    assert "• Bob: owns a cat; knows Alice" in out["card"]["text"].splitlines()
    assert [(r["source"], r["relation_type"], r["target"]) for r in out["card"]["relations"]] == [
        ("Bob", "knows", "Alice")
    ]
    # delete_entities: Acme gone (an unknown name is no error); the graph and the resource agree
    graph = out["graph"]
    assert sorted(e["name"] for e in graph["entities"]) == ["Alice", "Bob"]
    alice = next(e for e in graph["entities"] if e["name"] == "Alice")
    assert alice["observations"] == ["likes green tea", "plays chess"]
    assert graph["relations"] == [{"from": "Bob", "to": "Alice", "relationType": "knows"}]
    assert out["resource"] == graph


def test_a_memory_is_corrected_and_its_history_read_through_the_sdk(server: LiveServer) -> None:
    url = mcp_url(server.url, "app", "corrections-user", project_id="trip")

    async def body(session: ClientSession) -> dict[str, Any]:
        call = session.call_tool  # the SDK checks every structuredContent against the tool's outputSchema
        out: dict[str, Any] = {"added": structured(await call("add_memory", {"text": "The hotel is the Ritz"}))}
        memory_id = out["added"]["id"]
        out["fixed"] = structured(
            await call("update_memory", {"id": memory_id, "text": "The hotel is the Savoy", "revision": 1})
        )
        out["tagged"] = structured(await call("update_memory", {"id": memory_id, "metadata": {"booked": True}}))
        out["stale"] = await call("update_memory", {"id": memory_id, "text": "The hotel is the Hilton", "revision": 1})
        out["empty"] = await call("update_memory", {"id": memory_id})
        out["unknown"] = await call("memory_history", {"id": "never-made"})
        out["history"] = structured(await call("memory_history", {"id": memory_id}))
        out["old"] = structured(await call("search_memory", {"query": "Ritz", "mode": "keyword"}))
        out["new"] = structured(await call("search_memory", {"query": "Savoy", "mode": "keyword"}))
        return out

    out = over_http(url, body)
    assert out["added"]["project_id"] == "trip"
    assert (out["fixed"]["id"], out["fixed"]["revision"]) == (out["added"]["id"], 2)
    assert out["tagged"]["metadata"] == {"booked": True}
    assert out["tagged"]["revision"] == 3
    assert error_text(out["stale"]).endswith("(revision_conflict)")
    assert "text, metadata or both" in error_text(out["empty"])
    assert error_text(out["unknown"]).endswith("(not_found)")
    # newest first, as entity_history
    assert [(v["revision"], v["content"]["parts"][0]["text"]) for v in out["history"]["versions"]] == [
        (3, "The hotel is the Savoy"),
        (2, "The hotel is the Savoy"),
        (1, "The hotel is the Ritz"),
    ]
    assert out["history"]["versions"][0]["valid_to"] is None
    assert out["old"]["entries"] == []
    assert [e["id"] for e in out["new"]["entries"]] == [out["added"]["id"]]


def test_failures_are_tool_errors_and_change_nothing(server: LiveServer) -> None:
    url = mcp_url(server.url, "app", "errors-user")

    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        structured(
            await session.call_tool(
                "create_entities", {"entities": [{"name": "Known", "entityType": "x", "observations": []}]}
            )
        )
        out["unknown"] = await session.call_tool(
            "add_observations",
            {"observations": [{"entityName": "Known", "contents": ["a"]}, {"entityName": "Nope", "contents": ["b"]}]},
        )
        out["bad"] = await session.call_tool("create_entities", {"entities": [{"name": 3}]})
        out["empty_name"] = await session.call_tool(
            "create_entities", {"entities": [{"name": "", "entityType": "x", "observations": []}]}
        )
        out["history"] = await session.call_tool("entity_history", {"name": "Nope"})
        out["mode"] = await session.call_tool("search_memory", {"query": "x", "mode": "fuzzy"})
        try:
            await session.call_tool("no_such_tool", {})
        except MCPError as error:
            out["no_tool"] = error.error.code
        out["graph"] = structured(await session.call_tool("read_graph", {}))
        return out

    out = over_http(url, body)
    assert error_text(out["unknown"]) == "Entity with name Nope not found"
    assert "Invalid arguments for tool create_entities" in error_text(out["bad"])
    assert "name must not be empty" in error_text(out["empty_name"])
    assert "entity_not_found" in error_text(out["history"])
    assert "mode" in error_text(out["mode"])
    assert out["no_tool"] == -32602
    # Nothing of the failed calls was written (add_observations checks every entity first)
    assert out["graph"]["entities"] == [{"name": "Known", "entityType": "x", "observations": []}]


def test_project_id_scopes_every_tool(server: LiveServer) -> None:
    base = server.url
    for project, name in ((None, "GlobalThing"), ("p1", "OnlyInP1"), ("p2", "OnlyInP2")):
        over_http(mcp_url(base, "app", "scoped-user", project), create_thing(name))
    # Then a project sees the global graph and its own, never another project's; global sees only global
    assert over_http(mcp_url(base, "app", "scoped-user", "p1"), graph_names) == ["GlobalThing", "OnlyInP1"]
    assert over_http(mcp_url(base, "app", "scoped-user", "p2"), graph_names) == ["GlobalThing", "OnlyInP2"]
    assert over_http(mcp_url(base, "app", "scoped-user"), graph_names) == ["GlobalThing"]
    # And another user of the same app sees nothing
    assert over_http(mcp_url(base, "app", "someone-else", "p1"), graph_names) == []


def test_read_graph_and_search_nodes_say_when_they_cut(server: LiveServer) -> None:
    url = mcp_url(server.url, "app", "big-user")
    big = "x" * 60_000

    async def body(session: ClientSession) -> dict[str, Any]:
        entities = [{"name": f"E{i:02d}", "entityType": "big", "observations": [f"word{i} {big}"]} for i in range(20)]
        structured(await session.call_tool("create_entities", {"entities": entities}))
        out = {
            "limited": structured(await session.call_tool("read_graph", {"limit": 3})),
            "whole": await session.call_tool("read_graph", {}),
            "search": structured(await session.call_tool("search_nodes", {"query": "big", "limit": 5})),
        }
        return out

    out = over_http(url, body)
    # A limit: the first entities by name, and a note that there are more
    limited = out["limited"]
    assert [e["name"] for e in limited["entities"]] == ["E00", "E01", "E02"]
    assert limited["truncated"] is True
    assert "of 20" in limited["message"]
    # 20 x 60 kB is more than 1 MiB: the text is cut below it and says so
    text = out["whole"].content[0].text
    assert len(text.encode("utf-8")) <= 1024 * 1024
    whole = out["whole"].structured_content
    assert whole["truncated"] is True
    assert 0 < len(whole["entities"]) < 20
    assert json.loads(text) == whole
    # search_nodes: at most limit matches, and it says more matched
    assert len(out["search"]["entities"]) == 5
    assert out["search"]["truncated"] is True


AGENTMEM = str(Path(sys.executable).parent / "agentmem")


def _key(app: str, db: Path) -> str:
    env = {**os.environ, "MEMORY_STORE": "sqlite"}
    done = subprocess.run(
        [AGENTMEM, "keys", "create", "--app", app, "--db", str(db)], capture_output=True, text=True, env=env, check=True
    )
    return str(json.loads(done.stdout)["api_key"])


def test_auth_metering_and_idempotency_are_the_apis(live_server_factory: ServerFactory) -> None:
    server = live_server_factory(env={"MEMORY_AUTH": "required", "MEMORY_EMBEDDER": "hashing"})
    key_a, key_b = _key("A", server.db_path), _key("B", server.db_path)
    url = mcp_url(server.url, "A", "u")
    spec = {"entities": [{"name": "Tea", "entityType": "drink", "observations": ["green", "hot"]}]}

    async def create(session: ClientSession) -> Any:
        return structured(await session.call_tool("create_entities", spec))

    # The app's key works as a Bearer token and as x-api-key through the SDK
    assert over_http(url, create, {"Authorization": f"Bearer {key_a}"})["entities"][0]["name"] == "Tea"
    assert over_http(url, create, {"x-api-key": key_a})["entities"][0]["name"] == "Tea"
    with httpx.Client(timeout=10) as http:
        # Another app's key: 403; no key: 401 (before any tool runs)
        call = rpc("tools/call", {"name": "create_entities", "arguments": spec})
        assert http.post(url, json=call, headers={"Authorization": f"Bearer {key_b}"}).status_code == 403
        assert http.post(url, json=call).status_code == 401
        # A retried write with the same Idempotency-Key is answered from the first, nothing written again
        headers = {"x-api-key": key_a, "Idempotency-Key": "retry-1"}
        remember = rpc("tools/call", {"name": "remember", "arguments": {"entity": "Tea", "facts": ["sweet"]}})
        first = http.post(url, json=remember, headers=headers)
        again = http.post(url, json=remember, headers=headers)
        assert again.json() == first.json()
        assert again.headers.get("idempotent-replayed") == "true"
        # Metering: each POST is a request; items stored are what the tools stored (2 entities, 1 fact)
        day = http.get(server.url + "/v1/apps/A/usage", headers={"x-api-key": key_a}).json()["days"][0]
    assert day["items_stored"] == 3


def test_adk_mcp_toolset_as_docs_configure_it(server: LiveServer, tmp_path: Path) -> None:
    import asyncio

    from google.adk.tools.mcp_tool import McpToolset
    from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams, StreamableHTTPConnectionParams

    from tests.mcp_support import ours_over_stdio_params

    async def use(toolset: McpToolset) -> tuple[list[str], Any]:
        try:
            tools = {t.name: t for t in await toolset.get_tools()}
            stored = await tools["remember"].run_async(
                args={"entity": "Ann", "facts": ["likes tea"]}, tool_context=None
            )
            return sorted(tools), stored
        finally:
            await toolset.close()

    # Given ADK's McpToolset on Streamable HTTP (docs/mcp.md) and on stdio
    over_http_toolset = McpToolset(
        connection_params=StreamableHTTPConnectionParams(
            url=mcp_url(server.url, "app", "adk-user", "garden"), headers={"Authorization": "Bearer unused-locally"}
        )
    )
    stdio = ours_over_stdio_params("app", "adk-user", "--db", str(tmp_path / "adk.db"), "--create")
    over_stdio_toolset = McpToolset(connection_params=StdioConnectionParams(server_params=stdio, timeout=30))
    # Then both list every tool and run one
    for toolset in (over_http_toolset, over_stdio_toolset):
        names, stored = asyncio.run(use(toolset))
        assert names == sorted(REFERENCE_TOOLS + OWN_TOOLS)
        assert stored["structuredContent"] == {"stored": True, "entity": "Ann", "facts_added": 1}
