"""GraphMemoryService calls of the SPEC contract that have no route of their own, on both tables."""

from __future__ import annotations

from agentmem.graph.service import GraphMemoryService
from agentmem.keys import Scope
from agentmem.stores.table import Table

SCOPE = Scope("demo", "alice")


def test_bulk_deletes_of_the_contract_skip_unknown_names_and_ids(table: Table) -> None:
    # Given two entities with facts and a relation
    graph = GraphMemoryService(table)
    [alice, _] = graph.create_entities(SCOPE, [{"name": "Alice", "observations": ["likes tea"]}, {"name": "Bob"}])
    [rel] = graph.create_relations(SCOPE, [{"source": "Alice", "relation_type": "knows", "target": "Bob"}])
    # When deleting by lists that mix known and unknown names and ids
    assert graph.delete_observations(SCOPE, [alice["observations"][0]["id"], "NOPE"]) == 1
    assert graph.delete_relations(SCOPE, [rel["id"], rel["id"], "NOPE"]) == 1
    assert graph.delete_entities(SCOPE, ["Alice", "Nobody"]) == 1
    # Then only Bob is left, with nothing attached
    bob = graph.open_nodes(SCOPE, ["Bob"])["entities"][0]
    assert graph.read_graph(SCOPE) == {"entities": [bob], "relations": [], "truncated": False, "next_cursor": None}
