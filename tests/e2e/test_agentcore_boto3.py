"""boto3's own ``bedrock-agentcore`` client against the real local server (``/agentcore``), on SQLite and on
DynamoDB (moto over HTTP): every data-plane operation, errors in the model's shape, bad input writing
nothing, erasure and export through the REST API, and metering. botocore checks what it sends against
its model and parses what comes back by it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from tests.e2e.agentcore_support import TABLES, agentcore_client, serving
from tests.e2e.conftest import LiveServer

pytestmark = pytest.mark.xdist_group("agentcore")


@pytest.fixture(scope="module", params=TABLES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with serving(request.param, tmp_path_factory.mktemp("agentcore")) as running:
        yield running


def agentcore(server: LiveServer) -> Any:
    return agentcore_client(server)


def memory_id() -> str:
    return f"agentcore-{uuid.uuid4().hex[:12]}"


def said(text: str, role: str = "USER") -> dict[str, Any]:
    return {"conversational": {"content": {"text": text}, "role": role}}


def error_of(call: Any, **params: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as raised:
        call(**params)
    return raised.value.response  # type: ignore[no-any-return]


def test_events_sessions_and_actors(server: LiveServer) -> None:
    client = agentcore(server)
    memory = memory_id()
    start = time.time()
    # Given a conversation of two events, one with a blob and metadata, and an event on a branch
    first = client.create_event(
        memoryId=memory,
        actorId="alice",
        sessionId="trip-1",
        eventTimestamp=start,
        payload=[said("I am planning a sailing trip to Norway"), {"blob": {"plan": ["fjords", 3]}}],
        metadata={"topic": {"stringValue": "travel"}},
    )["event"]
    second = client.create_event(
        memoryId=memory,
        actorId="alice",
        sessionId="trip-1",
        eventTimestamp=start + 1,
        payload=[said("Norway in June is lovely", "ASSISTANT")],
    )["event"]
    forked = client.create_event(
        memoryId=memory,
        actorId="alice",
        sessionId="trip-1",
        eventTimestamp=start + 2,
        payload=[said("What about Iceland instead?")],
        branch={"name": "iceland", "rootEventId": first["eventId"]},
    )["event"]
    client.create_event(memoryId=memory, actorId="bob", sessionId="s-9", eventTimestamp=start, payload=[said("hello")])
    # Then CreateEvent answers the event as stored, and GetEvent gives it back with its payload kept as it came
    assert first["sessionId"] == "trip-1"
    assert first["payload"][1] == {"blob": {"plan": ["fjords", 3]}}
    got = client.get_event(memoryId=memory, actorId="alice", sessionId="trip-1", eventId=first["eventId"])["event"]
    assert got["payload"] == first["payload"]
    assert got["metadata"] == {"topic": {"stringValue": "travel"}}
    assert abs(got["eventTimestamp"].timestamp() - start) < 0.002
    # And ListEvents lists the session newest first, pages with nextToken, and filters by metadata and branch
    listed = client.list_events(memoryId=memory, actorId="alice", sessionId="trip-1")["events"]
    assert [e["eventId"] for e in listed] == [forked["eventId"], second["eventId"], first["eventId"]]
    page = client.list_events(memoryId=memory, actorId="alice", sessionId="trip-1", maxResults=2)
    rest = client.list_events(
        memoryId=memory, actorId="alice", sessionId="trip-1", maxResults=2, nextToken=page["nextToken"]
    )
    assert [e["eventId"] for e in page["events"] + rest["events"]] == [e["eventId"] for e in listed]
    assert "nextToken" not in rest
    tagged = client.list_events(
        memoryId=memory,
        actorId="alice",
        sessionId="trip-1",
        filter={
            "eventMetadata": [
                {
                    "left": {"metadataKey": "topic"},
                    "operator": "EQUALS_TO",
                    "right": {"metadataValue": {"stringValue": "travel"}},
                }
            ]
        },
    )["events"]
    assert [e["eventId"] for e in tagged] == [first["eventId"]]
    branch = {"name": "iceland", "includeParentBranches": False}
    only = client.list_events(memoryId=memory, actorId="alice", sessionId="trip-1", filter={"branch": branch})
    assert [e["eventId"] for e in only["events"]] == [forked["eventId"]]
    assert only["events"][0]["branch"] == {"name": "iceland", "rootEventId": first["eventId"]}
    branch["includeParentBranches"] = True
    lineage = client.list_events(memoryId=memory, actorId="alice", sessionId="trip-1", filter={"branch": branch})
    assert [e["eventId"] for e in lineage["events"]] == [forked["eventId"], first["eventId"]]
    bare = client.list_events(memoryId=memory, actorId="alice", sessionId="trip-1", includePayloads=False)
    assert all(e["payload"] == [] for e in bare["events"])
    # And the actor's sessions and the memory's actors are listed
    sessions = client.list_sessions(memoryId=memory, actorId="alice")["sessionSummaries"]
    assert [(s["sessionId"], s["actorId"]) for s in sessions] == [("trip-1", "alice")]
    actors = client.list_actors(memoryId=memory)["actorSummaries"]
    assert sorted(a["actorId"] for a in actors) == ["alice", "bob"]
    first_actor = client.list_actors(memoryId=memory, maxResults=1)
    assert len(first_actor["actorSummaries"]) == 1
    assert client.list_actors(memoryId=memory, nextToken=first_actor["nextToken"])["actorSummaries"]
    # When an event is deleted / Then it is gone from GetEvent and ListEvents
    deleted = client.delete_event(memoryId=memory, actorId="alice", sessionId="trip-1", eventId=second["eventId"])
    assert deleted["eventId"] == second["eventId"]
    missing = error_of(
        client.get_event, memoryId=memory, actorId="alice", sessionId="trip-1", eventId=second["eventId"]
    )
    assert missing["Error"]["Code"] == "ResourceNotFoundException"
    assert missing["ResponseMetadata"]["HTTPStatusCode"] == 404
    # And an event is found only in its own session
    elsewhere = error_of(
        client.get_event, memoryId=memory, actorId="alice", sessionId="other", eventId=first["eventId"]
    )
    assert elsewhere["Error"]["Code"] == "ResourceNotFoundException"


def test_memory_records(server: LiveServer) -> None:
    client = agentcore(server)
    memory = memory_id()
    now = time.time()
    # Given records in two namespaces of one actor, with typed metadata, and one of another actor
    created = client.batch_create_memory_records(
        memoryId=memory,
        records=[
            {
                "requestIdentifier": "sea",
                "namespaces": ["/facts/alice/"],
                "content": {"text": "Alice is learning to sail on the North Sea"},
                "timestamp": now,
                "memoryStrategyId": "facts",
                "metadata": {
                    "confidence": {"numberValue": 0.9},
                    "tags": {"stringListValue": ["hobby", "sea"]},
                    "seen": {"dateTimeValue": now},
                },
            },
            {
                "requestIdentifier": "tea",
                "namespaces": ["/facts/alice/"],
                "content": {"text": "Alice drinks green tea every morning"},
                "timestamp": now + 1,
                "metadata": {"confidence": {"numberValue": 0.4}},
            },
            {
                "requestIdentifier": "pref",
                "namespaces": ["/strategies/prefs/actors/alice/"],
                "content": {"text": "Alice prefers window seats"},
                "timestamp": now,
            },
            {
                "requestIdentifier": "bob",
                "namespaces": ["/facts/bob/"],
                "content": {"text": "Bob also sails on the sea"},
                "timestamp": now,
            },
        ],
    )
    assert created["failedRecords"] == []
    ids = {r["requestIdentifier"]: r["memoryRecordId"] for r in created["successfulRecords"]}
    assert all(r["status"] == "SUCCEEDED" for r in created["successfulRecords"])
    # Then GetMemoryRecord gives each back with its namespace, strategy and metadata
    record = client.get_memory_record(memoryId=memory, memoryRecordId=ids["sea"])["memoryRecord"]
    assert record["content"] == {"text": "Alice is learning to sail on the North Sea"}
    assert record["namespaces"] == ["/facts/alice/"]
    assert record["memoryStrategyId"] == "facts"
    assert record["metadata"]["confidence"] == {"numberValue": 0.9}
    assert record["metadata"]["tags"] == {"stringListValue": ["hobby", "sea"]}
    assert abs(record["metadata"]["seen"]["dateTimeValue"].timestamp() - now) < 0.002
    # And RetrieveMemoryRecords ranks the actor's records of that namespace only, with a score
    found = client.retrieve_memory_records(
        memoryId=memory, namespace="/facts/alice/", searchCriteria={"searchQuery": "sailing the sea", "topK": 5}
    )["memoryRecordSummaries"]
    assert found[0]["memoryRecordId"] == ids["sea"]
    assert {r["memoryRecordId"] for r in found} <= {ids["sea"], ids["tea"]}
    assert all(0 <= r["score"] <= 1 for r in found)
    # And a namespace path reaches the records under it; metadata filters narrow both calls
    under = client.retrieve_memory_records(
        memoryId=memory, namespacePath="/strategies/prefs/actors/alice", searchCriteria={"searchQuery": "seats"}
    )["memoryRecordSummaries"]
    assert [r["memoryRecordId"] for r in under] == [ids["pref"]]
    above = error_of(  # a path above the actors names none: whose records to search is not known
        client.retrieve_memory_records,
        memoryId=memory,
        namespacePath="/strategies/prefs/",
        searchCriteria={"searchQuery": "seats"},
    )
    assert above["Error"]["Code"] == "ValidationException"
    confident = {
        "left": {"metadataKey": "confidence"},
        "operator": "GREATER_THAN",
        "right": {"metadataValue": {"numberValue": 0.5}},
    }
    filtered = client.retrieve_memory_records(
        memoryId=memory,
        namespacePath="/facts/alice/",
        searchCriteria={"searchQuery": "Alice", "metadataFilters": [confident]},
    )["memoryRecordSummaries"]
    assert [r["memoryRecordId"] for r in filtered] == [ids["sea"]]
    listed = client.list_memory_records(memoryId=memory, namespace="/facts/alice/")["memoryRecordSummaries"]
    assert [r["memoryRecordId"] for r in listed] == [ids["tea"], ids["sea"]]
    tagged = client.list_memory_records(
        memoryId=memory,
        namespace="/facts/alice/",
        metadataFilters=[
            {
                "left": {"metadataKey": "tags"},
                "operator": "CONTAINS",
                "right": {"metadataValue": {"stringValue": "sea"}},
            }
        ],
    )["memoryRecordSummaries"]
    assert [r["memoryRecordId"] for r in tagged] == [ids["sea"]]
    by_strategy = client.list_memory_records(memoryId=memory, namespace="/facts/alice/", memoryStrategyId="facts")
    assert [r["memoryRecordId"] for r in by_strategy["memoryRecordSummaries"]] == [ids["sea"]]
    paged = client.list_memory_records(memoryId=memory, namespace="/facts/alice/", maxResults=1)
    assert len(paged["memoryRecordSummaries"]) == 1
    assert client.list_memory_records(memoryId=memory, namespace="/facts/alice/", nextToken=paged["nextToken"])[
        "memoryRecordSummaries"
    ]
    # When a record is updated / Then it keeps its id and creation time, and is found by its new text
    updated = client.batch_update_memory_records(
        memoryId=memory,
        records=[{"memoryRecordId": ids["tea"], "timestamp": now + 5, "content": {"text": "Alice switched to coffee"}}],
    )
    assert [r["memoryRecordId"] for r in updated["successfulRecords"]] == [ids["tea"]]
    again = client.get_memory_record(memoryId=memory, memoryRecordId=ids["tea"])["memoryRecord"]
    assert again["content"] == {"text": "Alice switched to coffee"}
    assert again["metadata"] == {"confidence": {"numberValue": 0.4}}
    coffee = client.retrieve_memory_records(
        memoryId=memory, namespace="/facts/alice/", searchCriteria={"searchQuery": "coffee"}
    )["memoryRecordSummaries"]
    assert coffee[0]["memoryRecordId"] == ids["tea"]
    assert coffee[0]["content"] == {"text": "Alice switched to coffee"}
    # When records are deleted, one by one and in a batch / Then they are gone; an unknown id fails alone
    assert client.delete_memory_record(memoryId=memory, memoryRecordId=ids["pref"])["memoryRecordId"] == ids["pref"]
    batch = client.batch_delete_memory_records(
        memoryId=memory, records=[{"memoryRecordId": ids["tea"]}, {"memoryRecordId": ids["pref"]}]
    )
    assert [r["memoryRecordId"] for r in batch["successfulRecords"]] == [ids["tea"]]
    assert [(r["memoryRecordId"], r["errorCode"]) for r in batch["failedRecords"]] == [(ids["pref"], 404)]
    gone = error_of(client.get_memory_record, memoryId=memory, memoryRecordId=ids["tea"])
    assert gone["Error"]["Code"] == "ResourceNotFoundException"


def test_a_retry_with_the_same_client_token_writes_once(server: LiveServer) -> None:
    client = agentcore(server)
    memory = memory_id()
    event = {"memoryId": memory, "actorId": "frank", "sessionId": "s1", "eventTimestamp": time.time()}
    # When CreateEvent is sent twice with one clientToken (as botocore retries it)
    first = client.create_event(**event, payload=[said("once")], clientToken="token-1")["event"]
    again = client.create_event(**event, payload=[said("once")], clientToken="token-1")["event"]
    # Then the second answer is the first one, and the session holds one event
    assert again == first
    assert len(client.list_events(memoryId=memory, actorId="frank", sessionId="s1")["events"]) == 1
    # And the token with another request is refused as the model says
    reused = error_of(client.create_event, **event, payload=[said("twice")], clientToken="token-1")
    assert reused["Error"]["Code"] == "ValidationException"
    assert reused["reason"] == "IdempotentParameterMismatchException"
    # And a batch of records retried with its token is written once
    record = {"requestIdentifier": "r", "namespaces": ["/facts/frank/"], "content": {"text": "x"}, "timestamp": 1}
    made = client.batch_create_memory_records(memoryId=memory, records=[record], clientToken="token-2")
    redo = client.batch_create_memory_records(memoryId=memory, records=[record], clientToken="token-2")
    assert redo["successfulRecords"] == made["successfulRecords"]
    assert len(client.list_memory_records(memoryId=memory, namespace="/facts/frank/")["memoryRecordSummaries"]) == 1


def test_without_a_model_extraction_jobs_say_a_model_is_needed(server: LiveServer) -> None:
    client = agentcore(server)
    memory = memory_id()
    # When a job is started on a server with no model (MEMORY_MODEL unset) / Then the ValidationException says so
    error = error_of(client.start_memory_extraction_job, memoryId=memory, extractionJob={"jobId": "job-1"})
    assert error["Error"]["Code"] == "ValidationException"
    assert "needs a model" in error["Error"]["Message"]
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    # And there are no failed jobs to list (extraction never ran), and IngestData says it is not offered
    assert client.list_memory_extraction_jobs(memoryId=memory)["jobs"] == []
    ingested = {"inline": {"payload": [{"conversational": {"content": {"text": "hello"}, "role": "USER"}}]}}
    when = time.time()
    ingest = error_of(client.ingest_data, memoryId=memory, actorId="alice", contentTimestamp=when, source=ingested)
    assert "IngestData is not offered" in ingest["Error"]["Message"]


def test_bad_input_is_a_validation_exception_and_writes_nothing(server: LiveServer) -> None:
    client = agentcore(server)
    memory = memory_id()
    http = httpx.Client(base_url=f"{server.url}/agentcore", timeout=30)
    event = {"actorId": "carol", "sessionId": "s1", "eventTimestamp": time.time(), "payload": [said("hi")]}
    cases: list[dict[str, Any]] = [
        {**event, "payload": [{"conversational": {"content": {"text": "hi"}, "role": "BOSS"}}]},  # no such role
        {**event, "payload": [{**said("hi"), "blob": "x"}]},  # two members of a union
        {**event, "actorId": "-starts-with-a-dash"},  # outside the model's pattern
        {**event, "sessionId": "x" * 101},
        {**event, "metadata": {"has space": {"stringValue": "v"}}},  # a key this service cannot keep
        {**event, "metadata": {"agentcore.kind": {"stringValue": "record"}}},  # a key this service keeps
        {**event, "branch": {"name": "b", "rootEventId": "not-an-id"}},
        {k: v for k, v in event.items() if k != "eventTimestamp"},
    ]
    for body in cases:
        # When an invalid event is sent / Then 400 ValidationException with its reason, and nothing is stored
        reply = http.post(f"/memories/{memory}/events", json=body)
        assert reply.status_code == 400, (body, reply.text)
        assert reply.headers["x-amzn-ErrorType"] == "ValidationException"
        assert reply.json()["reason"] in ("FieldValidationFailed", "CannotParse")
    unparsable = http.post(f"/memories/{memory}/events", content=b"{not json")
    assert unparsable.status_code == 400
    assert unparsable.json()["reason"] == "CannotParse"
    # And a batch holding one bad record writes none of them
    good = {"requestIdentifier": "ok", "namespaces": ["/facts/carol/"], "content": {"text": "fine"}, "timestamp": 1}
    for bad in (
        {**good, "requestIdentifier": "bad", "namespaces": ["/global/"]},  # names no actor
        {**good, "requestIdentifier": "bad", "metadata": {"k": {"stringValue": "a", "numberValue": 1}}},
        {**good, "requestIdentifier": "bad", "content": {"text": "x" * 16_001}},
    ):
        refused = http.post(f"/memories/{memory}/memoryRecords/batchCreate", json={"records": [good, bad]})
        assert refused.status_code == 400, refused.text
        assert refused.headers["x-amzn-ErrorType"] == "ValidationException"
    no_actor = error_of(
        client.batch_create_memory_records,
        memoryId=memory,
        records=[good, {**good, "requestIdentifier": "bad", "namespaces": ["/global/"]}],
    )
    assert no_actor["Error"]["Code"] == "ValidationException"
    assert "names no actor" in no_actor["Error"]["Message"]
    listed = client.list_memory_records(memoryId=memory, namespace="/facts/carol/")["memoryRecordSummaries"]
    assert listed == []
    assert client.list_events(memoryId=memory, actorId="carol", sessionId="s1")["events"] == []
    assert client.list_actors(memoryId=memory)["actorSummaries"] == []
    # And unknown ids are not found, unknown operations are refused in the model's shape too
    bad_record = error_of(client.get_memory_record, memoryId=memory, memoryRecordId="mem-" + "x" * 40)
    assert bad_record["Error"]["Code"] == "ResourceNotFoundException"
    unknown = http.post(f"/memories/{memory}/nothing-here", json={})
    assert unknown.headers["x-amzn-ErrorType"] == "UnknownOperationException"
    http.close()


def test_erasure_export_and_metering_reach_what_agentcore_wrote(server: LiveServer) -> None:
    client = agentcore(server)
    memory = memory_id()
    # Given an event and a record of one actor, written through the AgentCore API
    event = client.create_event(
        memoryId=memory, actorId="dave", sessionId="s1", eventTimestamp=time.time(), payload=[said("I own a red kayak")]
    )["event"]
    record = client.batch_create_memory_records(
        memoryId=memory,
        records=[
            {
                "requestIdentifier": "r",
                "namespaces": ["/facts/dave/"],
                "content": {"text": "Dave kayaks"},
                "timestamp": time.time(),
            }
        ],
    )["successfulRecords"][0]["memoryRecordId"]
    scope = f"{server.url}/v1/apps/{memory}/users/dave"
    with httpx.Client(timeout=60) as http:
        # Then both are in the user's export, as memory entries
        exported = http.get(f"{scope}/export").json()["entries"]
        texts = sorted(e["content"]["parts"][0]["text"] for e in exported)
        assert texts == ["Dave kayaks", "I own a red kayak"]
        # And the app's usage counts the calls and the items stored
        usage = http.get(f"{server.url}/v1/apps/{memory}/usage").json()["days"][0]
        assert usage["requests"] == 4  # CreateEvent, BatchCreateMemoryRecords, the export, this read
        assert usage["items_stored"] == 2
        # When the user is erased through the REST API
        started = http.delete(scope)
        assert started.status_code == 202
        deletion = started.json()["deletion_id"]
        deadline = time.monotonic() + 120
        while http.get(f"{scope}/deletions/{deletion}").json()["status"] == "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert http.get(f"{scope}/deletions/{deletion}").json()["status"] == "SUCCEEDED"
        assert http.get(f"{scope}/export").json()["entries"] == []
    # Then the AgentCore API finds nothing of the actor either, not even in the memory's actor list
    assert client.list_events(memoryId=memory, actorId="dave", sessionId="s1")["events"] == []
    assert error_of(client.get_memory_record, memoryId=memory, memoryRecordId=record)["Error"]["Code"] == (
        "ResourceNotFoundException"
    )
    gone = error_of(client.get_event, memoryId=memory, actorId="dave", sessionId="s1", eventId=event["eventId"])
    assert gone["Error"]["Code"] == "ResourceNotFoundException"
    assert client.list_actors(memoryId=memory)["actorSummaries"] == []
    assert client.list_sessions(memoryId=memory, actorId="dave")["sessionSummaries"] == []


def test_a_memory_arn_names_the_same_app(server: LiveServer) -> None:
    client = agentcore(server)
    # Given an app whose name is shorter than the 12 characters botocore requires of a memory id
    arn = "arn:aws:bedrock-agentcore:us-east-1:123456789012:memory/short"
    client.create_event(memoryId=arn, actorId="erin", sessionId="s1", eventTimestamp=time.time(), payload=[said("hi")])
    # Then its ARN reaches it, and the REST API sees the event in app "short"
    assert [a["actorId"] for a in client.list_actors(memoryId=arn)["actorSummaries"]] == ["erin"]
    listed = httpx.get(f"{server.url}/v1/apps/short/users/erin/memories", timeout=30).json()["entries"]
    assert [e["content"]["parts"][0]["text"] for e in listed] == ["hi"]


def test_an_event_past_the_users_limit_is_a_service_quota_exceeded(tmp_path: Any) -> None:
    # Given a server on the table backend whose users hold at most two entries, and an actor holding two
    with serving("sqlite", tmp_path, {"MEMORY_MAX_ENTRIES": "2"}) as limited:
        client = agentcore(limited)
        memory = memory_id()
        for text in ("first", "second"):
            client.create_event(
                memoryId=memory, actorId="dana", sessionId="s1", eventTimestamp=time.time(), payload=[said(text)]
            )
        # When a third event is created
        refused = error_of(
            client.create_event,
            memoryId=memory,
            actorId="dana",
            sessionId="s1",
            eventTimestamp=time.time(),
            payload=[said("third")],
        )
        # Then botocore reads AgentCore's own quota error, and the session still holds two events
        assert refused["Error"]["Code"] == "ServiceQuotaExceededException"
        assert refused["ResponseMetadata"]["HTTPStatusCode"] == 402
        assert "search_backend=opensearch" in refused["Error"]["Message"]
        listed = client.list_events(memoryId=memory, actorId="dana", sessionId="s1", includePayloads=True)["events"]
        assert len(listed) == 2
