"""``{scope}/mcp`` through the API handler on both tables (SQLite and DynamoDB on moto): bad input
changes nothing, deletions keep history, and an event in a sample file drives it as API Gateway would."""

from __future__ import annotations

from typing import Any

from agentmem.container import Container
from tests.support import ApiClient, count_items, load_event

MCP = "/v1/apps/app/users/u/mcp"


def call(api: ApiClient, tool: str, arguments: Any, **query: str) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    reply = api.post(MCP, message, query=query or None)
    assert reply.status == 200, reply.body
    return reply.body["result"]  # type: ignore[no-any-return]


def test_bad_tool_input_is_an_error_result_and_writes_nothing(api: ApiClient, container: Container) -> None:
    before = count_items(container.table)
    bad = [
        ("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": ["ok"]}, {"name": "B"}]}),
        ("create_entities", {"entities": [{"name": "A\x00", "entityType": "t", "observations": []}]}),
        ("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": ["x" * 70_000]}]}),
        ("create_relations", {"relations": [{"from": "A", "to": "", "relationType": "r"}]}),
        ("add_observations", {"observations": [{"entityName": "Missing", "contents": ["x"]}]}),
        ("remember", {"entity": "A", "facts": []}),
        ("remember", {"entity": "A", "facts": ["x"], "project_id": "elsewhere"}),
        ("search_nodes", {"query": "x", "limit": 0}),
        ("read_graph", {"limit": "all"}),
        ("add_memory", {"text": ""}),
        ("create_entities", "not an object"),
    ]
    for tool, arguments in bad:
        result = call(api, tool, arguments)
        assert result["isError"] is True, (tool, arguments)
        assert result["content"][0]["text"], tool
    assert count_items(container.table) == before
    # And a bad project id in the URL is the API's 422, before any tool runs
    refused = api.post(MCP, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, query={"project_id": ""})
    assert refused.status == 422


def test_deleting_observations_and_relations_keeps_their_history(api: ApiClient) -> None:
    spec = {"entities": [{"name": "Ann", "entityType": "person", "observations": ["lives in Rome", "likes tea"]}]}
    assert call(api, "create_entities", spec, project_id="p")["isError"] is False
    relation = {"from": "Ann", "to": "Rome", "relationType": "lives_in"}
    call(api, "create_relations", {"relations": [relation]}, project_id="p")
    # When both are deleted through the reference tools
    call(
        api,
        "delete_observations",
        {"deletions": [{"entityName": "Ann", "observations": ["lives in Rome"]}]},
        project_id="p",
    )
    call(api, "delete_relations", {"relations": [relation]}, project_id="p")
    # Then the graph no longer holds them
    graph = call(api, "open_nodes", {"names": ["Ann"]}, project_id="p")["structuredContent"]
    assert graph == {
        "entities": [{"name": "Ann", "entityType": "person", "observations": ["likes tea"]}],
        "relations": [],
    }
    # But the entity's history does, with the time they stopped being current
    history = call(api, "entity_history", {"name": "Ann"}, project_id="p")["structuredContent"]
    retired = {o["content"]: o["expired_at"] for o in history["observations"]}
    assert retired["lives in Rome"] is not None
    assert retired["likes tea"] is None
    assert [r["expired_at"] is not None for r in history["relations"]] == [True]
    # And the global scope never saw any of it
    assert call(api, "read_graph", {})["structuredContent"] == {"entities": [], "relations": []}


def test_the_sample_event_drives_the_mcp_route(api: ApiClient) -> None:
    reply = api.invoke(load_event("api_mcp_tools_call.json"))
    assert reply.status == 200
    assert reply.body["result"]["structuredContent"] == {"stored": True, "entity": "the user", "facts_added": 1}


def test_add_memory_takes_metadata_and_search_memory_a_filter(api: ApiClient, container: Container) -> None:
    # Given two memories added through MCP, tagged differently
    for text, tag in (("the router password is in the drawer", "home"), ("the router at work is on floor 2", "work")):
        added = call(api, "add_memory", {"text": text, "metadata": {"place": tag}})
        assert added["isError"] is False
        assert added["structuredContent"]["metadata"] == {"place": tag}
    # When searching with a filter
    found = call(api, "search_memory", {"query": "router", "filter": {"place": "work"}})
    # Then only the matching one comes back, with its metadata
    assert found["isError"] is False
    assert [e["metadata"] for e in found["structuredContent"]["entries"]] == [{"place": "work"}]
    # And bad metadata or a malformed filter is an error result that writes nothing
    before = count_items(container.table)
    assert call(api, "add_memory", {"text": "x", "metadata": {"bad key": 1}})["isError"] is True
    assert call(api, "search_memory", {"query": "router", "filter": {"place": {"$near": 1}}})["isError"] is True
    assert count_items(container.table) == before
