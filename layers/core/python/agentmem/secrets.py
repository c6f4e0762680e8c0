"""Secrets read at run time from AWS Secrets Manager (never put in a function's environment in clear)."""

from __future__ import annotations

from functools import lru_cache

from agentmem.errors import Unavailable


@lru_cache(maxsize=8)
def read_secret(secret_arn: str, region_name: str | None = None) -> str:
    """The secret's string, fetched once per process (boto3 imported on first use)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client = boto3.client("secretsmanager", region_name=region_name)
        return str(client.get_secret_value(SecretId=secret_arn)["SecretString"])
    except (BotoCoreError, ClientError) as exc:
        raise Unavailable(f"cannot read the secret {secret_arn.rsplit(':', 1)[-1]}: {type(exc).__name__}") from exc
