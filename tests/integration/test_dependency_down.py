"""A store that cannot be reached answers 503 with the error body, never a 500."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.dynamo_table import DynamoTable
from tests.e2e.conftest import free_port
from tests.support import ApiClient, scope_path, text_entry


@pytest.fixture
def unreachable_api() -> Iterator[ApiClient]:
    # Given the API wired to a DynamoDB endpoint where nothing listens
    client = boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=0.5, read_timeout=0.5),
    )
    set_container(Container(Settings(store="dynamodb"), table=DynamoTable("agent-memory", client=client)))
    yield ApiClient()
    set_container(None)


def test_health_reports_the_table_failing_with_503(unreachable_api: ApiClient) -> None:
    reply = unreachable_api.get("/v1/health")
    assert reply.status == 503
    assert reply.body == {"status": "failing", "checks": {"table": "failing"}}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/memories", {"entry": text_entry("x")}),
        ("POST", "/memories/search", {"query": "sailing"}),
        ("GET", "/memories", None),
    ],
)
def test_routes_answer_503_when_the_table_is_down(
    unreachable_api: ApiClient, method: str, path: str, body: object
) -> None:
    reply = unreachable_api.request(method, scope_path("a", "u") + path, body)
    assert reply.status == 503
    assert reply.error_code == "dependency_unavailable"
