"""A project never widens a graph write, and the MCP tools that name facts by content find them whatever
their size (issue 17, points 1 and 2), through the real handler on SQLite and DynamoDB (moto)."""

from __future__ import annotations

from typing import Any

from agentmem.container import Container
from agentmem.keys import Scope
from tests.support import ApiClient, scope_path

USER = scope_path("app", "alice")
GRAPH = f"{USER}/graph"
MCP = f"{USER}/mcp"


def _global_facts(api: ApiClient) -> tuple[str, str]:
    """A global entity with one fact and a global relation: (observation id, relation id)."""
    made = api.post(
        f"{GRAPH}/entities",
        {"entities": [{"name": "Pixel", "entity_type": "dog", "observations": ["likes the beach"]}]},
    )
    assert made.status == 200, made.body
    related = api.post(
        f"{GRAPH}/relations", {"relations": [{"source": "alice", "relation_type": "owns", "target": "Pixel"}]}
    )
    assert related.status == 200, related.body
    return made.body["entities"][0]["observations"][0]["id"], related.body["relations"][0]["id"]


def _global_graph(api: ApiClient) -> dict[str, Any]:
    return api.get(f"{GRAPH}/nodes", query={"name": ["Pixel", "alice"]}).body  # type: ignore[no-any-return]


def test_a_project_scoped_write_by_id_cannot_change_a_global_fact(api: ApiClient) -> None:
    obs_id, rel_id = _global_facts(api)
    in_project = {"project_id": "p1"}
    # When each write by id is addressed from a project
    attempts = [
        api.delete(f"{GRAPH}/observations/{obs_id}", query=in_project),
        api.post(f"{GRAPH}/observations/{obs_id}/invalidate", {**in_project}),
        api.post(f"{GRAPH}/observations/{obs_id}/supersede", {"content": "hates the beach", **in_project}),
        api.post(f"{GRAPH}/relations/{rel_id}/invalidate", {**in_project}),
        api.delete(f"{GRAPH}/relations/{rel_id}", query=in_project),
    ]
    # Then each is "not found", and the global graph is as it was
    assert [a.status for a in attempts] == [404] * 5
    graph = _global_graph(api)
    assert [o["content"] for o in graph["entities"][0]["observations"]] == ["likes the beach"]
    assert [r["id"] for r in graph["relations"]] == [rel_id]
    # And the same writes in the global scope work
    assert api.post(f"{GRAPH}/observations/{obs_id}/invalidate", {}).status == 200
    assert api.delete(f"{GRAPH}/relations/{rel_id}").status == 204


def _tool(api: ApiClient, name: str, arguments: Any, **query: str) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    reply = api.post(MCP, message, query=query or None)
    assert reply.status == 200, reply.body
    return reply.body["result"]  # type: ignore[no-any-return]


def test_mcp_deletes_from_a_project_leave_the_global_graph_alone(api: ApiClient) -> None:
    _global_facts(api)
    _tool(
        api,
        "delete_observations",
        {"deletions": [{"entityName": "Pixel", "observations": ["likes the beach"]}]},
        project_id="p1",
    )
    _tool(
        api,
        "delete_relations",
        {"relations": [{"from": "alice", "relationType": "owns", "to": "Pixel"}]},
        project_id="p1",
    )
    graph = _global_graph(api)
    assert [o["content"] for o in graph["entities"][0]["observations"]] == ["likes the beach"]
    assert len(graph["relations"]) == 1


def test_mcp_tools_find_the_facts_of_an_entity_larger_than_a_response(api: ApiClient, container: Container) -> None:
    # Given an entity whose facts pass open_nodes' 4 MiB response budget (70 facts of ~62 KB)
    facts = [f"fact {n} " + "x" * 62_000 for n in range(70)]
    for start in range(0, 70, 35):
        made = api.post(f"{GRAPH}/entities", {"entities": [{"name": "Big", "observations": facts[start : start + 35]}]})
        assert made.status == 200, made.body
    assert (
        api.post(
            f"{GRAPH}/relations", {"relations": [{"source": "Big", "relation_type": "near", "target": "Small"}]}
        ).status
        == 200
    )
    assert api.get(f"{GRAPH}/nodes", query={"name": "Big"}).body["truncated"] is True  # a response cannot hold it
    # When the reference tools delete one of its facts and its relation, and add a fact
    deleted = _tool(api, "delete_observations", {"deletions": [{"entityName": "Big", "observations": [facts[69]]}]})
    unrelated = _tool(api, "delete_relations", {"relations": [{"from": "Big", "relationType": "near", "to": "Small"}]})
    added = _tool(api, "add_observations", {"observations": [{"entityName": "Big", "contents": ["is large"]}]})
    # Then they did what they said
    assert deleted["isError"] is False
    assert unrelated["isError"] is False
    assert added["isError"] is False
    assert added["structuredContent"]["results"][0]["addedObservations"] == ["is large"]
    scope = Scope("app", "alice")
    assert container.graph.current_observation_ids(scope, "Big", [facts[69]]) == []
    assert len(container.graph.current_observation_ids(scope, "Big", facts)) == 69
    assert container.graph.current_relation_ids(scope, [("Big", "near", "Small")]) == []
