"""The graph's table layout on both tables: what a write costs in items, what the search segments hold
after facts come and go, data of the previous layout (lock items, per-observation postings), and the
bounded retry of optimistic writes (graph and memory)."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem import capacity, users
from agentmem.clock import new_id
from agentmem.errors import ConditionFailed, Conflict
from agentmem.graph import records
from agentmem.graph.scoring import index_tokens
from agentmem.graph.service import GraphMemoryService
from agentmem.keys import Scope
from agentmem.memory import records as memory_records
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.search import changes
from agentmem.stores import retry
from agentmem.stores.table import Condition, Item, Table, query_all

SCOPE = Scope("demo", "alice")


def _graph_items(table: Table, prefix: str = records.GRAPH_PREFIX) -> list[Item]:
    """The graph's items under ``prefix``, without its change log (the version item and log rows: ids of
    what changed, kept a week; agentmem/search/changes.py)."""
    log = changes.GRAPH
    return [
        i
        for i in query_all(table, SCOPE.partition, prefix)
        if i["sk"] != log.stats_sk and not i["sk"].startswith(log.prefix)
    ]


def test_a_batch_of_100_entities_with_5_facts_each_stores_at_most_3_items_per_fact(table: Table) -> None:
    # Given 100 new entities of 5 facts each, every fact with its own words and one shared topic word
    graph = GraphMemoryService(table)
    batch = [
        {
            "name": f"Entity{i:03d}",
            "entity_type": "person",
            "observations": [f"w{i}x{j} v{i}y{j} topic{i % 7}" for j in range(5)],
        }
        for i in range(100)
    ]
    graph.create_entities(SCOPE, batch)
    # Then the graph holds at most 3 items per fact (entities and recency included), and no search structure
    assert len(_graph_items(table)) <= 3 * 500
    assert {i["sk"][:3] for i in _graph_items(table)} <= {"GE#", "GO#", "GX#", "GU#"}
    # And every fact is found by its own words and scored from the facts
    [hit] = graph.search_nodes(SCOPE, "w42x3")["results"]
    assert (hit["entity"]["name"], hit["score"]) == ("Entity042", 1)
    ranked = graph.search_nodes(SCOPE, "topic3 v3y1", limit=3)["results"]
    assert [(r["entity"]["name"], r["score"]) for r in ranked] == [("Entity003", 6), ("Entity010", 5), ("Entity017", 5)]


def test_another_process_searches_what_the_writer_changed_and_never_what_left(table: Table) -> None:
    # Given a writer and a searcher (two processes' indexes) and entities the searcher has already searched
    writer, searcher = GraphMemoryService(table), GraphMemoryService(table)
    [alice, bob] = writer.create_entities(
        SCOPE,
        [
            {"name": "Alice", "observations": ["likes tea", "reads books"]},
            {"name": "Bob", "observations": ["likes tea"]},
        ],
    )
    [later] = writer.add_observations(SCOPE, "Bob", ["plays chess"])
    assert [r["entity"]["name"] for r in searcher.search_nodes(SCOPE, "tea")["results"]] == ["Alice", "Bob"]
    # When the writer deletes Alice, supersedes Bob's first fact and invalidates his later one
    writer.delete_entity(SCOPE, "Alice")
    _, replacement = writer.supersede_observation(SCOPE, bob["observations"][0]["id"], "likes coffee")
    writer.invalidate_observation(SCOPE, later["id"])
    # Then the searcher finds Bob by his current fact only, and Alice no more
    assert searcher.search_nodes(SCOPE, "tea")["results"] == []
    assert searcher.search_nodes(SCOPE, "chess")["results"] == []
    assert searcher.search_nodes(SCOPE, "books")["results"] == []
    assert [(r["entity"]["name"], r["score"]) for r in searcher.search_nodes(SCOPE, "coffee bob")["results"]] == [
        ("Bob", 4)
    ]
    # And once Bob's fact is deleted and Bob too, nothing is found, and no search structure was ever stored
    writer.delete_observation(SCOPE, replacement["id"])
    writer.delete_entity(SCOPE, "Bob")
    assert searcher.search_nodes(SCOPE, "bob coffee likes")["results"] == []
    assert _graph_items(table, records.SEGMENT) == []
    assert alice["name"] == "Alice"


def test_a_search_reads_the_entities_it_returns_not_the_graph(table: Table) -> None:
    # Given a graph of 300 entities sharing a word, and a searcher that has loaded it once
    graph = GraphMemoryService(table)
    graph.create_entities(SCOPE, [{"name": f"E{n:03d}", "observations": [f"shared word{n} fact"]} for n in range(300)])
    searcher = GraphMemoryService(table)
    searcher.search_nodes(SCOPE, "shared")
    # When another write lands and the searcher searches the common word
    graph.add_observations(SCOPE, "E007", ["shared shared again"])
    with capacity.measuring() as used:
        results = searcher.search_nodes(SCOPE, "shared", limit=5)["results"]
    # Then it learnt the write, and read the log, the changed entity and the five it returns (with their
    # facts and relations): not the 300
    assert results[0]["entity"]["name"] == "E007"
    assert used.items_read < 40, used


def test_the_graph_index_size_estimate_is_what_it_takes_in_memory_within_a_half(table: Table) -> None:
    import gc
    import tracemalloc

    from agentmem.graph.search_index import GraphPartition

    # Given a graph of 500 entities of three types with four facts each
    graph = GraphMemoryService(table)
    graph.create_entities(
        SCOPE,
        [
            {
                "name": f"entity {n}",
                "entityType": ("person", "place", "thing")[n % 3],
                "observations": [f"fact {n} word{n % 97} topic{n % 13} note{k}" for k in range(4)],
            }
            for n in range(500)
        ],
    )
    entities = query_all(table, SCOPE.partition, records.ENTITY)
    observations = query_all(table, SCOPE.partition, records.OBSERVATION)
    # When a process holds it
    gc.collect()
    tracemalloc.start()
    try:
        held = GraphPartition.of(changes.Caught(None, 0), entities, observations)
        measured, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Then the size it counts against the process's budget is what it takes, within a half
    assert len(held.terms) == 500
    assert measured <= held.nbytes <= 1.6 * measured, (measured, held.nbytes)


# -- data written by the previous layout (1): lock items, per-observation postings, no ``facts`` ----------


def _store_layout_1(table: Table, name: str, kind: str, facts: list[str]) -> list[str]:
    """Write an entity and its facts exactly as the service did before search segments."""
    partition, now = SCOPE.partition, "2026-01-01T00:00:00.000Z"
    items: list[Item] = [
        users.registry_item(SCOPE),
        {
            "pk": partition,
            "sk": records.entity_sk(name),
            "name": name,
            "entity_type": kind,
            "project_id": None,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        },
        records.updated_item(partition, name, now),
        records.member_item(partition, kind, name),
        *records.type_postings(partition, kind, index_tokens(kind)),
        *({"pk": partition, "sk": records.name_posting_sk(t, name), "name": name} for t in index_tokens(name)),
    ]
    ids = []
    for text in facts:
        obs_id = new_id()
        ids.append(obs_id)
        tokens = index_tokens(text)
        items += [
            {
                "pk": partition,
                "sk": records.observation_sk(name, obs_id),
                "id": obs_id,
                "entity": name,
                "project_id": None,
                "content": text,
                "valid_from": now,
                "valid_to": None,
                "recorded_at": now,
                "expired_at": None,
                "tokens": tokens,
                "rev": 1,
            },
            {"pk": partition, "sk": records.pointer_sk(obs_id), "entity": name},
            {"pk": partition, "sk": records.current_observation_sk(name, text), "id": obs_id},
            *({"pk": partition, "sk": records.observation_posting_sk(t, name, obs_id)} for t in tokens),
        ]
    table.batch_write(puts=items)
    return ids


def test_entities_of_the_previous_layout_are_read_searched_deduplicated_and_changed(table: Table) -> None:
    # Given Alice stored by the previous layout with two facts
    tea, books = _store_layout_1(table, "Alice", "person", ["likes tea", "reads books"])
    graph = GraphMemoryService(table)
    # Then she is found by name, type and facts, with exact scores, and opened with both facts
    assert [r["score"] for r in graph.search_nodes(SCOPE, "alice tea")["results"]] == [4]
    assert [r["score"] for r in graph.search_nodes(SCOPE, "person")["results"]] == [2]
    [opened] = graph.open_nodes(SCOPE, ["Alice"])["entities"]
    assert sorted(o["content"] for o in opened["observations"]) == ["likes tea", "reads books"]
    # When the same fact and a new one are written again
    [alice] = graph.create_entities(SCOPE, [{"name": "Alice", "observations": ["likes tea", "plays chess"]}])
    # Then the known fact is not stored twice and the new one is found with the old ones
    assert sorted(o["content"] for o in alice["observations"]) == ["likes tea", "plays chess", "reads books"]
    assert [r["score"] for r in graph.search_nodes(SCOPE, "tea")["results"]] == [1]
    assert [r["score"] for r in graph.search_nodes(SCOPE, "chess books")["results"]] == [2]
    # When an old fact is invalidated: it leaves the search and its old postings and lock go
    graph.invalidate_observation(SCOPE, tea)
    assert graph.search_nodes(SCOPE, "tea")["results"] == []
    assert _graph_items(table, records.observation_posting_prefix("tea")) == []
    assert _graph_items(table, records.current_observation_sk("Alice", "likes tea")) == []
    # And the fact can be stated again
    [again] = graph.add_observations(SCOPE, "Alice", ["likes tea"])
    assert again["id"] != tea
    # When Alice is deleted, nothing of her is left but the type's shared postings
    graph.delete_entity(SCOPE, "Alice")
    assert [i["sk"][:3] for i in _graph_items(table)] == ["GY#"]
    assert books not in str(_graph_items(table))


# -- the bounded retry -------------------------------------------------------------------------------


def test_retry_on_conflict_gives_up_with_a_409_after_a_bounded_number_of_attempts() -> None:
    attempts = []

    def losing() -> None:
        attempts.append(1)
        raise ConditionFailed("lost the race")

    with pytest.raises(Conflict) as raised:
        retry.retry_on_conflict(losing, what="the thing")
    assert raised.value.code == "write_contention"
    assert raised.value.http_status == 409
    assert len(attempts) == retry.MAX_ATTEMPTS


class _AlwaysNewerHead:
    """The real table, but the session head always changes between the read and the conditional put (as
    if another writer won every time); past 1,000 attempts it stops the test instead of spinning."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self.puts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def put(self, item: Item, condition: Condition | None = None) -> None:
        if item["sk"].startswith("SESSION#"):
            self.puts += 1
            if self.puts > 1000:
                raise RuntimeError("the session head was retried without bound")
            raise ConditionFailed("another ingest moved the head")
        self._table.put(item, condition)

    def get(self, pk: str, sk: str) -> Item | None:
        if sk == memory_records.session_head_sk("s1"):
            return {"pk": pk, "sk": sk, "generation": ""}
        return self._table.get(pk, sk)


def test_a_session_head_that_keeps_changing_ends_in_a_409_not_an_endless_loop(table: Table) -> None:
    racy = _AlwaysNewerHead(table)
    memory = MemoryService(racy)  # type: ignore[arg-type]
    entry = MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": "hello there"}]}})
    with pytest.raises(Conflict) as raised:
        memory.add_session(SCOPE, "s1", [entry])
    assert raised.value.code == "write_contention"
    assert racy.puts == retry.MAX_ATTEMPTS


class _CountingTable:
    """The real table, counting the calls the service makes to it; ``before_transactions`` runs once,
    just before the first ``transact_write_each`` (a concurrent writer's moment)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self.calls: dict[str, int] = {}
        self.before_transactions: Any = None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._table, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            if name == "transact_write_each" and self.before_transactions is not None:
                hook, self.before_transactions = self.before_transactions, None
                hook()
            return method(*args, **kwargs)

        return counted


def _triples(relations: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(r["source"], r["relation_type"], r["target"]) for r in relations]


def test_a_batch_of_100_relations_takes_a_few_calls_and_stores_each_once(table: Table) -> None:
    # Given 50 entities, and 100 relations among them and 20 new endpoints, one of them asked twice
    graph = GraphMemoryService(table)
    graph.create_entities(SCOPE, [{"name": f"E{i}"} for i in range(50)])
    batch = [
        {"source": f"E{i % 50}", "relation_type": f"r{i // 50}", "target": f"E{(i * 7 + 1) % 50}"} for i in range(80)
    ]
    batch += [{"source": f"E{i}", "relation_type": "owns", "target": f"New{i}"} for i in range(20)]
    batch.append(dict(batch[3]))
    counting = _CountingTable(table)
    # When they are created in one call
    created = GraphMemoryService(counting).create_relations(SCOPE, batch)  # type: ignore[arg-type]
    # Then each was stored once, the repeated one answered with the same relation
    assert _triples(created) == _triples(batch)
    assert created[-1]["id"] == created[3]["id"]
    assert len({r["id"] for r in created}) == 100
    stored = graph.read_graph(SCOPE)["relations"]
    assert sorted(r["id"] for r in stored) == sorted({r["id"] for r in created})
    # and the new endpoints exist
    assert {e["name"] for e in graph.open_nodes(SCOPE, [f"New{i}" for i in range(20)])["entities"]} == {
        f"New{i}" for i in range(20)
    }
    # in a handful of calls rather than three per relation
    assert sum(counting.calls.values()) <= 15, counting.calls
    # And the same call again stores nothing new: it answers the current relations
    again = graph.create_relations(SCOPE, batch)
    assert [r["id"] for r in again] == [r["id"] for r in created]


def test_a_relation_taken_by_a_concurrent_writer_is_answered_with_that_writers_relation(table: Table) -> None:
    # Given two entities and a batch of three relations between them
    graph = GraphMemoryService(table)
    graph.create_entities(SCOPE, [{"name": "Ana"}, {"name": "Bob"}])
    batch = [
        {"source": "Ana", "relation_type": "knows", "target": "Bob"},
        {"source": "Bob", "relation_type": "knows", "target": "Ana"},
        {"source": "Ana", "relation_type": "trusts", "target": "Bob"},
    ]
    counting = _CountingTable(table)
    competitor: list[dict[str, Any]] = []
    # When another writer stores one of them between the batch's reads and its transactions
    counting.before_transactions = lambda: competitor.extend(graph.create_relations(SCOPE, [batch[1]]))
    created = GraphMemoryService(counting).create_relations(SCOPE, batch)  # type: ignore[arg-type]
    # Then that one is answered with the competitor's relation, the others are stored, none twice
    assert created[1]["id"] == competitor[0]["id"]
    stored = graph.read_graph(SCOPE)["relations"]
    assert sorted(_triples(stored)) == sorted(_triples(batch))
