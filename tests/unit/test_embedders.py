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


# -- the cost of one request is bounded (issue 17, point 6) -----------------------------------------


def test_local_model_embeds_at_most_its_window_of_a_long_text_and_a_share_of_the_call() -> None:
    from agentmem.embeddings.local import CALL_TOKENS, WINDOW_TOKENS, LocalEmbedder, _model

    embedder = LocalEmbedder()
    model, _ = _model(embedder.variant, embedder.engine)
    long_cjk = "我们周末去公园散步了天气很好" * 4700  # 64 KiB of UTF-8
    long_english = "The quarterly report is due on Friday and the team is busy. " * 500
    fitted = embedder.fitted([long_cjk])
    assert model.token_count(fitted[0], False) <= WINDOW_TOKENS
    assert long_cjk.startswith(fitted[0])
    assert len(fitted[0]) > WINDOW_TOKENS // 2  # the window is used, not a sliver of it
    # A long text's vector is the vector of its first window
    first_window = embedder.embed([embedder.fitted([long_english])[0]])[0]
    assert _cosine(embedder.embed([long_english])[0], first_window) > 0.9999
    # Many long texts in one call share the call's budget
    many = embedder.fitted([long_english] * 500)
    assert sum(model.token_count(text, False) for text in many) <= CALL_TOKENS
    # Short texts are embedded whole
    assert embedder.fitted(["a short note"]) == ["a short note"]
    assert model.token_count(embedder.fitted([long_cjk], query=True)[0], True) <= WINDOW_TOKENS
    # A text is cut by its length as the engine normalises it: 100 ligatures are 1,800 code points
    ligatures = embedder.fitted(["\ufdfa" * 100])[0]
    assert model.token_count(ligatures, False) <= WINDOW_TOKENS
    assert len(ligatures) > WINDOW_TOKENS // 2


def test_bedrock_sends_at_most_titans_token_limit_by_its_own_count(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import ANY, Stubber

    from agentmem.embeddings.bedrock import MAX_INPUT_TOKENS, BedrockEmbedder, first_tokens

    cjk = "天气很好" * 12_000  # 48,000 characters, ~48,000 tokens: under the 50,000-character limit
    assert len(first_tokens(cjk)) == MAX_INPUT_TOKENS  # a CJK character a token
    assert len(first_tokens("word " * 20_000)) == 3 * MAX_INPUT_TOKENS
    sent: list[str] = []
    bedrock_client.meta.events.register(
        "before-parameter-build.bedrock-runtime.InvokeModel",
        lambda params, **_: sent.append(json.loads(params["body"])["inputText"]),
    )
    with Stubber(bedrock_client) as stub:
        # Titan counts more tokens than the estimate once: the text is cut by its count and sent again
        stub.add_client_error(
            "invoke_model",
            service_error_code="ValidationException",
            service_message=(
                "400 Bad Request: Too many input tokens. Max input tokens: 8192, request input token count: 9000"
            ),
            http_status_code=400,
            expected_params={"modelId": ANY, "body": ANY, "contentType": ANY, "accept": ANY},
        )
        stub.add_response(
            "invoke_model",
            _titan_response([1.0] + [0.0] * 255),
            {"modelId": ANY, "body": ANY, "contentType": ANY, "accept": ANY},
        )
        BedrockEmbedder(dimension=256, client=bedrock_client, concurrency=1).embed([cjk])
        stub.assert_no_pending_responses()
    assert len(sent[0]) == MAX_INPUT_TOKENS
    assert len(sent[1]) < MAX_INPUT_TOKENS * 8192 // 9000


def test_bedrock_refusing_a_text_is_bad_input_not_an_outage(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    from agentmem.embeddings.bedrock import BedrockEmbedder
    from agentmem.errors import InvalidInput

    with Stubber(bedrock_client) as stub:
        stub.add_client_error(
            "invoke_model", service_error_code="ValidationException", service_message="bad text", http_status_code=400
        )
        embedder = BedrockEmbedder(dimension=256, client=bedrock_client, sleep=lambda _: None)
        with pytest.raises(InvalidInput) as caught:
            embedder.embed(["hello"])
    assert caught.value.code == "embedding_refused"
    assert embedder.health() == "ok"
