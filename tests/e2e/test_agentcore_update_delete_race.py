"""A record deleted stays deleted when an update races the delete (issue 33, point 1), as the review showed it:
two server processes over one store (one SQLite file; one DynamoDB in a moto server), boto3's own
``bedrock-agentcore`` client on each, an update sent to one and a delete to the other at the same moment,
40 rounds. Before the fix the record came back in 3 rounds on SQLite and 24 of 30 on DynamoDB.

Whoever wins, once the delete has answered, no server serves the record; the update either finished
before the delete (SUCCEEDED) or reports the record FAILED, not found."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.e2e.agentcore_support import TABLES, agentcore_client, serving_many
from tests.e2e.conftest import LiveServer

pytestmark = pytest.mark.xdist_group("agentcore")

ROUNDS = 40
MEMORY = "race-memory-0001"
NAMESPACE = "/facts/alice"


@pytest.fixture(scope="module", params=TABLES)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LiveServer]]:
    with serving_many(request.param, Path(tmp_path_factory.mktemp("race")), 2) as running:
        yield running


def served(client: Any, record: str) -> bool:
    """Whether GetMemoryRecord finds the record (anything but found or not found fails the test)."""
    try:
        client.get_memory_record(memoryId=MEMORY, memoryRecordId=record)
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return False
        raise
    return True


def race(updater: Any, deleter: Any, record: str, text: str) -> dict[str, Any]:
    """An update of ``record`` through one server and its delete through the other, sent at the same moment."""
    start = threading.Barrier(2)
    answers: dict[str, Any] = {}

    def update() -> None:
        start.wait()
        change = {"memoryRecordId": record, "timestamp": time.time(), "content": {"text": text}}
        answers["update"] = updater.batch_update_memory_records(memoryId=MEMORY, records=[change])

    def delete() -> None:
        start.wait()
        answers["delete"] = deleter.delete_memory_record(memoryId=MEMORY, memoryRecordId=record)

    threads = [threading.Thread(target=update), threading.Thread(target=delete)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


def test_a_deleted_record_never_comes_back(servers: list[LiveServer]) -> None:
    updater, deleter = (agentcore_client(s) for s in servers)
    came_back: list[int] = []
    outcomes: set[str] = set()
    for round_ in range(ROUNDS):
        created = updater.batch_create_memory_records(
            memoryId=MEMORY,
            records=[
                {
                    "requestIdentifier": "r",
                    "namespaces": [NAMESPACE],
                    "content": {"text": f"round {round_}: I sail a small boat"},
                    "timestamp": time.time(),
                }
            ],
        )
        record = created["successfulRecords"][0]["memoryRecordId"]
        answers = race(updater, deleter, record, f"round {round_}: I sail a bigger boat now")
        # Given the delete answered 200
        assert answers["delete"]["memoryRecordId"] == record
        update_answer = answers["update"]
        outcomes.update(r["status"] for r in update_answer["successfulRecords"])
        outcomes.update(f"{r['status']} {r.get('errorCode')}" for r in update_answer["failedRecords"])
        # Then neither server serves the record, nor lists or retrieves it
        if served(updater, record) or served(deleter, record):
            came_back.append(round_)
        listed = deleter.list_memory_records(memoryId=MEMORY, namespace=NAMESPACE)["memoryRecordSummaries"]
        if any(r["memoryRecordId"] == record for r in listed):
            came_back.append(round_)
    assert came_back == []
    # And an update that lost answered the record FAILED, not found (never a server error)
    assert outcomes <= {"SUCCEEDED", "FAILED 404"}, outcomes
