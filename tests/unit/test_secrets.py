"""The receipt key read from Secrets Manager (moto) when its ARN is configured."""

from __future__ import annotations

import boto3
from moto import mock_aws

from agentmem.secrets import read_secret
from agentmem.settings import Settings


@mock_aws
def test_the_receipt_key_comes_from_secrets_manager_when_an_arn_is_set() -> None:
    arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="receipt-key", SecretString="s3cr3t-from-the-vault"
    )["ARN"]
    read_secret.cache_clear()
    settings = Settings.from_env({"MEMORY_RECEIPT_KEY_SECRET_ARN": arn, "AWS_REGION": "us-east-1"})
    assert settings.resolved_receipt_key() == b"s3cr3t-from-the-vault"


def test_without_an_arn_the_configured_key_is_used() -> None:
    assert Settings.from_env({"MEMORY_RECEIPT_KEY": "local-key"}).resolved_receipt_key() == b"local-key"
