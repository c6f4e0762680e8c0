"""Forged page tokens (issue 33, point 5): every AgentCore list operation answers a token it did not give with
a ValidationException, on SQLite and on DynamoDB (moto over HTTP) through boto3's own clients: never a 500, and
never a 503 "DynamoDB is unreachable" that botocore would retry and an operator would read as an outage."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.e2e.agentcore_support import TABLES, agentcore_client, serving
from tests.e2e.conftest import LiveServer

pytestmark = pytest.mark.xdist_group("agentcore")

MEMORY = "forged-token-memory"


@pytest.fixture(scope="module", params=TABLES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with serving(request.param, tmp_path_factory.mktemp("tokens")) as running:
        client = agentcore_client(running)
        said = [{"conversational": {"content": {"text": "hello"}, "role": "USER"}}]
        for n in range(3):
            client.create_event(
                memoryId=MEMORY, actorId=f"a{n}", sessionId=f"s{n}", eventTimestamp=time.time(), payload=said
            )
        yield running


def token(state: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode().rstrip("=")


FORGED = [
    "not-base64-@@@",
    token(["a list"]),
    token({"after": 5}),
    token({"after": None}),
    token({"after": "Z#outside-the-prefix"}),
    token({"after": "x" * 3000}),
    token({"after": "01HZZZZZZZZZZZZZZZZZZZZZZZ", "branches": "main"}),
    token({"after": "01HZZZZZZZZZZZZZZZZZZZZZZZ", "branches": {"main": 7}}),
    token({"after": "\x00\x01"}),
    token({"after": "ACTOR#", "extra": 1}),
]


def calls(server: LiveServer) -> list[tuple[str, Any]]:
    data = agentcore_client(server)
    return [
        ("ListEvents", lambda t: data.list_events(memoryId=MEMORY, actorId="a0", sessionId="s0", nextToken=t)),
        ("ListSessions", lambda t: data.list_sessions(memoryId=MEMORY, actorId="a0", nextToken=t)),
        ("ListActors", lambda t: data.list_actors(memoryId=MEMORY, nextToken=t)),
        ("ListMemoryRecords", lambda t: data.list_memory_records(memoryId=MEMORY, namespace="/f/a0/", nextToken=t)),
        ("ListMemoryExtractionJobs", lambda t: data.list_memory_extraction_jobs(memoryId=MEMORY, nextToken=t)),
    ]


def control(server: LiveServer) -> Any:
    return boto3.client(
        "bedrock-agentcore-control",
        endpoint_url=f"{server.url}/agentcore",
        region_name="us-east-1",
        aws_access_key_id="unused",
        aws_secret_access_key="unused",
    )


@pytest.mark.parametrize("forged", ["\x00\x01", "x" * 3000])
def test_list_memories_refuses_a_token_that_cannot_be_a_memory_id(server: LiveServer, forged: str) -> None:
    with pytest.raises(ClientError) as refused:
        control(server).list_memories(nextToken=forged)
    assert refused.value.response["Error"]["Code"] == "ValidationException"


@pytest.mark.parametrize("forged", FORGED)
def test_a_forged_token_is_a_validation_exception_on_every_list(server: LiveServer, forged: str) -> None:
    for name, call in calls(server):
        with pytest.raises(ClientError) as refused:
            call(forged)
        error = refused.value.response
        assert (name, error["Error"]["Code"]) == (name, "ValidationException"), error
        assert error["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_the_tokens_it_gives_still_page(server: LiveServer) -> None:
    data = agentcore_client(server)
    first = data.list_actors(memoryId=MEMORY, maxResults=1)
    second = data.list_actors(memoryId=MEMORY, maxResults=1, nextToken=first["nextToken"])
    assert [a["actorId"] for a in first["actorSummaries"] + second["actorSummaries"]] == ["a0", "a1"]
