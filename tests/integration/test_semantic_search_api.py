"""Semantic and hybrid search through the real handler, with the hashing embedder and the exact index."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Sequence

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.errors import Unavailable
from agentmem.keys import UserRef
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.vectors.exact import ExactVectorIndex
from agentmem.vectors.indexing import reindex
from tests.support import ApiClient, scope_path, text_entry

ALICE = scope_path("app", "alice")


class SwitchableEmbedder(HashingEmbedder):
    """The hashing embedder with an off switch: a stand-in for Bedrock being unreachable."""

    down = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.down:
            raise Unavailable("embedder unreachable", code="embedder_unavailable")
        return super().embed(texts)


@pytest.fixture
def embedder() -> SwitchableEmbedder:
    return SwitchableEmbedder(256)


@pytest.fixture
def semantic(table: Table, embedder: SwitchableEmbedder) -> Iterator[Container]:
    built = Container(Settings(embedder="hashing"), table=table, embedder=embedder)
    set_container(built)
    yield built
    set_container(None)


@pytest.fixture
def client(semantic: Container) -> ApiClient:
    return ApiClient()


def _store(client: ApiClient, text: str, path: str = ALICE, **extra: object) -> dict[str, object]:
    reply = client.post(f"{path}/memories", {"entry": text_entry(text), **extra})
    assert reply.status == 201, reply.body
    return reply.body  # type: ignore[no-any-return]


def test_capabilities_and_health_report_the_vector_backend(client: ApiClient) -> None:
    reply = client.get("/v1/capabilities")
    assert reply.body["search_modes"] == ["keyword", "semantic", "hybrid"]
    assert reply.body["default_search_mode"] == "hybrid"
    assert reply.body["vector_backend"] == "exact"
    assert reply.body["embedder"] == "hashing-v1-256"
    health = client.get("/v1/health")
    assert health.status == 200
    assert health.body["checks"] == {"table": "ok", "embedder": "ok", "vectors": "ok"}


def test_hybrid_is_the_default_and_finds_by_word_pieces(client: ApiClient) -> None:
    # Given memories whose words only partly match the query
    hiking = _store(client, "We went hiking in the mountains last summer")
    _store(client, "The dentist appointment moved to Tuesday")
    # When searching without a mode, for a word piece keyword matching cannot find
    reply = client.post(f"{ALICE}/memories/search", {"query": "mountain hikes"})
    # Then hybrid ranks the hiking memory first, with a score in [0, 1]
    assert reply.status == 200
    assert reply.body["mode"] == "hybrid"
    assert reply.body["entries"][0]["id"] == hiking["id"]
    assert all(0.0 <= e["score"] <= 1.0 for e in reply.body["entries"])
    assert "degraded" not in reply.body


def test_semantic_mode_and_min_score_on_the_calibrated_score(client: ApiClient) -> None:
    exact = _store(client, "blue bicycle")
    _store(client, "quarterly tax return")
    semantic = client.post(f"{ALICE}/memories/search", {"query": "blue bicycle", "mode": "semantic"})
    assert semantic.body["mode"] == "semantic"
    assert semantic.body["entries"][0]["id"] == exact["id"]
    assert semantic.body["entries"][0]["score"] == pytest.approx(1.0, abs=1e-4)
    # An exact match in both signals scores about 1.0; a min_score of 0.99 keeps only that one
    fused = client.post(f"{ALICE}/memories/search", {"query": "blue bicycle", "mode": "hybrid", "min_score": 0.99})
    assert [e["id"] for e in fused.body["entries"]] == [exact["id"]]
    assert fused.body["entries"][0]["score"] == pytest.approx(1.0)


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_the_relevance_threshold_keeps_the_answer_and_drops_unrelated_entries(client: ApiClient, mode: str) -> None:
    # Given memories, and the threshold the capabilities report
    threshold = client.get("/v1/capabilities").body["relevance_threshold"]
    assert 0 < threshold < 1
    answer = _store(client, "blue bicycle with a basket")
    _store(client, "quarterly tax return")
    _store(client, "the dentist moved to Tuesday")

    def search(query: str) -> list[dict[str, object]]:
        body = {"query": query, "mode": mode, "min_score": threshold}
        return client.post(f"{ALICE}/memories/search", body).body["entries"]  # type: ignore[no-any-return]

    # When searching with min_score at the threshold
    # Then the entry that answers is kept, and a question about something never stored gets nothing
    assert [e["id"] for e in search("blue bicycle")] == [answer["id"]]
    assert search("weather forecast for the sailing regatta") == []
    # And without min_score every entry comes back, best first, the unrelated ones below the threshold
    everything = client.post(f"{ALICE}/memories/search", {"query": "blue bicycle", "mode": mode}).body["entries"]
    scores = [e["score"] for e in everything]
    assert scores == sorted(scores, reverse=True)
    assert all(score < threshold for score in scores[1:])


def test_hybrid_keeps_project_scoping_and_user_isolation(client: ApiClient) -> None:
    _store(client, "green tea", scope_path("app", "bob"))
    _store(client, "green tea", scope_path("other", "alice"))
    mine = _store(client, "green tea")
    in_project = _store(client, "green tea", project_id="p1")
    _store(client, "green tea", project_id="p2")
    found = client.post(f"{ALICE}/memories/search", {"query": "green tea", "project_id": "p1"})
    assert {e["id"] for e in found.body["entries"]} == {mine["id"], in_project["id"]}
    found = client.post(f"{ALICE}/memories/search", {"query": "green tea"})
    assert [e["id"] for e in found.body["entries"]] == [mine["id"]]


def test_embedder_down_write_is_stored_pending_then_reindexed(
    client: ApiClient, semantic: Container, embedder: SwitchableEmbedder
) -> None:
    # Given the embedder is down
    embedder.down = True
    # When an entry and a session are written
    entry = _store(client, "my passport number is in the blue folder")
    session = client.put(f"{ALICE}/sessions/s1/memories", {"entries": [text_entry("the cat is called Miso")]})
    # Then both are stored and the answers say indexing is pending
    assert entry["indexing"] == "pending"
    assert session.status == 200
    assert session.body["indexing"] == "pending"
    # And a search still answers from keywords, flagged degraded, never a 5xx
    reply = client.post(f"{ALICE}/memories/search", {"query": "passport folder"})
    assert reply.status == 200
    assert reply.body["degraded"] is True
    assert reply.body["mode"] == "keyword"
    assert reply.body["warnings"]
    assert [e["id"] for e in reply.body["entries"]] == [entry["id"]]
    # When the embedder is back and the user is reindexed, the pending entries get their vectors
    embedder.down = False
    report = reindex(semantic.table, semantic.vector_index, embedder, user=UserRef("app", "alice"))  # type: ignore[arg-type]
    assert report.embedded == 2
    semantic_only = client.post(f"{ALICE}/memories/search", {"query": "passport folder", "mode": "semantic"})
    assert semantic_only.body["entries"][0]["id"] == entry["id"]
    assert "degraded" not in semantic_only.body


def test_deleted_entries_leave_semantic_results(client: ApiClient) -> None:
    entry = _store(client, "orange juice")
    assert client.delete(f"{ALICE}/memories/{entry['id']}").status == 204
    reply = client.post(f"{ALICE}/memories/search", {"query": "orange juice", "mode": "semantic"})
    assert reply.body["entries"] == []


def test_model_change_is_detected_and_reported(client: ApiClient, semantic: Container) -> None:
    # Given an entry embedded by the configured model, then the deployment switches to another model
    _store(client, "violin lessons on Monday")
    semantic.memory.embedder = HashingEmbedder(128)
    semantic.memory.vector_index = ExactVectorIndex(semantic.table)
    # When searching semantically
    reply = client.post(f"{ALICE}/memories/search", {"query": "violin lessons", "mode": "semantic"})
    # Then the old vectors are not mixed in, and the answer says so
    assert reply.status == 200
    assert reply.body["entries"] == []
    assert reply.body["degraded"] is True
    assert "hashing-v1-256" in reply.body["warnings"][0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_opensearch_unreachable_write_pending_and_search_falls_back(table: Table) -> None:
    # Given a deployment whose OpenSearch endpoint refuses connections
    settings = Settings(
        embedder="hashing", vector_index="opensearch", opensearch_endpoint=f"http://127.0.0.1:{_closed_port()}"
    )
    container = Container(settings, table=table)
    container.vector_index._timeout = 1.0  # type: ignore[union-attr]
    set_container(container)
    try:
        client = ApiClient()
        # When an entry is written and searched
        entry = _store(client, "the wifi password is on the fridge")
        reply = client.post(f"{ALICE}/memories/search", {"query": "wifi password"})
        health = client.get("/v1/health")
    finally:
        set_container(None)
    # Then the entry is stored (pending), keyword matching answers the search, and health says degraded
    assert entry["indexing"] == "pending"
    assert reply.status == 200
    assert reply.body["degraded"] is True
    assert [e["id"] for e in reply.body["entries"]] == [entry["id"]]
    assert health.status == 200
    assert health.body["status"] == "degraded"
    assert health.body["checks"]["vectors"] == "failing"
