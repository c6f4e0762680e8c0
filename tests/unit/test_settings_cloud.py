"""Settings as the cloud sets them: the variable names are written once, Serverless hosts sign as aoss."""

from __future__ import annotations

import pytest

from agentmem.settings import ENV_NAMES, Env, Settings

COLLECTION = "https://abc123def.us-east-1.aoss.amazonaws.com"


def test_an_opensearch_serverless_host_is_signed_as_aoss() -> None:
    # Given only the collection endpoint (what the stack's CollectionEndpoint gives) / Then SigV4 uses aoss
    assert Settings.from_env({Env.OPENSEARCH_ENDPOINT: COLLECTION}).opensearch_service == "aoss"
    # And a domain endpoint, or a local node, keeps es unless told otherwise
    domain = "https://search-memory-abc.us-east-1.es.amazonaws.com"
    assert Settings.from_env({Env.OPENSEARCH_ENDPOINT: domain}).opensearch_service == "es"
    assert Settings.from_env({Env.OPENSEARCH_ENDPOINT: "http://127.0.0.1:9200"}).opensearch_service == "es"
    # And a host that merely contains the suffix is not Serverless
    lookalike = "https://x.aoss.amazonaws.com.example.org"
    assert Settings.from_env({Env.OPENSEARCH_ENDPOINT: lookalike}).opensearch_service == "es"


def test_an_explicit_service_wins_and_is_checked() -> None:
    explicit = {Env.OPENSEARCH_ENDPOINT: "http://127.0.0.1:9200", Env.OPENSEARCH_SERVICE: "aoss"}
    assert Settings.from_env(explicit).opensearch_service == "aoss"
    with pytest.raises(ValueError, match="MEMORY_OPENSEARCH_SERVICE"):
        Settings.from_env({Env.OPENSEARCH_SERVICE: "es2"})


def test_every_name_is_read_by_settings() -> None:
    # Given the names settings.py writes once / Then each one changes what from_env reads (none is dead)
    assert "MEMORY_TABLE_NAME" in ENV_NAMES
    samples = {
        Env.STORE: "sqlite",
        Env.SQLITE_PATH: "/tmp/x.db",
        Env.TABLE_NAME: "t",
        Env.DYNAMODB_ENDPOINT_URL: "http://localhost:1",
        Env.AUTH: "required",
        Env.IDEMPOTENCY_TTL_SECONDS: "7",
        Env.EMBEDDER: "hashing",
        Env.EMBEDDING_DIMENSION: "8",
        Env.EMBEDDING_ENGINE: "shipped",
        Env.BEDROCK_MODEL_ID: "m",
        Env.EMBEDDER_URL: "http://127.0.0.1:11434/v1",
        Env.EMBEDDER_MODEL: "nomic-embed-text",
        Env.EMBEDDER_API_KEY: "sk-embed",
        Env.EMBEDDER_API_KEY_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:1:secret:embed",
        Env.EMBEDDER_DIMENSIONS: "256",
        Env.EMBEDDER_TIMEOUT_SECONDS: "3",
        Env.EMBEDDER_BATCH_SIZE: "8",
        Env.VECTOR_INDEX: "exact",
        Env.OPENSEARCH_ENDPOINT: COLLECTION,
        Env.OPENSEARCH_INDEX: "i",
        Env.OPENSEARCH_SERVICE: "es",
        Env.OPENSEARCH_ENGINE: "lucene",
        Env.DELETION_RUNNER: "local",
        Env.DELETION_STATE_MACHINE_ARN: "arn:aws:states:us-east-1:1:stateMachine:x",
        Env.DELETION_BATCH_SIZE: "3",
        Env.DELETION_WORKFLOW_PATH: "/tmp/w.json",
        Env.DELETION_DRAIN_SECONDS: "2",
        Env.RECEIPT_KEY: "k",
        Env.RECEIPT_KEY_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:1:secret:x",
        Env.MODEL: "openai",
        Env.MODEL_ID: "qwen2.5:0.5b",
        Env.MODEL_URL: "http://127.0.0.1:11434/v1",
        Env.MODEL_API_KEY: "sk-local",
        Env.MODEL_TIMEOUT_SECONDS: "5",
        Env.EXTRACTION_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/1/extraction",
        Env.SNAPSHOTS: "files",
        Env.SNAPSHOT_DIR: "/tmp/snapshots",
        Env.SNAPSHOT_BUCKET: "snapshots-bucket",
        Env.SNAPSHOT_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/1/snapshots",
        Env.MAX_ENTRIES: "500",
        Env.IN_FLIGHT_LIMITS: "starter:2,standard:4,scale:8",
        Env.EMBEDDING_SHARES: "starter:10,standard:20,scale:50",
        Env.EXTRACTION_TOKENS_PER_MINUTE: "20000",
        Env.PREHOOK_AUTHORIZER_TARGET: "arn:aws:lambda:us-east-1:1:function:authorizer:2",
        Env.PREHOOK_TARGET: "arn:aws:lambda:us-east-1:1:function:api:7",
    }
    assert set(samples) == ENV_NAMES
    base = Settings.from_env(samples)
    for name in ENV_NAMES:
        without = {k: v for k, v in samples.items() if k != name}
        try:
            changed = Settings.from_env(without) != base
        except ValueError:  # without it the others no longer make a valid combination: it was read
            changed = True
        assert changed, f"{name} is not read"
