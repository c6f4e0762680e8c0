"""One typed settings object, read from the environment on first use and cached.

| variable | meaning | default |
|---|---|---|
| MEMORY_STORE | `sqlite` (embedded) or `dynamodb` | `dynamodb` in Lambda or with an endpoint URL, else `sqlite` |
| MEMORY_SQLITE_PATH | the SQLite file of the embedded store | `.data/memory.db` |
| MEMORY_TABLE_NAME | the DynamoDB table | `agent-memory` |
| MEMORY_DYNAMODB_ENDPOINT_URL | a DynamoDB-compatible endpoint (DynamoDB Local, moto server) | unset: AWS |
| MEMORY_AUTH | `required`: app routes need an `x-api-key` of that app; `none`: no check | `required` in Lambda |
| MEMORY_IDEMPOTENCY_TTL_SECONDS | how long an `Idempotency-Key` answer is kept | `86400` |
| MEMORY_DELETION_RUNNER | `local` (in-process) or `stepfunctions` | `stepfunctions` if the ARN is set |
| MEMORY_DELETION_STATE_MACHINE_ARN | the delete_user state machine the API starts | unset |
| MEMORY_DELETION_BATCH_SIZE | items one deletion step deletes at most | `500` |
| MEMORY_DELETION_WORKFLOW_PATH | another ASL file for the local runner (trying a change) | unset: the packaged one |
| MEMORY_RECEIPT_KEY | secret of the HMAC-SHA256 naming the user in deletion receipts | a development key: set it |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

StoreKind = Literal["sqlite", "dynamodb"]
DeletionRunnerKind = Literal["local", "stepfunctions"]
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
    deletion_runner: DeletionRunnerKind = "local"
    deletion_state_machine_arn: str | None = None
    deletion_batch_size: int = 500
    deletion_workflow_path: str | None = None
    receipt_key: str = DEVELOPMENT_RECEIPT_KEY
    auth: AuthMode = "none"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        endpoint = env.get("MEMORY_DYNAMODB_ENDPOINT_URL") or None
        in_lambda = bool(env.get("AWS_LAMBDA_FUNCTION_NAME"))
        store = env.get("MEMORY_STORE") or ("dynamodb" if endpoint or in_lambda else "sqlite")
        if store not in ("sqlite", "dynamodb"):
            raise ValueError(f"MEMORY_STORE must be sqlite or dynamodb, not {store!r}")
        state_machine = env.get("MEMORY_DELETION_STATE_MACHINE_ARN") or None
        runner = env.get("MEMORY_DELETION_RUNNER") or ("stepfunctions" if state_machine else "local")
        if runner not in ("local", "stepfunctions"):
            raise ValueError(f"MEMORY_DELETION_RUNNER must be local or stepfunctions, not {runner!r}")
        if runner == "stepfunctions" and not state_machine:
            raise ValueError("MEMORY_DELETION_RUNNER=stepfunctions needs MEMORY_DELETION_STATE_MACHINE_ARN")
        auth = env.get("MEMORY_AUTH") or ("required" if in_lambda else "none")
        if auth not in ("none", "required"):
            raise ValueError(f"MEMORY_AUTH must be none or required, not {auth!r}")
        return cls(
            store=store,  # type: ignore[arg-type]
            sqlite_path=env.get("MEMORY_SQLITE_PATH") or _DEFAULTS.sqlite_path,
            table_name=env.get("MEMORY_TABLE_NAME") or _DEFAULTS.table_name,
            dynamodb_endpoint_url=endpoint,
            aws_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            idempotency_ttl_seconds=int(env.get("MEMORY_IDEMPOTENCY_TTL_SECONDS") or _DEFAULTS.idempotency_ttl_seconds),
            deletion_runner=runner,  # type: ignore[arg-type]
            deletion_state_machine_arn=state_machine,
            deletion_batch_size=int(env.get("MEMORY_DELETION_BATCH_SIZE") or _DEFAULTS.deletion_batch_size),
            deletion_workflow_path=env.get("MEMORY_DELETION_WORKFLOW_PATH") or None,
            receipt_key=env.get("MEMORY_RECEIPT_KEY") or DEVELOPMENT_RECEIPT_KEY,
            auth=auth,  # type: ignore[arg-type]
        )


_DEFAULTS = Settings()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()
