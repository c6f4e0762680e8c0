"""MEMORY_EMBEDDER=openai through the real handler on both tables, embedding at a scripted OpenAI-compatible
endpoint served over HTTP (tests/scripted_embeddings.py): writes and searches, a model switched on a store
that holds another model's vectors, and the endpoint failing or misconfigured (never a 5xx)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.codec import MODEL_ATTR, PENDING_ATTR, VECTOR_ATTR
from agentmem.keys import UserRef
from agentmem.memory import records
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.vectors.indexing import reindex
from tests.scripted_embeddings import ScriptedEmbeddingsServer
from tests.scripted_model import ScriptedFailure
from tests.support import ApiClient, scope_path, text_entry

ALICE = scope_path("app", "alice")
KEY = "sk-scripted"


@pytest.fixture
def server() -> Iterator[ScriptedEmbeddingsServer]:
    with ScriptedEmbeddingsServer(model="embed-a", dimension=64, takes_dimensions=True) as served:
        yield served


def _deploy(table: Table, server: ScriptedEmbeddingsServer, **settings: Any) -> Container:
    """The API over ``table`` embedding at ``server`` (as MEMORY_EMBEDDER=openai with its URL, model and key)."""
    options: dict[str, Any] = {
        "embedder": "openai",
        "embedder_url": server.url,
        "embedder_model": server.model,
        "embedder_api_key": KEY,
        "embedder_batch_size": 8,
    }
    container = Container(Settings(**{**options, **settings}), table=table)
    set_container(container)
    return container


@pytest.fixture
def deployed(table: Table, server: ScriptedEmbeddingsServer) -> Iterator[Container]:
    yield _deploy(table, server)
    set_container(None)


FACTS = [
    "my passport is in the blue folder",
    "the cat is called Miso",
    "violin lessons are on Monday evenings",
    "the wifi password is on the fridge",
    "we go hiking in the Alps every August",
    "my dentist is Dr Rossi",
    "the car needs new tyres before winter",
    "I am allergic to peanuts",
    "the rent is due on the first of the month",
    "our anniversary is in June",
]


def _search(client: ApiClient, query: str, mode: str = "semantic") -> dict[str, Any]:
    reply = client.post(f"{ALICE}/memories/search", {"query": query, "mode": mode})
    assert reply.status == 200, reply.body
    return reply.body  # type: ignore[no-any-return]


def _texts(body: dict[str, Any]) -> list[str]:
    return [e["content"]["parts"][0]["text"] for e in body["entries"]]


def test_a_session_is_embedded_in_batches_at_the_endpoint_and_found_by_meaning(
    deployed: Container, server: ScriptedEmbeddingsServer
) -> None:
    client = ApiClient()
    # When a session of 10 entries is written (8 texts a request)
    reply = client.put(f"{ALICE}/sessions/s1/memories", {"entries": [text_entry(t) for t in FACTS]})
    # Then the endpoint got them in two requests with the key, and nothing is pending
    assert reply.status == 200, reply.body
    assert reply.body.get("indexing") != "pending"
    written = [request for request in server.inputs if any(text in FACTS for text in request)]
    assert [len(request) for request in written] == [8, 2]
    assert {h["authorization"] for h in server.headers} == {f"Bearer {KEY}"}
    # And a semantic and a hybrid search find the entry by its words' vectors, not degraded
    for mode in ("semantic", "hybrid"):
        body = _search(client, "where is my passport folder", mode)
        assert _texts(body)[0] == FACTS[0]
        assert "degraded" not in body
    assert client.get("/v1/capabilities").body["embedder"] == "openai:embed-a"
    assert client.get("/v1/health").body["checks"]["embedder"] == "ok"


@pytest.mark.parametrize("switch", ["model", "dimensions"])
def test_a_store_embedded_by_another_model_is_never_compared_until_re_embedded(
    table: Table, server: ScriptedEmbeddingsServer, switch: str
) -> None:
    # Given entries embedded by openai:embed-a (64 dimensions)
    first = _deploy(table, server)
    client = ApiClient()
    assert client.put(f"{ALICE}/sessions/s1/memories", {"entries": [text_entry(t) for t in FACTS]}).status == 200
    # When the operator switches the model (another name, or the same model asked for 32 dimensions)
    if switch == "model":
        server.model = "embed-b"
        second = _deploy(table, server)
    else:
        second = _deploy(table, server, embedder_dimensions=32)
    assert second.embedder is not None
    assert second.embedder.model_id != first.embedder.model_id
    # Then a semantic search compares no vector of the old model: no hit, and the answer names the old model
    body = _search(client, "where is my passport folder")
    assert body["entries"] == []
    assert body["degraded"] is True
    assert "openai:embed-a" in body["warnings"][0]
    assert "agentmem reindex --re-embed" in body["warnings"][0]
    # And a hybrid search finds it by its words only, saying the same
    hybrid = _search(client, "passport folder", "hybrid")
    assert _texts(hybrid)[0] == FACTS[0]
    assert hybrid["degraded"] is True
    # When the store is re-embedded with the new model
    report = reindex(second.table, second.vector_index, second.embedder, user=UserRef("app", "alice"), re_embed=True)  # type: ignore[arg-type]
    # Then every entry was embedded again and semantic search finds it with no warning
    assert report.embedded == len(FACTS)
    body = _search(client, "where is my passport folder")
    assert _texts(body)[0] == FACTS[0]
    assert "degraded" not in body
    set_container(None)


def test_a_refused_key_stores_the_write_pending_and_searches_say_what_to_fix(
    table: Table, server: ScriptedEmbeddingsServer
) -> None:
    _deploy(table, server)
    client = ApiClient()
    server.answer = lambda request: ScriptedFailure(401, '{"error": {"message": "Incorrect API key provided"}}')
    # When an entry is written while the endpoint refuses the key
    reply = client.post(f"{ALICE}/memories", {"entry": text_entry("the spare key is under the mat")})
    # Then it is stored, pending its vector
    assert reply.status == 201
    assert reply.body["indexing"] == "pending"
    # And a search answers with keyword results and names the setting to fix, never a 5xx
    body = _search(client, "spare key", "hybrid")
    assert body["mode"] == "keyword"
    assert body["degraded"] is True
    assert _texts(body) == ["the spare key is under the mat"]
    assert "MEMORY_EMBEDDER_API_KEY" in body["warnings"][0]
    assert client.get("/v1/health").body["checks"]["embedder"] == "failing"
    set_container(None)


def test_vectors_of_another_size_than_configured_are_refused_not_stored(
    table: Table, server: ScriptedEmbeddingsServer
) -> None:
    # Given a model of one size (it ignores `dimensions`) configured with MEMORY_EMBEDDER_DIMENSIONS=32
    server.takes_dimensions = False
    container = _deploy(table, server, embedder_dimensions=32)
    client = ApiClient()
    # When an entry is written and searched
    reply = client.post(f"{ALICE}/memories", {"entry": text_entry("the boiler was serviced in March")})
    body = _search(client, "boiler serviced", "semantic")
    # Then no 64-dimension vector was stored under the 32-dimension model, and the search says why
    assert reply.status == 201
    assert reply.body["indexing"] == "pending"
    item = container.table.get(UserRef("app", "alice").scope().partition, records.entry_sk(reply.body["id"]))
    assert item is not None
    assert item.get(PENDING_ATTR) is True
    assert VECTOR_ATTR not in item
    assert MODEL_ATTR not in item
    assert body["mode"] == "keyword"
    assert "64-dimension vectors, not the 32" in body["warnings"][0]
    set_container(None)


def test_a_query_the_endpoint_refuses_is_a_422_in_the_error_envelope(
    table: Table, server: ScriptedEmbeddingsServer
) -> None:
    _deploy(table, server)
    client = ApiClient()
    server.answer = lambda request: ScriptedFailure(400, '{"error": {"message": "input is too long for this model"}}')
    reply = client.post(f"{ALICE}/memories/search", {"query": "a long question", "mode": "semantic"})
    assert reply.status == 422
    assert reply.body["error"]["code"] == "embedding_refused"
    assert "too long" in reply.body["error"]["message"]
    assert reply.body["error"]["request_id"]
    set_container(None)


def test_an_endpoint_down_degrades_to_keyword_results(table: Table, server: ScriptedEmbeddingsServer) -> None:
    _deploy(table, server)
    client = ApiClient()
    assert client.post(f"{ALICE}/memories", {"entry": text_entry("the plumber comes on Friday")}).status == 201
    server.answer = lambda request: ScriptedFailure(500, "upstream exploded")
    body = _search(client, "plumber Friday", "hybrid")
    assert body["mode"] == "keyword"
    assert body["degraded"] is True
    assert body["warnings"] == ["hybrid search is unavailable right now; these are keyword results"]
    assert _texts(body) == ["the plumber comes on Friday"]
    set_container(None)


# -- on a real OpenSearch node (the index of tests/integration/conftest.py: 64 dimensions, lucene) -----------


def _on_opensearch(table: Table, server: ScriptedEmbeddingsServer, index: Any, **settings: Any) -> Container:
    placed = {"vector_index": "opensearch", "opensearch_endpoint": index.endpoint, "opensearch_index": index.index}
    return _deploy(table, server, opensearch_engine="lucene", **placed, **settings)


def test_on_opensearch_a_switched_model_is_filtered_out_of_the_knn_query_until_re_embedded(
    table: Table, server: ScriptedEmbeddingsServer, index: Any
) -> None:
    # Given entries embedded by openai:embed-a into the node's index, found by meaning
    _on_opensearch(table, server, index)
    client = ApiClient()
    assert client.put(f"{ALICE}/sessions/s1/memories", {"entries": [text_entry(t) for t in FACTS]}).status == 200
    assert _texts(_search(client, "where is my passport folder"))[0] == FACTS[0]
    # When the operator switches to another model of the same size
    server.model = "embed-b"
    second = _on_opensearch(table, server, index)
    # Then the k-NN query compares none of the old vectors and the answer names the old model
    body = _search(client, "where is my passport folder")
    assert body["entries"] == []
    assert "openai:embed-a" in body["warnings"][0]
    # And after `agentmem reindex --re-embed` the new model's vectors answer
    report = reindex(second.table, second.vector_index, second.embedder, user=UserRef("app", "alice"), re_embed=True)  # type: ignore[arg-type]
    assert report.embedded == len(FACTS)
    body = _search(client, "where is my passport folder")
    assert _texts(body)[0] == FACTS[0]
    assert "degraded" not in body
    set_container(None)


def test_on_opensearch_a_model_of_another_size_than_the_index_is_refused_clearly(
    table: Table,
    server: ScriptedEmbeddingsServer,
    index: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agentmem import cli

    # Given the 64-dimension index and the embedder asked for 32 dimensions
    container = _on_opensearch(table, server, index, embedder_dimensions=32)
    # When `agentmem create-index` runs with the embedder's size
    with monkeypatch.context() as patched:
        patched.setattr("agentmem.container.get_container", lambda: container)
        patched.setattr("agentmem.container.set_container", lambda _: None)
        refused = cli.main(["create-index"])
    # Then it is refused, saying the sizes and how to move; the index is unchanged
    said = capsys.readouterr().err
    assert refused == 2
    assert f"the index {index.index} holds 64-dimension vectors, not 32" in said
    assert "agentmem reindex --re-embed" in said
    assert container.vector_index.dimension() == 64  # type: ignore[union-attr]
    # And a write is stored in the table (the index refused its document: pending) and a search answers 200,
    # degraded to keyword results (the index holds none of it until `agentmem reindex`), never a 5xx
    client = ApiClient()
    reply = client.post(f"{ALICE}/memories", {"entry": text_entry("the spare tyre is in the boot")})
    assert reply.status == 201
    assert reply.body["indexing"] == "pending"
    assert client.get(f"{ALICE}/memories/{reply.body['id']}").status == 200
    body = _search(client, "spare tyre", "hybrid")
    assert body["mode"] == "keyword"
    assert body["degraded"] is True
    set_container(None)
