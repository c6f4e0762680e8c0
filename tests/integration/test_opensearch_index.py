"""OpenSearchVectorIndex against osmem-server (an OpenSearch-compatible test server), and the k-NN query shape.

osmem-server implements index creation (it accepts the knn_vector mapping), bulk, delete, count and
filtered search, but has no k-NN engine: the k-NN request body is checked against the documented query
shape of efficient filtering instead, and a k-NN search against osmem proves the fallback path.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.errors import Unavailable
from agentmem.keys import Scope, UserRef
from agentmem.vectors.opensearch import OpenSearchVectorIndex, cosine_from_score, index_body, knn_query_body
from agentmem.vectors.port import VectorIndex, VectorRecord

EMBEDDER = HashingEmbedder(16)


@pytest.fixture
def index(osmem_url: str) -> OpenSearchVectorIndex:
    created = OpenSearchVectorIndex(osmem_url, index="vectors-test")
    assert created.create_index(EMBEDDER.dimension) is True
    return created


def _record(scope: Scope, entry_id: str, text: str = "some text") -> VectorRecord:
    return VectorRecord(scope, entry_id, EMBEDDER.embed([text])[0], EMBEDDER.model_id, session_id="s1")


def _ids(index: OpenSearchVectorIndex, query: dict[str, Any]) -> set[str]:
    response = index.client.search(index=index.index, body={"size": 100, "query": query})
    return {hit["_source"]["entry_id"] for hit in response["hits"]["hits"]}


def test_create_index_is_explicit_and_idempotent(index: OpenSearchVectorIndex) -> None:
    # Given the index created by the fixture, When created again, Then nothing is done
    assert index.create_index(EMBEDDER.dimension) is False
    mapping = index.client.indices.get_mapping(index=index.index)[index.index]["mappings"]["properties"]
    assert mapping["vector"]["type"] == "knn_vector"
    assert mapping["app"]["type"] == "keyword"
    assert index.health() == "ok"
    assert isinstance(index, VectorIndex)


def test_bulk_upsert_count_delete_by_id_and_by_user(index: OpenSearchVectorIndex) -> None:
    alice, bob = UserRef("app", "alice"), UserRef("app", "bob")
    # Given vectors for alice (global and a project), bob, and alice of another app
    index.upsert(
        [
            _record(alice.scope(None), "a1"),
            _record(alice.scope("p#1"), "a2"),
            _record(bob.scope(None), "b1"),
            _record(Scope("other", "alice"), "o1"),
        ]
    )
    # When an entry is upserted again, Then it is replaced, not duplicated
    index.upsert([_record(alice.scope(None), "a1", "new text")])
    assert index.count_user(alice) == 2
    assert index.count_user(bob) == 1
    assert index.count_user(UserRef("other", "alice")) == 1
    # When one entry is deleted by id (and a missing one too), Then only it goes
    index.delete(alice.scope("p#1"), ["a2", "never-existed"])
    assert index.count_user(alice) == 1
    # When alice is erased, Then bob and the other app's alice keep theirs
    assert index.delete_user(alice) == 1
    assert index.count_user(alice) == 0
    assert index.count_user(bob) == 1
    assert index.count_user(UserRef("other", "alice")) == 1


def test_delete_scope_removes_one_project_only(index: OpenSearchVectorIndex) -> None:
    alice = UserRef("app", "alice")
    index.upsert([_record(alice.scope(None), "g"), _record(alice.scope("p1"), "p1"), _record(alice.scope("p2"), "p2")])
    assert index.delete_scope(alice.scope("p1")) == 1
    assert _ids(index, {"match_all": {}}) == {"g", "p2"}
    assert index.delete_scope(alice.scope(None)) == 1
    assert _ids(index, {"match_all": {}}) == {"p2"}


def test_scope_filter_selects_exactly_the_visible_scopes(index: OpenSearchVectorIndex) -> None:
    # The filter used inside the k-NN query, run as a plain bool query on osmem
    alice = UserRef("app", "alice")
    index.upsert(
        [
            _record(alice.scope(None), "g"),
            _record(alice.scope("p1"), "p1"),
            _record(alice.scope("p2"), "p2"),
            _record(Scope("app", "bob", "p1"), "bob"),
            _record(Scope("app2", "alice", "p1"), "app2"),
        ]
    )
    body = knn_query_body(alice.scope("p1").visible_scopes(), [0.0] * 16, 10, EMBEDDER.model_id)
    scope_filter = body["query"]["knn"]["vector"]["filter"]
    assert _ids(index, scope_filter) == {"g", "p1"}
    body = knn_query_body(alice.scope(None).visible_scopes(), [0.0] * 16, 10, EMBEDDER.model_id)
    assert _ids(index, body["query"]["knn"]["vector"]["filter"]) == {"g"}
    body = knn_query_body(alice.scope(None).visible_scopes(), [0.0] * 16, 10, "another-model")
    assert _ids(index, body["query"]["knn"]["vector"]["filter"]) == set()


def test_knn_search_on_an_engine_without_knn_raises_unavailable(index: OpenSearchVectorIndex) -> None:
    # osmem rejects k-NN queries (400): the adapter reports Unavailable, which the service turns into a fallback
    index.upsert([_record(Scope("app", "alice"), "a1")])
    with pytest.raises(Unavailable):
        index.search([Scope("app", "alice")], EMBEDDER.embed(["x"])[0], 5, EMBEDDER.model_id)


def test_knn_query_body_has_the_documented_efficient_filtering_shape() -> None:
    # OpenSearch documents efficient k-NN filtering (lucene and faiss engines) as
    # {"size": k, "query": {"knn": {"<field>": {"vector": [...], "k": k, "filter": {<query>}}}}}
    scopes = Scope("app", "alice", "trip").visible_scopes()
    body = knn_query_body(scopes, [0.5, 0.25], 7, "m1")
    assert body["size"] == 7
    assert list(body["query"]) == ["knn"]
    assert list(body["query"]["knn"]) == ["vector"]
    knn = body["query"]["knn"]["vector"]
    assert knn["vector"] == [0.5, 0.25]
    assert knn["k"] == 7
    assert knn["filter"] == {
        "bool": {
            "filter": [
                {"term": {"app": "app"}},
                {"term": {"user": "alice"}},
                {"terms": {"project": ["", "trip"]}},
                {"term": {"model": "m1"}},
            ]
        }
    }


def test_index_body_is_hnsw_cosine_with_keyword_fields() -> None:
    body = index_body(384, engine="faiss")
    assert body["settings"]["index"]["knn"] is True
    vector = body["mappings"]["properties"]["vector"]
    assert vector == {
        "type": "knn_vector",
        "dimension": 384,
        "space_type": "cosinesimil",
        "method": {"name": "hnsw", "engine": "faiss", "parameters": {"m": 16, "ef_construction": 128}},
    }
    for field in ("app", "user", "project", "session", "model", "entry_id"):
        assert body["mappings"]["properties"][field] == {"type": "keyword"}
    with pytest.raises(ValueError, match="engine"):
        index_body(384, engine="nmslib")


def test_search_maps_hits_back_to_scopes_and_drops_foreign_hits() -> None:
    """The response side of search, fed a recorded k-NN response shape (no engine here runs k-NN)."""

    class RecordedClient:
        def __init__(self) -> None:
            self.bodies: list[dict[str, Any]] = []

        def search(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
            self.bodies.append(body)
            return {
                "hits": {
                    "hits": [
                        {
                            "_id": "1",
                            "_score": 0.95,
                            "_source": {"app": "app", "user": "alice", "project": "", "entry_id": "g"},
                        },
                        {
                            "_id": "2",
                            "_score": 0.80,
                            "_source": {"app": "app", "user": "alice", "project": "p", "entry_id": "p"},
                        },
                        {
                            "_id": "3",
                            "_score": 0.99,
                            "_source": {"app": "app", "user": "mallory", "project": "", "entry_id": "x"},
                        },
                    ]
                }
            }

    client = RecordedClient()
    index = OpenSearchVectorIndex("http://127.0.0.1:1", client=client)
    hits = index.search(Scope("app", "alice", "p").visible_scopes(), [1.0, 0.0], 5, "m")
    assert [(h.scope.project_id, h.entry_id) for h in hits] == [(None, "g"), ("p", "p")]
    assert hits[0].score == pytest.approx(cosine_from_score(0.95))
    assert client.bodies[0]["query"]["knn"]["vector"]["k"] == 5


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_https_endpoints_are_signed_with_sigv4_for_the_right_service(service: str) -> None:
    from opensearchpy import AWSV4SignerAuth

    # Given an AWS endpoint (no request is sent: the client is only built)
    index = OpenSearchVectorIndex("https://search-memory.us-east-1.es.amazonaws.com", service=service)
    auth = index.client.transport.kwargs["http_auth"]
    # Then requests are signed with SigV4 for that service and region
    assert isinstance(auth, AWSV4SignerAuth)
    assert auth.service == service
    assert auth.signer.region == "us-east-1"


def test_index_creation_is_never_done_by_construction_or_search() -> None:
    class NoCalls:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"unexpected call {name}")

    OpenSearchVectorIndex("http://127.0.0.1:1", client=NoCalls())
