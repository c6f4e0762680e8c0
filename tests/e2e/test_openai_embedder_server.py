"""`agentmem serve` configured by MEMORY_EMBEDDER=openai and its variables, on SQLite and on DynamoDB (a moto
server), embedding at a scripted OpenAI-compatible endpoint over HTTP (issue 43, point 3): what a client writes
is embedded there in batches with the key, and found by meaning over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import LiveServer, MotoEndpoint, start_server
from tests.scripted_embeddings import ScriptedEmbeddingsServer

FACTS = [
    "the boiler is serviced every May",
    "my sister lives in Lisbon",
    "the bike lock code is written in the red notebook",
    "we adopted a dog called Pepper",
    "the dentist appointment moved to Thursday",
]


@pytest.fixture
def endpoint() -> Iterator[ScriptedEmbeddingsServer]:
    with ScriptedEmbeddingsServer(model="nomic-embed-text", dimension=96) as served:
        yield served


@pytest.fixture(params=["sqlite", "dynamodb"])
def server(request: pytest.FixtureRequest, tmp_path: Path, endpoint: ScriptedEmbeddingsServer) -> Iterator[LiveServer]:
    env = {
        "MEMORY_EMBEDDER": "openai",
        "MEMORY_EMBEDDER_URL": endpoint.url,
        "MEMORY_EMBEDDER_MODEL": endpoint.model,
        "MEMORY_EMBEDDER_API_KEY": "sk-served",
        "MEMORY_EMBEDDER_BATCH_SIZE": "2",
    }
    if request.param == "dynamodb":
        moto: MotoEndpoint = request.getfixturevalue("moto_endpoint")
        env["MEMORY_DYNAMODB_ENDPOINT_URL"] = moto.url
    started = start_server(tmp_path / "memory.db", env)
    yield started
    started.stop()


def test_the_server_embeds_at_the_configured_endpoint_and_finds_by_meaning(
    server: LiveServer, endpoint: ScriptedEmbeddingsServer
) -> None:
    scope = "/v1/apps/a/users/u"
    entries = [{"content": {"parts": [{"text": text}]}} for text in FACTS]
    with server.client() as http:
        # When a client writes a session of 5 entries over HTTP
        written = http.put(f"{scope}/sessions/s1/memories", json={"entries": entries})
        assert written.status_code == 200, written.text
        assert written.json().get("indexing") != "pending"
        # Then they reached the endpoint 2 texts a request, with the key
        sent = [request for request in endpoint.inputs if set(request) <= set(FACTS)]
        assert [len(request) for request in sent] == [2, 2, 1]
        assert {h.get("authorization") for h in endpoint.headers} == {"Bearer sk-served"}
        # And a semantic search over HTTP finds the entry by its words' vectors, not degraded
        found = http.post(f"{scope}/memories/search", json={"query": "bike lock code notebook", "mode": "semantic"})
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["entries"][0]["content"]["parts"][0]["text"] == FACTS[2]
        assert "degraded" not in body
        assert http.get("/v1/capabilities").json()["embedder"] == "openai:nomic-embed-text"
