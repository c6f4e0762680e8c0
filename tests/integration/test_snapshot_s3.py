"""Snapshots in the cloud's shape (issue 35, point 1), on S3 and SQS in moto and both tables: a search that
read a user's partition whole asks the snapshot function's queue; the function (functions/snapshots/handler.py)
writes the snapshot to the bucket; a process new to the user then loads it with one S3 GET and one read of
the table; the user's erasure leaves no object behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agentmem import capacity
from agentmem.container import Container, set_container
from agentmem.keys import Scope
from agentmem.search.snapshots import snapshot_key
from agentmem.settings import Settings
from agentmem.stores.table import Table
from functions.snapshots.handler import handler as snapshot_handler
from tests.support import ApiClient, scope_path

BUCKET = "agent-memory-snapshots-test"
USER = Scope("app", "ana")


@pytest.fixture
def cloud(table: Table) -> Iterator[dict[str, Any]]:
    with mock_aws():
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="snapshots")["QueueUrl"]
        settings = Settings(
            embedder="hashing",
            embedding_dimension=64,
            deletion_drain_seconds=0,
            snapshots="s3",
            snapshot_bucket=BUCKET,
            snapshot_queue_url=queue,
            aws_region="us-east-1",
        )
        yield {"settings": settings, "queue": queue, "table": table}
        set_container(None)


def _container(cloud: dict[str, Any]) -> Container:
    """A fresh process: its own held indexes."""
    built = Container(cloud["settings"], table=cloud["table"])
    set_container(built)
    return built


def _deliver(cloud: dict[str, Any]) -> dict[str, Any]:
    """What the queue's event source mapping would hand the snapshot function."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    messages = sqs.receive_message(QueueUrl=cloud["queue"], MaxNumberOfMessages=10).get("Messages", [])
    records = [{"eventSource": "aws:sqs", "messageId": m["MessageId"], "body": m["Body"]} for m in messages]
    return snapshot_handler({"Records": records}, _Context())  # type: ignore[no-any-return]


class _Context:
    """What Lambda passes the handler (Powertools' logger reads it)."""

    function_name = "snapshots"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:snapshots"
    memory_limit_in_mb = 1024
    aws_request_id = "request"
    log_group_name = "/aws/lambda/snapshots"
    log_stream_name = "test"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 60_000


def _objects() -> list[str]:
    listed = boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket=BUCKET)
    return [item["Key"] for item in listed.get("Contents", [])]


def test_the_snapshot_function_writes_what_a_cold_load_then_reads_in_one_request(cloud: dict[str, Any]) -> None:
    _container(cloud)
    api = ApiClient()
    entries = [{"content": {"role": "user", "parts": [{"text": f"note {n} about the garden"}]}} for n in range(300)]
    assert api.put(scope_path("app", "ana") + "/sessions/s1/memories", {"entries": entries}).status == 200
    # Given a search that read the partition whole: it asked the queue, and the function wrote the snapshot
    assert api.post(scope_path("app", "ana") + "/memories/search", {"query": "garden"}).status == 200
    assert _deliver(cloud) == {"batchItemFailures": []}
    assert _objects() == [snapshot_key(USER.partition)]
    # When a process new to the user searches
    fresh = _container(cloud)
    gets: list[str] = []
    s3 = fresh.snapshots.client  # type: ignore[union-attr]
    s3.meta.events.register("provide-client-params.s3.GetObject", lambda params, **_: gets.append(params["Key"]))
    with capacity.measuring() as load:
        held = fresh.table_index.held(USER.partition)
    # Then it read one object and one item of the table, and holds every entry
    assert len(held) == 300
    assert gets == [snapshot_key(USER.partition)]
    assert sum(load.calls.values()) == 1
    # And a second delivery of the same request writes nothing new (the snapshot is current)
    boto3.client("sqs", region_name="us-east-1").send_message(QueueUrl=cloud["queue"], MessageBody=USER.partition)
    assert _deliver(cloud) == {"batchItemFailures": []}


def test_an_erasure_removes_the_users_snapshots(cloud: dict[str, Any]) -> None:
    container = _container(cloud)
    api = ApiClient()
    for project in (None, "p1"):
        in_project = {"project_id": project} if project else {}
        body = {"entries": [{"content": {"role": "user", "parts": [{"text": "a secret recipe"}]}}], **in_project}
        assert api.put(scope_path("app", "ana") + "/sessions/s1/memories", body).status == 200
        search = {"query": "recipe", **in_project}
        assert api.post(scope_path("app", "ana") + "/memories/search", search).status == 200
    _deliver(cloud)
    assert len(_objects()) == 2
    reply = api.delete(scope_path("app", "ana"))
    assert reply.status == 202, reply.body
    runner = container.deletion_runner
    assert runner.wait(60)  # type: ignore[attr-defined]
    status = api.get(scope_path("app", "ana") + f"/deletions/{reply.body['deletion_id']}").body
    assert status["status"] == "SUCCEEDED", status
    assert _objects() == []
