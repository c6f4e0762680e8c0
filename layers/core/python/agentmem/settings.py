"""One typed settings object, read from the environment on first use and cached.

| variable | meaning | default |
|---|---|---|
| MEMORY_STORE | `sqlite` (embedded) or `dynamodb` | `dynamodb` in Lambda or with an endpoint URL, else `sqlite` |
| MEMORY_SQLITE_PATH | the SQLite file of the embedded store | `.data/memory.db` |
| MEMORY_TABLE_NAME | the DynamoDB table | `agent-memory` |
| MEMORY_DYNAMODB_ENDPOINT_URL | a DynamoDB-compatible endpoint (DynamoDB Local, moto server) | unset: AWS |
| MEMORY_AUTH | `required`: app routes need an `x-api-key` of that app; `none`: no check | `required` in Lambda |
| MEMORY_IDEMPOTENCY_TTL_SECONDS | how long an `Idempotency-Key` answer is kept | `86400` |
| MEMORY_EMBEDDER | `none`, `hashing` (tests), `local`, `bedrock` (Titan v2), `openai` | sqlite: `local`, else `none` |
| MEMORY_EMBEDDING_DIMENSION | vector size of `bedrock` (256, 512, 1024) and `hashing` | `1024`; `384` hashing |
| MEMORY_EMBEDDER_URL | the OpenAI-compatible base URL (`https://api.openai.com/v1`), required for `openai` | unset |
| MEMORY_EMBEDDER_MODEL | the endpoint's embedding model, required for `openai` | unset |
| MEMORY_EMBEDDER_API_KEY | the bearer token sent to it | unset |
| MEMORY_EMBEDDER_API_KEY_SECRET_ARN | read that token from Secrets Manager instead (what the CDK stack sets) | unset |
| MEMORY_EMBEDDER_DIMENSIONS | the vector size asked for (`dimensions`) and checked; unset: the model's own | unset |
| MEMORY_EMBEDDER_TIMEOUT_SECONDS | how long one embedding request may wait for its answer | `10` |
| MEMORY_EMBEDDER_BATCH_SIZE | texts one embedding request carries at most | `64` |
| MEMORY_BEDROCK_MODEL_ID | the Bedrock embedding model | `amazon.titan-embed-text-v2:0` |
| MEMORY_VECTOR_INDEX | `exact` (vectors in the table) or `opensearch` | `opensearch` with an endpoint, else `exact` |
| MEMORY_OPENSEARCH_ENDPOINT | the OpenSearch URL (`https://...` is signed with SigV4) | unset |
| MEMORY_OPENSEARCH_INDEX | the vector index name | `agent-memory-vectors` |
| MEMORY_OPENSEARCH_SERVICE | SigV4 service: `es` (Service) or `aoss` (Serverless) | `aoss` on `*.aoss.amazonaws.com` |
| MEMORY_OPENSEARCH_ENGINE | k-NN engine of the mapping: `lucene` or `faiss` | `faiss` on https or aoss, else `lucene` |
| MEMORY_DELETION_RUNNER | `local` (in-process) or `stepfunctions` | `stepfunctions` if the ARN is set |
| MEMORY_DELETION_STATE_MACHINE_ARN | the delete_user state machine the API starts | unset |
| MEMORY_DELETION_BATCH_SIZE | items one deletion step deletes at most | `500` |
| MEMORY_DELETION_DRAIN_SECONDS | seconds an erasure waits after the mark, before it sweeps (the API timeout) | `30` |
| MEMORY_DELETION_WORKFLOW_PATH | another ASL file for the local runner (trying a change) | unset: the packaged one |
| MEMORY_RECEIPT_KEY | secret of the HMAC-SHA256 naming the user in deletion receipts | a development key: set it |
| MEMORY_RECEIPT_KEY_SECRET_ARN | read that secret from Secrets Manager instead (what the CDK stack sets) | unset |
| MEMORY_EMBEDDING_ENGINE | the local engine library, or `shipped` (agentmem/embeddings/engine.py) | the tuned build |
| MEMORY_MODEL | the chat model: `none`, `bedrock` (Converse), `openai` (an OpenAI-compatible endpoint) | `none` |
| MEMORY_MODEL_ID | the Bedrock model id; for `openai` the endpoint's model name (required) | `amazon.nova-micro-v1:0` |
| MEMORY_MODEL_URL | the OpenAI-compatible base URL (`http://127.0.0.1:11434/v1`), required for `openai` | unset |
| MEMORY_MODEL_API_KEY | the bearer token sent to the OpenAI-compatible endpoint | unset |
| MEMORY_MODEL_TIMEOUT_SECONDS | how long one model call may wait for its answer | `60` |
| MEMORY_EXTRACTION_QUEUE_URL | the SQS queue bringing sessions back to extraction (set by the stack) | unset |
| MEMORY_SNAPSHOTS | where search indexes are snapshotted: `none`, `files`, `s3` | `none`; `agentmem serve`: `files` |
| MEMORY_SNAPSHOT_DIR | the folder of `files` snapshots | the SQLite file's path + `.snapshots` |
| MEMORY_SNAPSHOT_BUCKET | the bucket of `s3` snapshots (set by the stack) | unset |
| MEMORY_SNAPSHOT_QUEUE_URL | the queue asking the snapshot function for a snapshot (set by the stack) | unset |
| MEMORY_MAX_ENTRIES | the most entries a user (and project) holds: more is a 409 | table: `20000`; OpenSearch: none |
| MEMORY_EMBEDDING_SHARES | embedding model calls a minute per tenant and tier (`starter:100,...`): more: 429 | unset |
| MEMORY_EXTRACTION_TOKENS_PER_MINUTE | the extraction model's tokens a minute one app may take: more waits | unset |
| MEMORY_IN_FLIGHT_LIMITS | a tenant's requests in flight per tier (`starter:15,...`): more: 429 | unset; the stack's |
| MEMORY_PREHOOK_TARGET | the API version the pre-traffic hook checks (its qualified ARN; set by the stack) | unset |
| MEMORY_PREHOOK_AUTHORIZER_TARGET | the authorizer version the pre-traffic hook checks (set by the stack) | unset |
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final, Literal

API_MEMORY_MB: Final = 1024
"""The API function's memory in the stack (infra/components/compute.py): what the usage meter prices a
request's duration at where Lambda does not say (the local server)."""


class Env:
    """The environment variables' names, written once: read here, set by the CDK stack (infra/)."""

    STORE: Final = "MEMORY_STORE"
    SQLITE_PATH: Final = "MEMORY_SQLITE_PATH"
    TABLE_NAME: Final = "MEMORY_TABLE_NAME"
    DYNAMODB_ENDPOINT_URL: Final = "MEMORY_DYNAMODB_ENDPOINT_URL"
    AUTH: Final = "MEMORY_AUTH"
    IDEMPOTENCY_TTL_SECONDS: Final = "MEMORY_IDEMPOTENCY_TTL_SECONDS"
    EMBEDDER: Final = "MEMORY_EMBEDDER"
    EMBEDDING_DIMENSION: Final = "MEMORY_EMBEDDING_DIMENSION"
    EMBEDDING_ENGINE: Final = "MEMORY_EMBEDDING_ENGINE"
    BEDROCK_MODEL_ID: Final = "MEMORY_BEDROCK_MODEL_ID"
    EMBEDDER_URL: Final = "MEMORY_EMBEDDER_URL"
    EMBEDDER_MODEL: Final = "MEMORY_EMBEDDER_MODEL"
    EMBEDDER_API_KEY: Final = "MEMORY_EMBEDDER_API_KEY"
    EMBEDDER_API_KEY_SECRET_ARN: Final = "MEMORY_EMBEDDER_API_KEY_SECRET_ARN"
    EMBEDDER_DIMENSIONS: Final = "MEMORY_EMBEDDER_DIMENSIONS"
    EMBEDDER_TIMEOUT_SECONDS: Final = "MEMORY_EMBEDDER_TIMEOUT_SECONDS"
    EMBEDDER_BATCH_SIZE: Final = "MEMORY_EMBEDDER_BATCH_SIZE"
    VECTOR_INDEX: Final = "MEMORY_VECTOR_INDEX"
    OPENSEARCH_ENDPOINT: Final = "MEMORY_OPENSEARCH_ENDPOINT"
    OPENSEARCH_INDEX: Final = "MEMORY_OPENSEARCH_INDEX"
    OPENSEARCH_SERVICE: Final = "MEMORY_OPENSEARCH_SERVICE"
    OPENSEARCH_ENGINE: Final = "MEMORY_OPENSEARCH_ENGINE"
    DELETION_RUNNER: Final = "MEMORY_DELETION_RUNNER"
    DELETION_STATE_MACHINE_ARN: Final = "MEMORY_DELETION_STATE_MACHINE_ARN"
    DELETION_BATCH_SIZE: Final = "MEMORY_DELETION_BATCH_SIZE"
    DELETION_WORKFLOW_PATH: Final = "MEMORY_DELETION_WORKFLOW_PATH"
    DELETION_DRAIN_SECONDS: Final = "MEMORY_DELETION_DRAIN_SECONDS"
    RECEIPT_KEY: Final = "MEMORY_RECEIPT_KEY"
    RECEIPT_KEY_SECRET_ARN: Final = "MEMORY_RECEIPT_KEY_SECRET_ARN"
    MODEL: Final = "MEMORY_MODEL"
    MODEL_ID: Final = "MEMORY_MODEL_ID"
    MODEL_URL: Final = "MEMORY_MODEL_URL"
    MODEL_API_KEY: Final = "MEMORY_MODEL_API_KEY"
    MODEL_TIMEOUT_SECONDS: Final = "MEMORY_MODEL_TIMEOUT_SECONDS"
    EXTRACTION_QUEUE_URL: Final = "MEMORY_EXTRACTION_QUEUE_URL"
    SNAPSHOTS: Final = "MEMORY_SNAPSHOTS"
    SNAPSHOT_DIR: Final = "MEMORY_SNAPSHOT_DIR"
    SNAPSHOT_BUCKET: Final = "MEMORY_SNAPSHOT_BUCKET"
    SNAPSHOT_QUEUE_URL: Final = "MEMORY_SNAPSHOT_QUEUE_URL"
    MAX_ENTRIES: Final = "MEMORY_MAX_ENTRIES"
    IN_FLIGHT_LIMITS: Final = "MEMORY_IN_FLIGHT_LIMITS"
    EMBEDDING_SHARES: Final = "MEMORY_EMBEDDING_SHARES"
    EXTRACTION_TOKENS_PER_MINUTE: Final = "MEMORY_EXTRACTION_TOKENS_PER_MINUTE"
    PREHOOK_TARGET: Final = "MEMORY_PREHOOK_TARGET"
    PREHOOK_AUTHORIZER_TARGET: Final = "MEMORY_PREHOOK_AUTHORIZER_TARGET"


ENV_NAMES: frozenset[str] = frozenset(value for name, value in vars(Env).items() if name.isupper())
OPENSEARCH_SERVERLESS_SERVICE = "aoss"
"""SigV4 service name of OpenSearch Serverless (the CDK stack sets it; an ``*.aoss.amazonaws.com`` host implies it)."""
OPENSEARCH_SERVERLESS_HOST_SUFFIX = ".aoss.amazonaws.com"


StoreKind = Literal["sqlite", "dynamodb"]
EmbedderKind = Literal["none", "hashing", "local", "bedrock", "openai"]
EMBEDDERS: tuple[str, ...] = ("none", "hashing", "local", "bedrock", "openai")
VectorIndexKind = Literal["exact", "opensearch"]
OpenSearchEngine = Literal["lucene", "faiss"]
DeletionRunnerKind = Literal["local", "stepfunctions"]
ModelKind = Literal["none", "bedrock", "openai"]
SnapshotsKind = Literal["none", "files", "s3"]
DEFAULT_BEDROCK_CHAT_MODEL = "amazon.nova-micro-v1:0"
DEVELOPMENT_RECEIPT_KEY = "agentmem-development-receipt-key"
AuthMode = Literal["none", "required"]


@dataclass(frozen=True, slots=True)
class Settings:
    store: StoreKind = "sqlite"
    sqlite_path: str = ".data/memory.db"
    table_name: str = "agent-memory"
    dynamodb_endpoint_url: str | None = None
    aws_region: str | None = None
    idempotency_ttl_seconds: int = 86400
    embedder: EmbedderKind = "none"
    embedding_dimension: int | None = None
    embedding_engine: str | None = None
    bedrock_model_id: str = "amazon.titan-embed-text-v2:0"
    embedder_url: str | None = None
    embedder_model: str | None = None
    embedder_api_key: str | None = field(default=None, repr=False)
    embedder_api_key_secret_arn: str | None = None
    embedder_dimensions: int | None = None
    embedder_timeout_seconds: float = 10.0
    embedder_batch_size: int = 64
    vector_index: VectorIndexKind = "exact"
    opensearch_endpoint: str | None = None
    opensearch_index: str = "agent-memory-vectors"
    opensearch_service: str = "es"
    opensearch_engine: OpenSearchEngine = "lucene"
    deletion_runner: DeletionRunnerKind = "local"
    deletion_state_machine_arn: str | None = None
    deletion_batch_size: int = 500
    deletion_workflow_path: str | None = None
    deletion_drain_seconds: int = 30
    receipt_key: str = DEVELOPMENT_RECEIPT_KEY
    receipt_key_secret_arn: str | None = None
    auth: AuthMode = "none"
    model: ModelKind = "none"
    model_id: str = DEFAULT_BEDROCK_CHAT_MODEL
    model_url: str | None = None
    model_api_key: str | None = field(default=None, repr=False)
    model_timeout_seconds: float = 60.0
    extraction_queue_url: str | None = None
    snapshots: SnapshotsKind = "none"
    snapshot_dir: str | None = None
    snapshot_bucket: str | None = None
    snapshot_queue_url: str | None = None
    max_entries: int | None = None
    """None: the search backend's own limit (agentmem/vectors/exact.py MAX_ENTRIES; none for OpenSearch)."""
    in_flight_limits: str = ""
    """Requests in flight per tenant of each tier (agentmem/tenancy/admission.py); empty: none counted."""
    embedding_shares: str = ""
    """Embedding model calls a minute per tenant of each tier (admission.py ModelShare); empty: none counted."""
    extraction_tokens_per_minute: int | None = None
    """The extraction model's tokens a minute one app may take; None: not counted."""
    prehook_target: str | None = None
    prehook_authorizer_target: str | None = None
    """The API version CodeDeploy's pre-traffic hook checks (agentmem/release_hook.py): set on the hook only."""

    def resolved_receipt_key(self) -> bytes:
        """The receipt HMAC key: from Secrets Manager when an ARN is set, else MEMORY_RECEIPT_KEY."""
        if self.receipt_key_secret_arn:
            from agentmem.secrets import read_secret

            return read_secret(self.receipt_key_secret_arn, self.aws_region).encode("utf-8")
        return self.receipt_key.encode("utf-8")

    def embedder_key(self) -> str | Callable[[], str] | None:
        """The ``openai`` embedder's bearer token: a reader of the Secrets Manager secret when an ARN is set
        (read on the first embedding, once per process), else MEMORY_EMBEDDER_API_KEY."""
        arn = self.embedder_api_key_secret_arn
        if arn:
            from agentmem.secrets import read_secret

            region = self.aws_region
            return lambda: read_secret(arn, region)
        return self.embedder_api_key

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        endpoint = env.get(Env.DYNAMODB_ENDPOINT_URL) or None
        in_lambda = bool(env.get("AWS_LAMBDA_FUNCTION_NAME"))
        store = _choice(env, Env.STORE, ("sqlite", "dynamodb"), "dynamodb" if endpoint or in_lambda else "sqlite")
        embedder = _choice(env, Env.EMBEDDER, EMBEDDERS, "local" if store == "sqlite" else "none")
        embedder_url = env.get(Env.EMBEDDER_URL) or None
        embedder_model = env.get(Env.EMBEDDER_MODEL) or None
        if embedder == "openai" and not (embedder_url and embedder_model):
            raise ValueError(
                "MEMORY_EMBEDDER=openai needs MEMORY_EMBEDDER_URL (the endpoint's base URL, ending in /v1) and "
                "MEMORY_EMBEDDER_MODEL (its embedding model)"
            )
        if embedder_url and not embedder_url.startswith(("http://", "https://")):
            raise ValueError(f"MEMORY_EMBEDDER_URL must be an http:// or https:// URL, not {embedder_url!r}")
        if embedder == "openai" and env.get(Env.EMBEDDING_DIMENSION):
            raise ValueError("MEMORY_EMBEDDER=openai takes its vector size from MEMORY_EMBEDDER_DIMENSIONS")
        opensearch_endpoint = env.get(Env.OPENSEARCH_ENDPOINT) or None
        vector_index = _choice(
            env, Env.VECTOR_INDEX, ("exact", "opensearch"), "opensearch" if opensearch_endpoint else "exact"
        )
        if vector_index == "opensearch" and not opensearch_endpoint:
            raise ValueError("MEMORY_VECTOR_INDEX=opensearch needs MEMORY_OPENSEARCH_ENDPOINT")
        service = _choice(env, Env.OPENSEARCH_SERVICE, ("es", "aoss"), _signing_service(opensearch_endpoint))
        # AWS (https, Serverless) runs faiss; the local node of `make opensearch` has only lucene (no native libs).
        on_aws = service == "aoss" or (opensearch_endpoint or "").startswith("https://")
        engine = _choice(env, Env.OPENSEARCH_ENGINE, ("lucene", "faiss"), "faiss" if on_aws else "lucene")
        if service == "aoss" and engine == "lucene":
            raise ValueError("MEMORY_OPENSEARCH_ENGINE=lucene is not available on OpenSearch Serverless: use faiss")
        dimension = env.get(Env.EMBEDDING_DIMENSION)
        state_machine = env.get(Env.DELETION_STATE_MACHINE_ARN) or None
        runner = _choice(
            env, Env.DELETION_RUNNER, ("local", "stepfunctions"), "stepfunctions" if state_machine else "local"
        )
        if runner == "stepfunctions" and not state_machine:
            raise ValueError("MEMORY_DELETION_RUNNER=stepfunctions needs MEMORY_DELETION_STATE_MACHINE_ARN")
        auth = _choice(env, Env.AUTH, ("none", "required"), "required" if in_lambda else "none")
        model = _choice(env, Env.MODEL, ("none", "bedrock", "openai"), "none")
        model_id = env.get(Env.MODEL_ID) or None
        model_url = env.get(Env.MODEL_URL) or None
        if model == "openai" and not (model_url and model_id):
            raise ValueError("MEMORY_MODEL=openai needs MEMORY_MODEL_URL and MEMORY_MODEL_ID (the endpoint's model)")
        if model_url and not model_url.startswith(("http://", "https://")):
            raise ValueError(f"MEMORY_MODEL_URL must be an http:// or https:// URL, not {model_url!r}")
        model_timeout = _positive_seconds(env, Env.MODEL_TIMEOUT_SECONDS, _DEFAULTS.model_timeout_seconds)
        snapshots = _choice(env, Env.SNAPSHOTS, ("none", "files", "s3"), "none")
        if snapshots == "s3" and not env.get(Env.SNAPSHOT_BUCKET):
            raise ValueError("MEMORY_SNAPSHOTS=s3 needs MEMORY_SNAPSHOT_BUCKET")
        return cls(
            store=store,  # type: ignore[arg-type]
            sqlite_path=env.get(Env.SQLITE_PATH) or _DEFAULTS.sqlite_path,
            table_name=env.get(Env.TABLE_NAME) or _DEFAULTS.table_name,
            dynamodb_endpoint_url=endpoint,
            aws_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            idempotency_ttl_seconds=int(env.get(Env.IDEMPOTENCY_TTL_SECONDS) or _DEFAULTS.idempotency_ttl_seconds),
            embedder=embedder,  # type: ignore[arg-type]
            embedding_dimension=int(dimension) if dimension else None,
            embedding_engine=env.get(Env.EMBEDDING_ENGINE) or None,
            bedrock_model_id=env.get(Env.BEDROCK_MODEL_ID) or _DEFAULTS.bedrock_model_id,
            embedder_url=embedder_url,
            embedder_model=embedder_model,
            embedder_api_key=env.get(Env.EMBEDDER_API_KEY) or None,
            embedder_api_key_secret_arn=env.get(Env.EMBEDDER_API_KEY_SECRET_ARN) or None,
            embedder_dimensions=_positive_int(env, Env.EMBEDDER_DIMENSIONS),
            embedder_timeout_seconds=_positive_seconds(
                env, Env.EMBEDDER_TIMEOUT_SECONDS, _DEFAULTS.embedder_timeout_seconds
            ),
            embedder_batch_size=_positive_int(env, Env.EMBEDDER_BATCH_SIZE) or _DEFAULTS.embedder_batch_size,
            vector_index=vector_index,  # type: ignore[arg-type]
            opensearch_endpoint=opensearch_endpoint,
            opensearch_index=env.get(Env.OPENSEARCH_INDEX) or _DEFAULTS.opensearch_index,
            opensearch_service=service,
            opensearch_engine=engine,  # type: ignore[arg-type]
            deletion_runner=runner,  # type: ignore[arg-type]
            deletion_state_machine_arn=state_machine,
            deletion_batch_size=int(env.get(Env.DELETION_BATCH_SIZE) or _DEFAULTS.deletion_batch_size),
            deletion_workflow_path=env.get(Env.DELETION_WORKFLOW_PATH) or None,
            deletion_drain_seconds=int(env.get(Env.DELETION_DRAIN_SECONDS) or _DEFAULTS.deletion_drain_seconds),
            receipt_key=env.get(Env.RECEIPT_KEY) or DEVELOPMENT_RECEIPT_KEY,
            receipt_key_secret_arn=env.get(Env.RECEIPT_KEY_SECRET_ARN) or None,
            auth=auth,  # type: ignore[arg-type]
            extraction_queue_url=env.get(Env.EXTRACTION_QUEUE_URL) or None,
            model=model,  # type: ignore[arg-type]
            model_id=model_id or _DEFAULTS.model_id,
            model_url=model_url,
            model_api_key=env.get(Env.MODEL_API_KEY) or None,
            model_timeout_seconds=model_timeout,
            snapshots=snapshots,  # type: ignore[arg-type]
            snapshot_dir=env.get(Env.SNAPSHOT_DIR) or None,
            snapshot_bucket=env.get(Env.SNAPSHOT_BUCKET) or None,
            snapshot_queue_url=env.get(Env.SNAPSHOT_QUEUE_URL) or None,
            max_entries=_positive_int(env, Env.MAX_ENTRIES),
            in_flight_limits=_tier_limits(env, Env.IN_FLIGHT_LIMITS),
            embedding_shares=_tier_limits(env, Env.EMBEDDING_SHARES),
            extraction_tokens_per_minute=_positive_int(env, Env.EXTRACTION_TOKENS_PER_MINUTE),
            prehook_target=env.get(Env.PREHOOK_TARGET) or None,
            prehook_authorizer_target=env.get(Env.PREHOOK_AUTHORIZER_TARGET) or None,
        )


def _tier_limits(env: Mapping[str, str], name: str) -> str:
    from agentmem.tenancy.admission import TierLimits

    text = env.get(name) or ""
    TierLimits.parse(text, name)  # a malformed setting fails at start, not at the first request
    return text


def _positive_int(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name)
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{name} must be a whole number above 0, not {value!r}")
    return int(value)


def _signing_service(endpoint: str | None) -> str:
    """``aoss`` for an OpenSearch Serverless collection endpoint (``*.aoss.amazonaws.com``), else ``es``."""
    from urllib.parse import urlparse

    host = urlparse(endpoint or "").hostname or ""
    return OPENSEARCH_SERVERLESS_SERVICE if host.endswith(OPENSEARCH_SERVERLESS_HOST_SUFFIX) else "es"


def _choice(env: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    """The variable's value (or ``default`` when unset), refused unless it is one of ``allowed``."""
    value = env.get(name) or default
    if value not in allowed:
        raise ValueError(f"{name} must be {', '.join(allowed[:-1])} or {allowed[-1]}, not {value!r}")
    return value


def _positive_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """The variable's number of seconds (or ``default`` when unset), refused unless a positive number."""
    value = env.get(name)
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return seconds


_DEFAULTS = Settings()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()
