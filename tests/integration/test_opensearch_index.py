"""OpenSearchVectorIndex on a real OpenSearch 2.19.1 node with the k-NN plugin (Lucene engine), through the
adapter, the service, the REST API handler and the erasure workflow; plus the request shapes AWS needs.

faiss (what Serverless runs) has no native library on the local node: the mapping names the engine
from MEMORY_OPENSEARCH_ENGINE and the k-NN query with its filter is the same for both engines.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import Scope, UserRef
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from agentmem.vectors.opensearch_queries import KNN_CANDIDATES, cosine_from_score, index_body, knn_query_body
from agentmem.vectors.port import VectorIndex, VectorRecord
from tests.opensearch_node import TEST_DIMENSION, OpenSearchNode, on_node
from tests.support import ApiClient, scope_path, text_entry

EMBEDDER = HashingEmbedder(TEST_DIMENSION)
ALICE = UserRef("app", "alice")


def _record(scope: Scope, entry_id: str, text: str = "some text", model: str = EMBEDDER.model_id) -> VectorRecord:
    return VectorRecord(scope, entry_id, EMBEDDER.embed([text])[0], model, session_id="s1")


def _stored_ids(index: OpenSearchVectorIndex) -> set[str]:
    response = index.client.search(index=index.index, body={"size": 100, "query": {"match_all": {}}})
    return {hit["_source"]["entry_id"] for hit in response["hits"]["hits"]}


def _knn_ids(index: OpenSearchVectorIndex, scope: Scope, text: str, top_k: int = 10) -> list[str]:
    hits = index.search(scope.visible_scopes(), EMBEDDER.embed([text])[0], top_k, EMBEDDER.model_id)
    return [h.entry_id for h in hits]


# -- on the real node ----------------------------------------------------------------------------------


def test_create_index_writes_the_engine_into_a_knn_mapping_and_is_idempotent(index: OpenSearchVectorIndex) -> None:
    # Given the index created by the fixture, When created again, Then nothing is done
    assert index.create_index(EMBEDDER.dimension) is False
    got = index.client.indices.get(index=index.index)[index.index]
    assert got["settings"]["index"]["knn"] == "true"
    vector = got["mappings"]["properties"]["vector"]
    assert vector["type"] == "knn_vector"
    assert vector["dimension"] == EMBEDDER.dimension
    assert vector["method"]["engine"] == "lucene"
    assert vector["method"]["space_type"] == "cosinesimil" or vector.get("space_type") == "cosinesimil"
    assert got["mappings"]["properties"]["app"]["type"] == "keyword"
    assert index.health() == "ok"
    assert isinstance(index, VectorIndex)


def test_a_write_is_found_by_knn_right_after_it_is_acknowledged(index: OpenSearchVectorIndex) -> None:
    # Given one vector upserted (the call returns once the node acknowledged it)
    index.upsert([_record(ALICE.scope(None), "fresh", "the spare key is under the blue flowerpot")])
    # When searched for at once, Then it is found (the bulk waits for the refresh: read-your-writes)
    hits = index.search([ALICE.scope(None)], EMBEDDER.embed(["spare key blue flowerpot"])[0], 5, EMBEDDER.model_id)
    assert [h.entry_id for h in hits] == ["fresh"]
    assert 0.0 < hits[0].score <= 1.0


def test_knn_with_efficient_filtering_never_leaks_across_tenants_users_projects_or_models(
    index: OpenSearchVectorIndex,
) -> None:
    text = "meeting notes about the launch"
    # Given the same text stored by alice (global, project p1, project p2), bob, alice of another app,
    # and alice's vector of another model
    index.upsert(
        [
            _record(ALICE.scope(None), "alice-global", text),
            _record(ALICE.scope("p1"), "alice-p1", text),
            _record(ALICE.scope("p2"), "alice-p2", text),
            _record(Scope("app", "bob"), "bob", text),
            _record(Scope("other-app", "alice"), "other-app", text),
            _record(ALICE.scope(None), "old-model", text, model="another-model"),
        ]
    )
    # When alice searches her global scope with that very vector, Then only her global vector comes back
    assert _knn_ids(index, ALICE.scope(None), text) == ["alice-global"]
    # When she searches project p1, Then she sees p1 and the global scope, never p2
    assert sorted(_knn_ids(index, ALICE.scope("p1"), text)) == ["alice-global", "alice-p1"]
    # And bob and the other app's alice see only their own
    assert _knn_ids(index, Scope("app", "bob"), text) == ["bob"]
    assert _knn_ids(index, Scope("other-app", "alice", "p1"), text) == ["other-app"]
    # And the other model's vector is reported, not ranked
    assert index.other_models([ALICE.scope(None)], EMBEDDER.model_id) == ["another-model"]
    # And the score of an identical vector is a cosine of 1
    hits = index.search([ALICE.scope(None)], EMBEDDER.embed([text])[0], 1, EMBEDDER.model_id)
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)


def test_nearest_neighbours_come_in_order_of_similarity(index: OpenSearchVectorIndex) -> None:
    texts = {"tea": "green tea with lemon", "coffee": "black coffee no sugar", "bike": "blue bicycle repair"}
    index.upsert([_record(ALICE.scope(None), key, text) for key, text in texts.items()])
    assert _knn_ids(index, ALICE.scope(None), "green tea lemon", top_k=3)[0] == "tea"
    assert _knn_ids(index, ALICE.scope(None), "bicycle repair", top_k=1) == ["bike"]


def test_bulk_upsert_count_delete_by_id_and_by_user(index: OpenSearchVectorIndex) -> None:
    bob = UserRef("app", "bob")
    # Given vectors for alice (global and a project), bob, and alice of another app
    index.upsert(
        [
            _record(ALICE.scope(None), "a1"),
            _record(ALICE.scope("p#1"), "a2"),
            _record(bob.scope(None), "b1"),
            _record(Scope("other", "alice"), "o1"),
        ]
    )
    # When an entry is upserted again, Then it is replaced, not duplicated
    index.upsert([_record(ALICE.scope(None), "a1", "new text")])
    assert index.count_user(ALICE) == 2
    assert index.count_user(bob) == 1
    assert index.count_user(UserRef("other", "alice")) == 1
    # When one entry is deleted by id (and a missing one too), Then only it goes, and at once
    index.delete(ALICE.scope("p#1"), ["a2", "never-existed"])
    assert index.count_user(ALICE) == 1
    assert _knn_ids(index, ALICE.scope("p#1"), "some text") == ["a1"]
    # When alice is erased, Then bob and the other app's alice keep theirs
    assert index.delete_user(ALICE) == 1
    assert index.count_user(ALICE) == 0
    assert index.count_user(bob) == 1
    assert index.count_user(UserRef("other", "alice")) == 1


def test_delete_user_removes_more_than_one_page_of_vectors(index: OpenSearchVectorIndex) -> None:
    # Given more of alice's vectors than one listing page holds, in three projects with shared entry ids
    records = [_record(ALICE.scope(p), f"e{i:04d}", f"fact {i}") for p in ("p1", "p2", "p3") for i in range(500)]
    index.upsert([*records, _record(Scope("app", "bob"), "b1")])
    assert index.count_user(ALICE) == 1500
    # When she is erased, Then every one of them goes and bob keeps his
    assert index.delete_user(ALICE) == 1500
    assert index.count_user(ALICE) == 0
    assert index.count_user(UserRef("app", "bob")) == 1


def test_delete_scope_removes_one_project_only(index: OpenSearchVectorIndex) -> None:
    index.upsert([_record(ALICE.scope(None), "g"), _record(ALICE.scope("p1"), "p1"), _record(ALICE.scope("p2"), "p2")])
    assert index.delete_scope(ALICE.scope("p1")) == 1
    assert _stored_ids(index) == {"g", "p2"}
    assert index.delete_scope(ALICE.scope(None)) == 1
    assert _stored_ids(index) == {"p2"}


# -- through the service and the REST API -------------------------------------------------------------


def test_api_semantic_and_hybrid_search_come_from_the_node(api_on_opensearch: ApiClient) -> None:
    api = api_on_opensearch
    path = scope_path("app", "alice")
    assert api.get("/v1/capabilities").body["vector_backend"] == "opensearch"
    # Given memories written through the API (each write answers once the vector is searchable)
    stored = {}
    for text in ("We went hiking in the mountains", "The dentist moved to Tuesday", "Buy oat milk"):
        reply = api.post(f"{path}/memories", {"entry": text_entry(text)})
        assert reply.status == 201, reply.body
        assert reply.body.get("indexing") != "pending"
        stored[text] = reply.body["id"]
    # And the same words by bob and in alice's project
    assert api.post(f"{scope_path('app', 'bob')}/memories", {"entry": text_entry("hiking in the mountains")}).status
    in_project = api.post(f"{path}/memories", {"entry": text_entry("hiking in the mountains"), "project_id": "p1"})
    # When alice searches semantically right away, Then her hiking memory comes first, not degraded
    reply = api.post(f"{path}/memories/search", {"query": "hiking in the mountains", "mode": "semantic"})
    assert reply.status == 200, reply.body
    assert "degraded" not in reply.body
    ids = [e["id"] for e in reply.body["entries"]]
    assert ids[0] == stored["We went hiking in the mountains"]
    assert in_project.body["id"] not in ids  # another project
    # And hybrid search in the project sees both the project's and the global memory
    reply = api.post(f"{path}/memories/search", {"query": "hiking mountains", "mode": "hybrid", "project_id": "p1"})
    assert {e["id"] for e in reply.body["entries"][:2]} == {
        stored["We went hiking in the mountains"],
        in_project.body["id"],
    }
    # And health checks the index
    assert api.get("/v1/health").body["checks"]["vectors"] == "ok"


def test_api_delete_of_an_entry_removes_its_vector(api_on_opensearch: ApiClient, index: OpenSearchVectorIndex) -> None:
    api = api_on_opensearch
    path = scope_path("app", "alice")
    created = api.post(f"{path}/memories", {"entry": text_entry("the locker code is 4711")})
    assert index.count_user(ALICE) == 1
    assert api.delete(f"{path}/memories/{created.body['id']}").status == 204
    assert index.count_user(ALICE) == 0
    reply = api.post(f"{path}/memories/search", {"query": "locker code", "mode": "semantic"})
    assert reply.body["entries"] == []


# -- the request shapes AWS needs (no engine runs faiss here) --------------------------------------------


def test_knn_query_body_has_the_documented_efficient_filtering_shape() -> None:
    # OpenSearch documents efficient k-NN filtering (lucene and faiss engines) as
    # {"size": k, "query": {"knn": {"<field>": {"vector": [...], "k": k, "filter": {<query>}}}}}
    scopes = Scope("app", "alice", "trip").visible_scopes()
    body = knn_query_body(scopes, [0.5, 0.25], 7, "m1")
    assert body["size"] == 7
    knn = body["query"]["knn"]["vector"]
    assert knn["vector"] == [0.5, 0.25]
    assert knn["k"] == KNN_CANDIDATES  # the graph search gathers more candidates than it returns (recall)
    assert knn_query_body(scopes, [0.5, 0.25], 500, "m1")["query"]["knn"]["vector"]["k"] == 500
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


@pytest.mark.parametrize("engine", ["lucene", "faiss"])
def test_index_body_always_names_the_engine(engine: str) -> None:
    vector = index_body(384, engine=engine)["mappings"]["properties"]["vector"]
    assert vector["method"]["engine"] == engine
    assert vector["method"]["name"] == "hnsw"
    with pytest.raises(ValueError, match="engine"):
        index_body(384, engine="nmslib")


def test_serverless_refuses_the_lucene_engine() -> None:
    with pytest.raises(ValueError, match="lucene"):
        OpenSearchVectorIndex("https://x.us-east-1.aoss.amazonaws.com", service="aoss", engine="lucene")
    with pytest.raises(ValueError, match="lucene"):
        Settings.from_env(
            {
                "MEMORY_OPENSEARCH_ENDPOINT": "https://x.us-east-1.aoss.amazonaws.com",
                "MEMORY_OPENSEARCH_SERVICE": "aoss",
                "MEMORY_OPENSEARCH_ENGINE": "lucene",
            }
        )


@pytest.mark.parametrize(
    ("env", "engine"),
    [
        ({"MEMORY_OPENSEARCH_ENDPOINT": "http://127.0.0.1:9200"}, "lucene"),
        ({"MEMORY_OPENSEARCH_ENDPOINT": "https://search-x.us-east-1.es.amazonaws.com"}, "faiss"),
        ({"MEMORY_OPENSEARCH_ENDPOINT": "https://x.aoss.amazonaws.com", "MEMORY_OPENSEARCH_SERVICE": "aoss"}, "faiss"),
        ({"MEMORY_OPENSEARCH_ENDPOINT": "https://x", "MEMORY_OPENSEARCH_ENGINE": "lucene"}, "lucene"),
    ],
)
def test_engine_setting_defaults_to_faiss_on_aws_and_lucene_locally(env: dict[str, str], engine: str) -> None:
    settings = Settings.from_env(env)
    assert settings.opensearch_engine == engine
    built = Container(settings).vector_index
    assert isinstance(built, OpenSearchVectorIndex)
    assert built.engine == engine


def test_engine_setting_is_validated() -> None:
    with pytest.raises(ValueError, match="MEMORY_OPENSEARCH_ENGINE"):
        Settings.from_env({"MEMORY_OPENSEARCH_ENDPOINT": "http://127.0.0.1:9200", "MEMORY_OPENSEARCH_ENGINE": "nmslib"})


def test_search_maps_hits_back_to_scopes_and_drops_foreign_hits() -> None:
    """Defence in depth on the response side (the engine's filter already excludes foreign vectors)."""

    class RecordedClient:
        def search(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
            def hit(user: str, project: str, entry_id: str, score: float) -> dict[str, Any]:
                source = {"app": "app", "user": user, "project": project, "entry_id": entry_id}
                return {"_id": entry_id, "_score": score, "_source": source}

            return {
                "hits": {"hits": [hit("alice", "", "g", 0.95), hit("alice", "p", "p", 0.8), hit("eve", "", "x", 0.99)]}
            }

    index = OpenSearchVectorIndex("http://127.0.0.1:1", client=RecordedClient())
    hits = index.search(Scope("app", "alice", "p").visible_scopes(), [1.0, 0.0], 5, "m")
    assert [(h.scope.project_id, h.entry_id) for h in hits] == [(None, "g"), ("p", "p")]
    assert hits[0].score == pytest.approx(cosine_from_score(0.95))


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_https_endpoints_are_signed_with_sigv4_for_the_right_service(service: str) -> None:
    from opensearchpy import AWSV4SignerAuth

    # Given an AWS endpoint (no request is sent: the client is only built)
    index = OpenSearchVectorIndex("https://search-memory.us-east-1.es.amazonaws.com", service=service, engine="faiss")
    auth = index.client.transport.kwargs["http_auth"]
    # Then requests are signed with SigV4 for that service and region
    assert isinstance(auth, AWSV4SignerAuth)
    assert auth.service == service
    assert auth.signer.region == "us-east-1"


def test_index_creation_is_never_done_by_construction() -> None:
    class NoCalls:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"unexpected call {name}")

    OpenSearchVectorIndex("http://127.0.0.1:1", client=NoCalls())


# -- erasure: the workflow's vector branch empties the node's index ------------------------------------


def test_erasure_through_the_state_machine_empties_the_users_vectors_on_the_node(
    opensearch_node: OpenSearchNode,
) -> None:
    from tests.erasure_support import execution, moto_deployment, seed_user, wait_for_status

    with moto_deployment("agent-memory-erasure-os", **on_node(opensearch_node.url, EMBEDDER.dimension)) as (
        settings,
        table,
        _router,
    ):
        arn = str(settings.deletion_state_machine_arn)
        container = Container(settings, table=table)
        index = container.external_vector_index
        assert isinstance(index, OpenSearchVectorIndex)
        index.create_index(EMBEDDER.dimension)
        set_container(container)
        try:
            api = ApiClient()
            # Given a user, a neighbour and a namesake in another app, each with 12 entries (and vectors
            # written by the service into the node) in the global scope and three projects
            target = seed_user(api, table, UserRef("shop", "ana"))
            neighbour = seed_user(api, table, UserRef("shop", "bob"))
            namesake = seed_user(api, table, UserRef("clinic", "ana"))
            assert [index.count_user(s.user) for s in (target, neighbour, namesake)] == [12, 12, 12]
            # When the user is deleted through the API and the deployed ASL runs
            started = api.delete(target.path)
            assert started.status == 202, started.body
            assert execution(arn, started.body["deletion_id"])["status"] == "SUCCEEDED"
            # Then the vector branch removed her 12 vectors and verified none is left
            status = wait_for_status(api, target.path, started.body["deletion_id"])
            assert status["status"] == "SUCCEEDED", status
            assert status["deleted"]["vectors"] == 12
            assert index.count_user(target.user) == 0
            # while the others keep theirs, and still find them by semantic search
            assert index.count_user(neighbour.user) == 12
            assert index.count_user(namesake.user) == 12
            found = api.post(f"{neighbour.path}/memories/search", {"query": "bob fact 1", "mode": "semantic"})
            assert found.status == 200
            assert found.body["entries"]
            assert "degraded" not in found.body
        finally:
            set_container(None)
            index.client.indices.delete(index=index.index)


def test_a_collection_that_shows_writes_late_still_answers_what_was_just_written_or_deleted(
    table: Table, index: OpenSearchVectorIndex
) -> None:
    # Given the node's index refreshing only when told (as Serverless shows writes ~60 s later) and an API
    # whose adapter does not wait for refreshes, with the table where writes are logged
    index.client.indices.put_settings(index=index.index, body={"index": {"refresh_interval": "-1"}})
    late = OpenSearchVectorIndex(index.endpoint, index=index.index, engine="lucene", refresh=False, table=table)
    assert late.visibility_seconds > 0
    settings = Settings(**on_node(index.endpoint, EMBEDDER.dimension, index.index))
    set_container(Container(settings, table=table, vector_index=late))
    api = ApiClient()
    path = scope_path("app", "alice")
    try:
        old = api.post(f"{path}/memories", {"entry": text_entry("the garage code is 4711")}).body
        index.client.indices.refresh(index=index.index)
        # When an entry is written, and another deleted, with no refresh since
        new = api.post(f"{path}/memories", {"entry": text_entry("the boat key hangs by the garage door")}).body
        assert api.delete(f"{path}/memories/{old['id']}").status == 204
        assert _stored_ids(late) == {old["id"]}  # what the collection itself shows
        # Then every mode finds the new one and none shows the deleted one
        for mode in ("keyword", "semantic", "hybrid"):
            found = api.post(f"{path}/memories/search", {"query": "garage", "mode": mode}).body["entries"]
            assert [e["id"] for e in found][:1] == [new["id"]], mode
            assert old["id"] not in [e["id"] for e in found], mode
        # And a delete by query reaches the new one
        assert api.post(f"{path}/memories/delete", {"query": "boat key"}).body == {"deleted": 1}
    finally:
        set_container(None)
