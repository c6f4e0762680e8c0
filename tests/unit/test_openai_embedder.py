"""The OpenAI-compatible embedder against a scripted embeddings server served over HTTP (tests/scripted_embeddings.py):
batching, the bearer token, the dimensions rules, and each failure mapped to the library's errors."""

from __future__ import annotations

import math

import pytest
from moto import mock_aws

from agentmem.container import Container
from agentmem.embeddings.openai_compatible import BATCH_TOKENS, OpenAICompatibleEmbedder
from agentmem.embeddings.port import Embedder, EmbedderMisconfigured
from agentmem.errors import InvalidInput, Unavailable
from agentmem.secrets import read_secret
from agentmem.settings import Env, Settings
from tests.scripted_embeddings import EMBED, ScriptedEmbeddingsServer
from tests.scripted_model import ScriptedDelay, ScriptedFailure, scripted_answers


def _embedder(server: ScriptedEmbeddingsServer, **options: object) -> OpenAICompatibleEmbedder:
    options.setdefault("sleep", lambda seconds: None)
    return OpenAICompatibleEmbedder(server.url, server.model, **options)  # type: ignore[arg-type]


def test_texts_go_in_batches_with_the_bearer_token_and_come_back_in_order() -> None:
    # Given an endpoint and an embedder taking 2 texts a request
    with ScriptedEmbeddingsServer() as server:
        embedder = _embedder(server, api_key="sk-test", batch_size=2)
        texts = ["I hike in the Alps", "my cat is called Miso", "", "the invoice is overdue", "東京の天気"]
        # When 5 texts are embedded
        vectors = embedder.embed(texts)
    # Then 3 requests carried them in order (an empty text as one space), each with the token and the model
    assert server.inputs == [texts[:2], [texts[2] or " ", texts[3]], texts[4:]]
    assert {h["authorization"] for h in server.headers} == {"Bearer sk-test"}
    assert {r["model"] for r in server.requests} == {server.model}
    assert all("dimensions" not in r for r in server.requests)
    # and each text got its own fixed vector (the answer lists them last to first: the index decides)
    assert vectors == server.vectors([t or " " for t in texts])
    assert all(abs(math.sqrt(sum(v * v for v in vector)) - 1.0) < 1e-9 for vector in vectors)
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == f"openai:{server.model}"
    assert embedder.dimension == server.dimension


def test_no_token_sends_no_authorization_and_a_key_reader_is_asked_at_the_first_call() -> None:
    read: list[str] = []

    def key() -> str:
        read.append("read")
        return "sk-from-secrets"

    with ScriptedEmbeddingsServer() as server:
        bare = _embedder(server)
        keyed = _embedder(server, api_key=key)
        assert read == []  # building it reads no secret
        bare.embed(["one"])
        keyed.embed(["two"])
    assert "authorization" not in server.headers[0]
    assert server.headers[1]["authorization"] == "Bearer sk-from-secrets"
    assert read == ["read"]


def test_long_texts_are_split_by_estimated_tokens_not_only_by_count() -> None:
    with ScriptedEmbeddingsServer() as server:
        embedder = _embedder(server, batch_size=64)
        long_text = "word " * 20_000  # cut to 8,192 estimated tokens each
        batches = embedder.batches([long_text[:24_000]] * 20)
    assert sum(len(b) for b in batches) == 20
    assert len(batches) > 1
    assert all(len(b) * 8_000 <= BATCH_TOKENS for b in batches)


def test_asked_dimensions_are_sent_checked_and_named_in_the_model_id() -> None:
    with ScriptedEmbeddingsServer(takes_dimensions=True) as server:
        embedder = _embedder(server, dimensions=32)
        vectors = embedder.embed(["shortened vectors"])
    assert server.requests[0]["dimensions"] == 32
    assert len(vectors[0]) == 32
    assert embedder.dimension == 32
    assert embedder.model_id == f"openai:{server.model}:32"


def test_vectors_of_another_size_than_asked_are_a_misconfiguration() -> None:
    # Given a model of one size (it ignores `dimensions`, as many local servers do)
    with ScriptedEmbeddingsServer(dimension=64, takes_dimensions=False) as server:
        embedder = _embedder(server, dimensions=32)
        # When a text is embedded, Then the error names the setting and the sizes; the embedder reports failing
        with pytest.raises(
            EmbedderMisconfigured, match="64-dimension vectors, not the 32 of MEMORY_EMBEDDER_DIMENSIONS"
        ):
            embedder.embed(["a text"])
    assert embedder.health() == "failing"


def test_the_models_own_size_is_learned_and_then_held() -> None:
    with ScriptedEmbeddingsServer(dimension=48) as server:
        embedder = _embedder(server)
        assert embedder.dimension == 48  # asked once with one text
        assert server.inputs == [["dimension"]]
        server.dimension = 40  # the endpoint now serves a model of another size under the same name
        with pytest.raises(EmbedderMisconfigured, match="40-dimension"):
            embedder.embed(["changed"])


def test_throttling_and_server_errors_are_retried_then_succeed() -> None:
    answers = scripted_answers(ScriptedFailure(429, '{"error": {"message": "slow down"}}'), ScriptedFailure(500), EMBED)
    waits: list[float] = []
    with ScriptedEmbeddingsServer(answers) as server:
        embedder = _embedder(server, sleep=waits.append)
        vectors = embedder.embed(["retried"])
    assert vectors == server.vectors(["retried"])
    assert len(server.requests) == 3
    assert len(waits) == 2
    assert embedder.health() == "ok"


def test_an_endpoint_still_failing_after_the_attempts_is_unavailable() -> None:
    answers = scripted_answers(*[ScriptedFailure(503, "overloaded")] * 3)
    with ScriptedEmbeddingsServer(answers) as server:
        embedder = _embedder(server, max_attempts=3)
        with pytest.raises(Unavailable) as failed:
            embedder.embed(["down"])
    assert failed.value.code == "embedder_unavailable"
    assert failed.value.http_status == 503
    assert "503" in failed.value.message
    assert len(server.requests) == 3
    assert not isinstance(failed.value, EmbedderMisconfigured)


def test_a_refused_key_is_a_misconfiguration_that_repeats_none_of_the_providers_words() -> None:
    body = '{"error": {"message": "Incorrect API key provided: sk-abc***wxyz", "code": "invalid_api_key"}}'
    with ScriptedEmbeddingsServer(scripted_answers(ScriptedFailure(401, body))) as server:
        embedder = _embedder(server, api_key="sk-abcdefwxyz")
        with pytest.raises(EmbedderMisconfigured) as failed:
            embedder.embed(["a text"])
    assert len(server.requests) == 1  # not retried
    assert "MEMORY_EMBEDDER_API_KEY" in failed.value.message
    assert "sk-" not in failed.value.message
    assert failed.value.http_status == 503
    assert failed.value.code == "embedder_misconfigured"


def test_a_model_the_endpoint_does_not_serve_is_a_misconfiguration_naming_it() -> None:
    with ScriptedEmbeddingsServer() as server:
        embedder = OpenAICompatibleEmbedder(server.url, "text-embedding-4-huge")
        with pytest.raises(EmbedderMisconfigured, match=r"404.*text-embedding-4-huge.*MEMORY_EMBEDDER_MODEL"):
            embedder.embed(["a text"])
    assert len(server.requests) == 1


def test_an_endpoint_refusing_the_asked_dimensions_is_a_misconfiguration() -> None:
    # Given a server that refuses `dimensions` for a model of one size, as vLLM does
    body = '{"error": {"message": "Model does not support matryoshka representation, changing output dimensions"}}'
    with ScriptedEmbeddingsServer(scripted_answers(ScriptedFailure(400, body))) as server:
        embedder = _embedder(server, dimensions=256)
        with pytest.raises(EmbedderMisconfigured, match="unset MEMORY_EMBEDDER_DIMENSIONS"):
            embedder.embed(["a text"])


def test_another_refusal_refuses_the_texts() -> None:
    body = '{"error": {"message": "input is too long for this model"}}'
    with (
        ScriptedEmbeddingsServer(scripted_answers(ScriptedFailure(400, body))) as server,
        pytest.raises(InvalidInput) as refused,
    ):
        _embedder(server).embed(["a very long text"])
    assert refused.value.code == "embedding_refused"
    assert "too long" in refused.value.message


def test_a_slow_endpoint_times_out_once_without_retrying() -> None:
    answers = scripted_answers(ScriptedDelay(5.0, EMBED))
    with ScriptedEmbeddingsServer(answers) as server:
        embedder = _embedder(server, timeout_seconds=0.2)
        with pytest.raises(Unavailable, match=r"did not answer within 0\.2 s"):
            embedder.embed(["slow"])
        assert len(server.requests) == 1
        server.stop(check=False)


def test_an_unreachable_endpoint_is_unavailable() -> None:
    server = ScriptedEmbeddingsServer().start()
    url = server.url
    server.stop()
    embedder = OpenAICompatibleEmbedder(url, "any", sleep=lambda seconds: None)
    with pytest.raises(Unavailable, match="unreachable"):
        embedder.embed(["nobody there"])


@pytest.mark.parametrize(
    ("body", "said"),
    [("<html>gateway</html>", "other than JSON"), ('{"data": [{"index": 0}]}', "without embeddings")],
)
def test_an_answer_without_embeddings_is_unavailable(body: str, said: str) -> None:
    with (
        ScriptedEmbeddingsServer(scripted_answers(ScriptedFailure(200, body))) as server,
        pytest.raises(Unavailable, match=said),
    ):
        _embedder(server).embed(["a text"])


def test_a_url_that_is_not_http_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="http or https"):
        OpenAICompatibleEmbedder("ftp://example.invalid/v1", "m")


# -- settings and wiring -----------------------------------------------------------------------------


def test_settings_refuse_an_openai_embedder_missing_what_it_needs() -> None:
    url, model = {Env.EMBEDDER_URL: "http://127.0.0.1:11434/v1"}, {Env.EMBEDDER_MODEL: "nomic-embed-text"}
    with pytest.raises(ValueError, match=r"needs MEMORY_EMBEDDER_URL .* and MEMORY_EMBEDDER_MODEL"):
        Settings.from_env({Env.EMBEDDER: "openai", **model})
    with pytest.raises(ValueError, match=r"needs MEMORY_EMBEDDER_URL .* and MEMORY_EMBEDDER_MODEL"):
        Settings.from_env({Env.EMBEDDER: "openai", **url})
    with pytest.raises(ValueError, match="MEMORY_EMBEDDER_URL must be an http"):
        Settings.from_env({Env.EMBEDDER: "openai", **model, Env.EMBEDDER_URL: "127.0.0.1:11434/v1"})
    for bad in ("0", "-3", "wide"):
        with pytest.raises(ValueError, match="MEMORY_EMBEDDER_DIMENSIONS must be a whole number"):
            Settings.from_env({Env.EMBEDDER: "openai", **url, **model, Env.EMBEDDER_DIMENSIONS: bad})
        with pytest.raises(ValueError, match="MEMORY_EMBEDDER_BATCH_SIZE must be a whole number"):
            Settings.from_env({Env.EMBEDDER: "openai", **url, **model, Env.EMBEDDER_BATCH_SIZE: bad})
    with pytest.raises(ValueError, match="MEMORY_EMBEDDER_TIMEOUT_SECONDS"):
        Settings.from_env({Env.EMBEDDER: "openai", **url, **model, Env.EMBEDDER_TIMEOUT_SECONDS: "never"})
    with pytest.raises(ValueError, match="from MEMORY_EMBEDDER_DIMENSIONS"):
        Settings.from_env({Env.EMBEDDER: "openai", **url, **model, Env.EMBEDDING_DIMENSION: "512"})
    with pytest.raises(ValueError, match="MEMORY_EMBEDDER must be none, hashing, local, bedrock or openai"):
        Settings.from_env({Env.EMBEDDER: "ollama"})


def test_the_container_builds_the_embedder_from_the_environment_without_calling_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import urllib.request

    def no_request(*_: object, **__: object) -> None:
        raise AssertionError("a request was made")

    monkeypatch.setattr(urllib.request, "urlopen", no_request)
    env = {
        Env.EMBEDDER: "openai",
        Env.EMBEDDER_URL: "https://api.openai.com/v1/",
        Env.EMBEDDER_MODEL: "text-embedding-3-small",
        Env.EMBEDDER_API_KEY: "sk-live-secret",
        Env.EMBEDDER_DIMENSIONS: "512",
        Env.EMBEDDER_TIMEOUT_SECONDS: "4",
        Env.EMBEDDER_BATCH_SIZE: "16",
    }
    settings = Settings.from_env(env)
    embedder = Container(settings).embedder
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.url == "https://api.openai.com/v1/embeddings"
    assert embedder.model_id == "openai:text-embedding-3-small:512"
    assert embedder.dimension == 512
    assert (embedder._timeout, embedder._batch_size, embedder._api_key) == (4.0, 16, "sk-live-secret")
    assert "sk-live-secret" not in repr(settings)


@mock_aws
def test_the_key_comes_from_secrets_manager_on_the_first_embedding() -> None:
    import boto3

    arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="embedder-key", SecretString="sk-from-the-vault"
    )["ARN"]
    read_secret.cache_clear()
    with ScriptedEmbeddingsServer() as server:
        env = {
            Env.EMBEDDER: "openai",
            Env.EMBEDDER_URL: server.url,
            Env.EMBEDDER_MODEL: server.model,
            Env.EMBEDDER_API_KEY_SECRET_ARN: arn,
            "AWS_REGION": "us-east-1",
        }
        embedder = Container(Settings.from_env(env)).embedder
        assert embedder is not None
        embedder.embed(["a text"])
    assert server.headers[0]["authorization"] == "Bearer sk-from-the-vault"


@mock_aws
def test_a_secret_that_cannot_be_read_makes_the_embedder_unavailable() -> None:
    read_secret.cache_clear()
    with ScriptedEmbeddingsServer() as server:
        missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf"
        embedder = OpenAICompatibleEmbedder(server.url, server.model, api_key=lambda: read_secret(missing, "us-east-1"))
        with pytest.raises(Unavailable, match="cannot read the secret"):
            embedder.embed(["a text"])
    assert server.requests == []
    assert embedder.health() == "failing"
