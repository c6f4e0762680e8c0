"""Extraction as the prod stack deploys it (extraction on, OpenSearch; tests/synthesis.py), rehearsed on moto
after the README flow: every function configured only from its template, every AWS call checked against its
role (tests/cloud/rehearsal.py).

The operator makes a key for an app and says what it learns (its memory item, through the table). A tenant
writes one message into a session through the template's gateway and API: the API writes the session's
pending row. The extraction function's stream mapping (its filter and batch size from the template) brings
it the row; one message is fewer than the app's message trigger, so the step waits for the idle trigger and
sends a delayed wake to the queue its environment names. The queue's mapping brings the wake back; the
session is idle by then (the functions' clock is held from the write to the first step, then moved past the
idle trigger: the test never assumes how fast the machine runs), so the step asks the model (Converse on the
template's inference profile, answered by a scripted tool use) and commits the fact it learnt, which the
AgentCore view then lists.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentmem.clock import format_timestamp, utc_now
from agentmem.extraction import work
from agentmem.extraction.config import AppMemories, AppMemory, Strategy
from agentmem.keys import UserRef
from agentmem.settings import Settings
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.tenancy.keys import TenantService
from tests.cloud.conftest import Flow
from tests.cloud.rehearsal import CONVERSE, Deployment, Gateway
from tests.support import text_entry
from tests.synthesis import EXTRACTION_MODEL, PROD_OPENSEARCH

pytestmark = pytest.mark.parametrize("flow", [PROD_OPENSEARCH], indirect=True)

APP = "atelier"
USER = "dora"
SESSION = "chat-1"
FACTS = Strategy("facts-0000000001", "facts", "SEMANTIC", "/facts/{actorId}/")
IDLE_SECONDS = 5
"""The app's idle trigger: the first step runs before it on the held clock (it waits), the wake after it."""
FACT = "Dora's sister Ana plays the cello."


@dataclass
class Learning:
    deployment: Deployment
    key: str
    written: Any = None
    stream_batches: list[dict[str, Any]] = field(default_factory=list)
    sent_after_first_step: list[str] = field(default_factory=list)
    """The wake messages the first step sent (the queue's resources of its SendMessage calls)."""
    wakes: list[dict[str, Any]] = field(default_factory=list)
    pending_after: dict[str, Any] | None = None
    listed: Any = None
    graph: Any = None

    def calls(self, name: str) -> list[Any]:
        role = self.deployment.functions[name].role
        return [c for c in self.deployment.recorder.calls if c.principal == role]  # type: ignore[union-attr]


def _wake_queue(d: Deployment) -> str:
    url = d.functions["extraction"].variables["MEMORY_EXTRACTION_QUEUE_URL"]
    (queue,) = [q for q in d.template.of_type("AWS::SQS::Queue") if d.template.physical[q].ref == url]
    return queue


@pytest.fixture(scope="module")
def learning(flow: Flow) -> Learning:
    d = flow.deployment
    gateway = Gateway(d)
    table = DynamoTable(d.table_name)
    # The operator: a key for the app, and what the app learns (a memory with one strategy)
    key = TenantService(table).create_key(APP).secret
    now = format_timestamp(utc_now())
    memory = AppMemory(
        APP, "learning", APP, now, now, strategies=(FACTS,), trigger_messages=2, trigger_idle_seconds=IDLE_SECONDS
    )
    AppMemories(table).put(memory)
    CONVERSE.reset()
    CONVERSE.answers["Facts"] = lambda _request: {
        "facts": [{"text": FACT, "about": "Ana", "about_type": "person", "messages": [1]}]
    }
    run = Learning(d, key)
    scope = UserRef(APP, USER).scope()
    # A tenant writes one message into a session: the API adds the session's pending row (the clock held: the
    # first step below sees the moment of the write, however long the machine takes to get there)
    d.clock.hold()
    run.written = gateway.request(
        "PUT",
        f"/v1/apps/{APP}/users/{USER}/sessions/{SESSION}/memories",
        {"entries": [text_entry("My sister Ana plays the cello", author=USER)]},
        api_key=key,
    )
    # The stream mapping brings the row to the function: fewer messages than the trigger, it waits (a wake)
    sent_before = len([c for c in run.calls("extraction") if c.action == "sqs:SendMessage"])
    run.stream_batches = d.pump_stream("extraction")
    run.sent_after_first_step = [c.resource for c in run.calls("extraction") if c.action == "sqs:SendMessage"][
        sent_before:
    ]
    # The session goes quiet past its idle trigger; the queue mapping brings it back once SQS delivers the wake
    # (its delay is real time: at most the trigger)
    d.clock.advance(IDLE_SECONDS + 1)
    try:
        deadline = time.monotonic() + IDLE_SECONDS + 60
        while time.monotonic() < deadline:
            woken = d.deliver_queue("extraction", _wake_queue(d), wait_seconds=IDLE_SECONDS + 5)
            if woken is not None:
                run.wakes.append(woken)
            run.pending_after = table.get(scope.partition, work.pending_sk(SESSION))
            if run.pending_after is None:
                break
    finally:
        d.clock.release()
    run.listed = gateway.request(
        "POST", f"/agentcore/memories/{APP}/memoryRecords", {"namespace": f"/facts/{USER}/"}, api_key=key
    )
    run.graph = gateway.request("GET", f"/v1/apps/{APP}/users/{USER}/graph/search", query={"q": "Ana"}, api_key=key)
    return run


def test_the_api_writes_the_pending_row_and_the_stream_mapping_brings_only_it(learning: Learning) -> None:
    d = learning.deployment
    assert learning.written.status == 200, learning.written.body
    # Then the mapping's filter let through pending rows only (the README flow's hundreds of records stayed out)
    delivered = d.stream_deliveries["extraction"]
    assert delivered
    for record in delivered:
        keys = record["dynamodb"]["Keys"]
        assert record["eventName"] in ("INSERT", "MODIFY"), record["eventName"]
        assert keys["sk"]["S"].startswith(work.PENDING), keys
        assert keys["pk"]["S"].startswith("S#"), keys
    ours = UserRef(APP, USER).scope().partition
    assert {r["dynamodb"]["Keys"]["pk"]["S"] for r in delivered} == {ours}
    assert all(b["batchItemFailures"] == [] for b in learning.stream_batches), learning.stream_batches


def test_a_waiting_step_wakes_the_session_through_the_queue_its_environment_names(learning: Learning) -> None:
    d = learning.deployment
    queue = _wake_queue(d)
    # Then the first step (one message, not idle yet) sent one wake, to the template's wake queue
    assert len(learning.sent_after_first_step) == 1, learning.sent_after_first_step
    assert learning.sent_after_first_step[0] == d.template.physical[queue].attributes["Arn"]
    # And the queue mapping brought it back as an SQS event naming the session; the step then learnt
    assert learning.wakes
    bodies = [json.loads(r["body"]) for w in learning.wakes for r in w["event"]["Records"]]
    assert all(b["partition"] == UserRef(APP, USER).scope().partition and b["session"] == SESSION for b in bodies)
    assert all(w["batchItemFailures"] == [] for w in learning.wakes)
    assert learning.pending_after is None, "the session's pending row is still there"


def test_the_step_asks_the_templates_model_and_the_fact_is_learnt(learning: Learning) -> None:
    # Then the model was asked through the inference profile the template names, once, for facts
    assert [r["modelId"] for r in CONVERSE.requests] == [EXTRACTION_MODEL]
    assert CONVERSE.requests[0]["toolConfig"]["toolChoice"] == {"tool": {"name": "Facts"}}
    # And the record is listed where the app's strategy puts it, and the graph knows what it is about
    assert learning.listed.status == 200, learning.listed.body
    texts = [r["content"]["text"] for r in learning.listed.body["memoryRecordSummaries"]]
    assert texts == [FACT]
    assert learning.graph.status == 200, learning.graph.body
    assert any(r["entity"]["name"] == "Ana" for r in learning.graph.body["results"])


def test_the_extraction_function_runs_with_its_templates_settings(learning: Learning) -> None:
    d = learning.deployment
    url = d.template.physical[_wake_queue(d)].ref
    extraction = Settings.from_env(d.functions["extraction"].variables)
    api = Settings.from_env(d.functions["api"].variables)
    assert (extraction.model, extraction.model_id, extraction.extraction_queue_url) == (
        "bedrock",
        EXTRACTION_MODEL,
        url,
    )
    assert (api.model, api.model_id, api.extraction_queue_url) == ("bedrock", EXTRACTION_MODEL, url)
    assert (extraction.store, extraction.embedder, extraction.vector_index) == ("dynamodb", "bedrock", "opensearch")


def test_every_call_of_extraction_is_allowed_by_its_role(learning: Learning, record_property: Any) -> None:
    d = learning.deployment
    calls = learning.calls("extraction")
    record_property(
        f"rehearsal:{d.stack} calls of extraction", "; ".join(sorted({f"{c.action} on {c.resource}" for c in calls}))
    )
    actions = {c.action for c in calls}
    # Then it read the stream, sent and received the wake, called the model and the embedder, wrote the table
    # and the vector collection: the paths this wiring gives it
    for action in (
        "dynamodb:GetRecords",
        "sqs:SendMessage",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "bedrock:InvokeModel",
        "dynamodb:PutItem",
        "aoss:WriteDocument",
    ):
        assert action in actions, action
    chat = {c.resource for c in calls if c.action == "bedrock:InvokeModel" and "nova" in c.resource}
    assert chat == {
        f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{EXTRACTION_MODEL}",
        f"arn:aws:bedrock:us-east-1::foundation-model/{EXTRACTION_MODEL.removeprefix('us.')}",
    }
    # And every one of them (and every other role's) is allowed
    assert d.violations() == []
    # And the API, which wrote the pending row, never called the chat model nor a queue
    api = learning.calls("api")
    assert not [c for c in api if c.action.startswith("sqs:") or "nova" in c.resource]
    policy = d.functions["api"].policy
    assert not policy.evaluate("bedrock:InvokeModel", next(iter(chat))).allowed
    assert not policy.evaluate("sqs:SendMessage", d.template.physical[_wake_queue(d)].attributes["Arn"]).allowed
