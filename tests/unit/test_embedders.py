"""The embedder adapters: hashing (tests), Bedrock Titan v2 (botocore Stubber), the local offline model."""

from __future__ import annotations

import io
import json
import math

import pytest

from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.embeddings.port import Embedder, embed_query
from agentmem.errors import Unavailable


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(v * v for v in vector))


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_hashing_embedder_is_deterministic_and_unit_length() -> None:
    # Given two embedders built separately (as in two processes)
    first, second = HashingEmbedder(64), HashingEmbedder(64)
    # When they embed the same texts
    texts = ["I love hiking in the Alps", "", "東京の天気"]
    a, b = first.embed(texts), second.embed(texts)
    # Then the vectors are equal, of the declared size and unit length, and the port is satisfied
    assert a == b
    assert all(len(v) == 64 for v in a)
    assert all(abs(_norm(v) - 1.0) < 1e-9 for v in a)
    assert isinstance(first, Embedder)
    assert first.model_id == "hashing-v1-64"


def test_hashing_embedder_places_shared_words_closer() -> None:
    embedder = HashingEmbedder()
    query = embed_query(embedder, "hiking trip")
    near, far = embedder.embed(["we went hiking on a long trip", "the invoice is overdue"])
    assert _cosine(query, near) > _cosine(query, far)


# -- Bedrock Titan v2 through botocore's Stubber ---------------------------------------------------


def _titan_response(vector: list[float]) -> dict[str, object]:
    """The real InvokeModel response shape of amazon.titan-embed-text-v2:0."""
    body = json.dumps({"embedding": vector, "embeddingsByType": {"float": vector}, "inputTextTokenCount": 7})
    return {"body": io.BytesIO(body.encode()), "contentType": "application/json"}


@pytest.fixture
def bedrock_client():  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client("bedrock-runtime", region_name="us-east-1")


def _expected(text: str, dimension: int) -> dict[str, object]:
    return {
        "modelId": "amazon.titan-embed-text-v2:0",
        "body": json.dumps({"inputText": text, "dimensions": dimension, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


def test_bedrock_embedder_sends_one_titan_request_per_text(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    from agentmem.embeddings.bedrock import BedrockEmbedder

    # Given Bedrock answering two Titan v2 requests of 256 dimensions
    vectors = [[1.0] + [0.0] * 255, [0.0, 1.0] + [0.0] * 254]
    with Stubber(bedrock_client) as stub:
        stub.add_response("invoke_model", _titan_response(vectors[0]), _expected("first", 256))
        stub.add_response("invoke_model", _titan_response(vectors[1]), _expected("second", 256))
        embedder = BedrockEmbedder(dimension=256, client=bedrock_client, concurrency=1)
        # When two texts are embedded
        result = embedder.embed(["first", "second"])
        # Then each got its vector, in order, and every stubbed call was made with the expected body
        stub.assert_no_pending_responses()
    assert result == vectors
    assert embedder.model_id == "bedrock:amazon.titan-embed-text-v2:0:256"
    assert embedder.health() == "ok"


def test_bedrock_embedder_sends_a_batch_as_concurrent_calls(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    from agentmem.embeddings.bedrock import BedrockEmbedder

    # Given Bedrock answering six identical requests
    vector = [0.0] * 255 + [1.0]
    with Stubber(bedrock_client) as stub:
        for _ in range(6):
            stub.add_response("invoke_model", _titan_response(vector), _expected("same text", 256))
        embedder = BedrockEmbedder(dimension=256, client=bedrock_client, concurrency=3)
        # When a batch of six is embedded concurrently
        result = embedder.embed(["same text"] * 6)
        # Then every text got its vector and every call was made
        stub.assert_no_pending_responses()
    assert result == [vector] * 6


def test_bedrock_embedder_retries_throttling_then_succeeds(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    from agentmem.embeddings.bedrock import BedrockEmbedder

    sleeps: list[float] = []
    with Stubber(bedrock_client) as stub:
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
        stub.add_response("invoke_model", _titan_response([0.0] * 511 + [1.0]), _expected("hello", 512))
        embedder = BedrockEmbedder(dimension=512, client=bedrock_client, sleep=sleeps.append)
        [vector] = embedder.embed(["hello"])
    assert vector[-1] == 1.0
    assert sleeps == [0.1, 0.2]  # exponential backoff between attempts


def test_bedrock_embedder_gives_up_with_unavailable(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    from agentmem.embeddings.bedrock import BedrockEmbedder

    with Stubber(bedrock_client) as stub:
        stub.add_client_error("invoke_model", service_error_code="AccessDeniedException", http_status_code=403)
        embedder = BedrockEmbedder(dimension=256, client=bedrock_client, sleep=lambda _: None)
        with pytest.raises(Unavailable) as caught:
            embedder.embed(["hello"])
    assert caught.value.code == "embedder_unavailable"
    assert embedder.health() == "failing"


def test_bedrock_embedder_rejects_a_dimension_titan_does_not_offer() -> None:
    from agentmem.embeddings.bedrock import BedrockEmbedder
    from agentmem.errors import InvalidInput

    with pytest.raises(InvalidInput):
        BedrockEmbedder(dimension=384)


# -- the local offline model (a few tests only: it is real and takes ~0.3 s to load) ---------------


def test_local_model_embeds_paraphrases_closer_across_languages() -> None:
    from agentmem.embeddings.local import LocalEmbedder

    embedder = LocalEmbedder()
    stored = embedder.embed(["My daughter is allergic to peanuts", "The quarterly report is due on Friday"])
    assert all(len(v) == 384 and abs(_norm(v) - 1.0) < 1e-3 for v in stored)
    # A Spanish paraphrase with no shared word lands nearer the right memory
    query = embed_query(embedder, "¿Qué alimentos no puede comer mi hija?")
    assert _cosine(query, stored[0]) > _cosine(query, stored[1])


_LOAD_AND_REPORT_POLICY = (
    "import os; from agentmem.embeddings.local import LocalEmbedder; "
    "LocalEmbedder().embed(['a note']); print(os.environ.get('OMP_WAIT_POLICY'))"
)


@pytest.mark.parametrize(("given", "loaded_with"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_local_model_loads_its_openmp_engine_with_sleeping_idle_threads(given: str | None, loaded_with: str) -> None:
    """libgomp's default spins idle threads, which on shared cores made embedding tens of times slower;
    the engine reads the policy once, when loaded: the embedder sets PASSIVE first unless one was chosen."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run(
        [sys.executable, "-c", _LOAD_AND_REPORT_POLICY], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == loaded_with
