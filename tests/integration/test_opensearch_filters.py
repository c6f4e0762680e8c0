"""The filter language pushed into the OpenSearch k-NN efficient filter, and TTL removals by the stream
indexer, on the real OpenSearch node (tests/opensearch_node.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentmem.clock import format_timestamp
from agentmem.container import Container, set_container
from agentmem.embeddings.codec import VECTOR_ATTR
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import Scope
from agentmem.local.events import LocalContext
from agentmem.memory import filters, records
from agentmem.models.memory import MemoryEntry
from agentmem.search.inverted_index import InvertedIndex
from agentmem.settings import Settings
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from agentmem.vectors.port import VectorRecord
from tests.opensearch_node import TEST_DIMENSION, OpenSearchNode, on_node
from tests.support import ApiClient, scope_path, stream_image, text_entry

EMBEDDER = HashingEmbedder(TEST_DIMENSION)
SCOPE = Scope("app", "alice")
NOW = "2026-06-01T12:00:00.000Z"


def _metadata(i: int) -> dict[str, Any]:
    """Varied on purpose: one key holding several types, negative and fractional numbers, lists, gaps."""
    metadata: dict[str, Any] = {"n": i - 20 + (0.5 if i % 3 == 0 else 0), "team": ["red", "blue", "green"][i % 3]}
    if i % 4 == 0:
        metadata["mixed"] = str(i)
    elif i % 4 == 1:
        metadata["mixed"] = i
    elif i % 4 == 2:
        metadata["mixed"] = i % 8 == 2
    if i % 5 == 0:
        metadata["tags"] = ["x", f"t{i % 3}"]
    if i % 7 == 0:
        metadata["dotted.key"] = "yes"
    return metadata


ROWS = [
    VectorRecord(
        SCOPE,
        f"E{i:03d}",
        EMBEDDER.embed([f"entry number {i}"])[0],
        EMBEDDER.model_id,
        session_id="s1" if i % 2 else None,
        author="user" if i % 3 else "agent",
        timestamp=f"2026-05-{1 + i % 28:02d}T10:00:00.000Z",
        metadata=_metadata(i),
        expires_at=None if i % 6 else ("2026-06-01T11:00:00.000Z" if i % 12 else "2026-06-02T00:00:00.000Z"),
    )
    for i in range(60)
]

FILTERS: list[dict[str, Any]] = [
    {"team": "red"},
    {"team": {"$ne": "red"}},
    {"n": {"$gt": 0}},
    {"n": {"$gte": -5, "$lt": 5.5}},
    {"n": {"$lte": -19.5}},
    {"n": 2},
    {"n": {"$in": [-20, 0.5, 3, 100]}},
    {"n": {"$nin": [-20, 0.5]}},
    {"mixed": {"$gt": "3"}},  # strings only
    {"mixed": {"$gt": 3}},  # numbers only
    {"mixed": True},
    {"mixed": {"$ne": True}},
    {"mixed": "8"},
    {"mixed": {"$exists": False}},
    {"tags": "x"},
    {"tags": {"$in": ["t1", "nope"]}},
    {"tags": {"$gt": "a"}},  # a list is not ordered
    {"dotted.key": "yes"},
    {"author": "agent"},
    {"session_id": {"$exists": True}},
    {"session_id": "s1"},
    {"timestamp": {"$gte": "2026-05-20T00:00:00Z"}},
    {"$or": [{"team": "green"}, {"n": {"$lt": -15}}]},
    {"$and": [{"team": "blue"}, {"$not": {"tags": {"$exists": True}}}]},
    {"$not": {"$or": [{"team": "red"}, {"mixed": {"$exists": True}}]}},
    {"missing": {"$ne": 1}},
    {"n": "1"},
]


@pytest.mark.parametrize("document", FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_the_pushed_filter_selects_what_the_evaluator_selects(index: OpenSearchVectorIndex, document: Any) -> None:
    index.upsert(ROWS)
    where = filters.both(filters.parse(document), filters.live(NOW))
    assert where is not None
    expected = {
        r.entry_id
        for r in ROWS
        if filters.matches(
            where,
            {"author": r.author, "session_id": r.session_id, "timestamp": r.timestamp, "expires_at": r.expires_at},
            r.metadata,
        )
    }
    hits = index.search([SCOPE], EMBEDDER.embed(["entry number 7"])[0], 100, EMBEDDER.model_id, where)
    assert {h.entry_id for h in hits} == expected
    assert expected or document in ({"tags": {"$gt": "a"}}, {"n": "1"})  # the set is not empty by accident


def test_a_selective_filter_still_fills_top_k(index: OpenSearchVectorIndex) -> None:
    # Given 300 vectors, only 5 of them tagged rare, all far from the query
    near = [
        VectorRecord(
            SCOPE, f"N{i:03d}", EMBEDDER.embed(["coffee beans"])[0], EMBEDDER.model_id, metadata={"k": "common"}
        )
        for i in range(295)
    ]
    rare = [
        VectorRecord(SCOPE, f"R{i}", EMBEDDER.embed([f"tax form {i}"])[0], EMBEDDER.model_id, metadata={"k": "rare"})
        for i in range(5)
    ]
    index.upsert(near + rare)
    # When searching near the common ones with a filter on rare, top_k 5
    hits = index.search(
        [SCOPE], EMBEDDER.embed(["coffee beans"])[0], 5, EMBEDDER.model_id, filters.parse({"k": "rare"})
    )
    # Then the five rare ones come back (the filter is applied while searching, not after the cut)
    assert sorted(h.entry_id for h in hits) == [f"R{i}" for i in range(5)]


@pytest.fixture
def cloud(sqlite_table: SqliteTable, opensearch_node: OpenSearchNode) -> Iterator[Container]:
    settings = Settings(**on_node(opensearch_node.url, 64))
    container = Container(settings, table=sqlite_table)
    index = container.vector_index
    assert isinstance(index, OpenSearchVectorIndex)
    index.create_index(64)
    set_container(container)
    yield container
    set_container(None)
    index.client.indices.delete(index=index.index)


def test_search_with_a_filter_through_the_api_on_opensearch(cloud: Container) -> None:
    api = ApiClient()
    path = scope_path("app", "alice")
    entries = [{**text_entry(f"coffee order {i}"), "metadata": {"i": i, "even": i % 2 == 0}} for i in range(30)]
    assert api.put(f"{path}/sessions/s1/memories", {"entries": entries}).status == 200
    for mode in ("semantic", "hybrid"):
        body = {"query": "coffee order", "mode": mode, "top_k": 4, "filter": {"even": False, "i": {"$lt": 9}}}
        reply = api.post(f"{path}/memories/search", body)
        assert reply.status == 200, reply.body
        assert not reply.body.get("degraded"), reply.body
        assert sorted(e["metadata"]["i"] for e in reply.body["entries"]) == [1, 3, 5, 7], mode


def test_a_ttl_removal_takes_the_entry_out_of_the_index_and_the_table(cloud: Container) -> None:
    from functions.indexer.handler import handler

    # Given an entry that expired (written with an expiry in the past) and is in OpenSearch
    scope = Scope("app", "dave")
    expired = {"content": {"parts": [{"text": "temporary door code"}]}, "expires_at": datetime.now(UTC)}
    stored = cloud.memory.add_entry(scope, MemoryEntry.model_validate(expired))
    lasting = cloud.memory.add_entry(scope, MemoryEntry.model_validate({"content": {"parts": [{"text": "door"}]}}))
    index = cloud.vector_index
    assert isinstance(index, OpenSearchVectorIndex)
    assert index.count_user(scope.user_ref) == 2
    table = cloud.table
    assert isinstance(table, SqliteTable)
    [item] = [i for i in table.expired_items(2**40, 100) if i["sk"] == records.entry_sk(stored.id)]
    assert isinstance(item[VECTOR_ATTR], bytes)
    # When DynamoDB TTL deletes the entry item and the stream delivers its REMOVE by the service principal
    table.delete(item["pk"], item["sk"])
    record = {
        "eventID": "1",
        "eventName": "REMOVE",
        "eventSource": "aws:dynamodb",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "dynamodb": {
            "Keys": {"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}},
            "OldImage": stream_image(item),
            "SequenceNumber": "1",
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }
    assert handler({"Records": [record]}, LocalContext()) == {"batchItemFailures": []}
    # Then its OpenSearch document is gone, and so is everything that pointed at it in the table
    assert index.count_user(scope.user_ref) == 1
    leftovers = [i for i in table.expired_items(2**40, 1000) if stored.id in i["sk"]]
    assert leftovers == []
    stats = table.get(scope.partition, InvertedIndex(table, records.INDEX_NAMESPACE).stats_sk)
    assert stats is not None
    assert stats["docs"] == 1
    assert [e.id for e in cloud.memory.list_recent(scope).entries] == [lasting.id]
    assert format_timestamp(datetime.now(UTC) + timedelta(seconds=1)) > str(item[records.EXPIRES_AT])


def test_a_store_search_ranks_on_opensearch_within_its_namespace_and_filter(cloud: Container) -> None:
    # Given store items in two namespaces of one user, and one of another user (agentmem.langgraph's route)
    api = ApiClient()

    def put(user: str, namespace: list[str], key: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"op": "put", "user": user, "namespace": namespace, "key": key, "value": value}

    ops = [put("erin", ["notes"], f"k{i}", {"content": f"coffee order {i}", "i": i}) for i in range(12)]
    ops += [
        put("erin", ["other"], "o", {"content": "coffee order 1", "i": 1}),
        put("finn", ["notes"], "f", {"content": "coffee", "i": 1}),
    ]
    assert api.post("/v1/apps/app/store/batch", {"ops": ops}).status == 200
    # When searching one namespace with a query and a filter the engine evaluates while ranking
    search = {"op": "search", "user": "erin", "namespace_prefix": ["notes"], "query": "coffee order", "limit": 3}
    reply = api.post("/v1/apps/app/store/batch", {"ops": [{**search, "filter": {"i": {"$gte": 9}}}]})
    # Then the three matches come back, ranked by the service, and nothing outside the namespace or user
    assert reply.status == 200, reply.body
    [hits] = reply.body["results"]
    assert sorted(h["key"] for h in hits) == ["k10", "k11", "k9"]
    assert all(h["namespace"] == ["notes"] and h["score"] > 0 for h in hits)
