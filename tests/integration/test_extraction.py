"""Memory that learns (issue 34, point 8): the semantics of extraction, pinned with a scripted model (an
OpenAI-compatible endpoint on 127.0.0.1 answering fixed JSON), on SQLite and on DynamoDB (moto), through
the real handler for every write and read.

Each test configures an app that learns (semantic facts, preferences, session summaries), writes a
conversation through the REST API or AgentCore's CreateEvent, and runs the local runner's due steps
(``drain``: the background thread of the local server, made synchronous here)."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentmem.clock import format_timestamp, utc_now
from agentmem.container import Container, set_container
from agentmem.extraction import service as extraction_service
from agentmem.extraction import work
from agentmem.extraction.config import AppMemory, Strategy
from agentmem.keys import UserRef
from agentmem.llm.openai_compatible import OpenAICompatibleChatModel
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.tenancy import metering
from tests.scripted_model import ScriptedFailure, ScriptedModelServer
from tests.support import ApiClient, Clock, inline_deletion_runner, scope_path, text_entry

APP = "learning-app"
ALICE = scope_path(APP, "alice")
FACTS = Strategy("facts-0000000001", "facts", "SEMANTIC", "/facts/{actorId}/")
LIKES = Strategy("likes-0000000001", "likes", "USER_PREFERENCE", "/preferences/{actorId}/")
SUMMARY = Strategy("summary-000000001", "summary", "SUMMARIZATION", "/summaries/{actorId}/{sessionId}/")

Answer = Callable[[str, str], Any]
"""What the scripted model answers: a function of (schema name, user prompt) -> a JSON value, or a string
sent as it is, or a ScriptedFailure."""


class Model:
    """The scripted endpoint with the answers a test sets per schema (Facts, Preferences, Summary,
    Decisions), and the prompts it was sent."""

    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {
            "Facts": lambda _name, _prompt: {"facts": []},
            "Preferences": lambda _name, _prompt: {"preferences": []},
            "Summary": lambda _name, _prompt: {"summary": "Alice talked about her life."},
            "Decisions": lambda _name, _prompt: {"decisions": []},
        }
        self.asked: list[tuple[str, str]] = []
        self.system_prompts: list[str] = []
        self.server = ScriptedModelServer(self._answer)

    def _answer(self, request: dict[str, Any]) -> Any:
        name = request.get("response_format", {}).get("json_schema", {}).get("name", "")
        prompt = request["messages"][-1]["content"]
        self.system_prompts.append(request["messages"][0]["content"])
        self.asked.append((name, prompt))
        answer = self.answers[name](name, prompt)
        return answer if isinstance(answer, str | ScriptedFailure) else json.dumps(answer)

    def asked_for(self, name: str) -> list[str]:
        return [prompt for asked, prompt in self.asked if asked == name]


@pytest.fixture
def model() -> Iterator[Model]:
    scripted = Model()
    with scripted.server:
        yield scripted


@pytest.fixture
def clock() -> Clock:
    return Clock(utc_now())


@contextlib.contextmanager
def learning_process(table: Table, model: Model, clock: Clock, **settings: Any) -> Iterator[Container]:
    """A process that learns through the scripted model on the test's clock (``settings``: the deployment's), its
    erasures inline and its steps run only when asked; installed while within, closed after."""
    chat = OpenAICompatibleChatModel(model.server.url, model.server.model, timeout_seconds=10)
    built = Container(
        Settings(deletion_drain_seconds=0, **settings),
        table=table,
        model=chat,
        deletion_runner=inline_deletion_runner(),
        background=False,
        clock=clock,
    )
    set_container(built)
    try:
        yield built
    finally:
        set_container(None)
        assert built.close(30)


@pytest.fixture
def container(table: Table, model: Model, clock: Clock) -> Iterator[Container]:
    with learning_process(table, model, clock) as built:
        learns(built, FACTS, LIKES, SUMMARY)
        yield built


@pytest.fixture
def api(container: Container) -> ApiClient:
    return ApiClient()


def learns(container: Container, *strategies: Strategy, **settings: Any) -> AppMemory:
    now = format_timestamp(container.clock())
    memory = AppMemory(
        APP, "learning", APP, now, now, strategies=tuple(strategies), **{"trigger_messages": 2, **settings}
    )
    return container.memories.put(memory)


def said(*texts: str) -> list[dict[str, Any]]:
    return [
        text_entry(text, author="alice" if i % 2 == 0 else "assistant", timestamp=f"2026-03-0{1 + i % 9}T10:00:00Z")
        for i, text in enumerate(texts)
    ]


def run(container: Container) -> list[extraction_service.Outcome]:
    """The steps due now (by the test's clock)."""
    return container.local_extraction.drain()


def records(api: ApiClient, namespace: str, **extra: Any) -> list[dict[str, Any]]:
    reply = api.post(f"/agentcore/memories/{APP}/memoryRecords", {"namespace": namespace, **extra})
    assert reply.status == 200, reply.body
    return reply.body["memoryRecordSummaries"]  # type: ignore[no-any-return]


def facts_about(*facts: tuple[str, str, list[int]]) -> Answer:
    return lambda _n, _p: {
        "facts": [{"text": t, "about": a, "about_type": "person", "messages": m} for t, a, m in facts]
    }


def test_facts_preferences_and_a_summary_are_learnt_into_their_namespaces(
    api: ApiClient, container: Container, model: Model
) -> None:
    model.answers["Facts"] = facts_about(("Alice's sister Ana plays the cello.", "Ana", [1]))
    model.answers["Preferences"] = lambda _n, _p: {
        "preferences": [{"text": "Alice does not eat meat.", "category": "food", "messages": [3]}]
    }
    # Given a conversation of four messages written into a session
    conversation = said("My sister Ana plays the cello.", "Lovely!", "I don't eat meat, by the way.", "Noted.")
    assert api.put(f"{ALICE}/sessions/s1/memories", {"entries": conversation}).status == 200
    # When the runner does what is due
    outcomes = run(container)
    # Then each strategy's records are in its namespace, naming the entries they came from
    assert [o.state for o in outcomes] == ["done"]
    facts = records(api, "/facts/alice/")
    assert [r["content"]["text"] for r in facts] == ["Alice's sister Ana plays the cello."]
    assert facts[0]["memoryStrategyId"] == FACTS.id
    likes = records(api, "/preferences/alice/")
    assert [r["content"]["text"] for r in likes] == ["Alice does not eat meat."]
    summaries = records(api, "/summaries/alice/s1/")
    assert [r["content"]["text"] for r in summaries] == ["Alice talked about her life."]
    entries = {
        e["content"]["parts"][0]["text"]: e for e in api.get(f"{ALICE}/memories", query={"limit": 100}).body["entries"]
    }
    sources = entries["Alice's sister Ana plays the cello."]["metadata"]["agentcore.sources"]
    assert [entries_by_id(api)[i] for i in sources] == ["My sister Ana plays the cello."]
    # (and AgentCore's callers get them as the ids of the events they were learnt from, on every read of a record)
    events = api.post(f"/agentcore/memories/{APP}/actor/alice/sessions/s1", {}).body
    event_ids = {e["payload"][0]["conversational"]["content"]["text"]: e["eventId"] for e in events.get("events", [])}
    got = api.get(f"/agentcore/memories/{APP}/memoryRecord/{facts[0]['memoryRecordId']}").body["memoryRecord"]
    assert got["metadata"]["agentcore.sources"] == {"stringListValue": [event_ids["My sister Ana plays the cello."]]}
    assert facts[0]["metadata"]["agentcore.sources"] == got["metadata"]["agentcore.sources"]
    # And the prompt numbered the messages with their days and authors
    assert "[1] (2026-03-01) alice: My sister Ana plays the cello." in model.asked_for("Facts")[0]
    # And the records are entries of the REST API: searchable, filterable by strategy
    found = api.post(f"{ALICE}/memories/search", {"query": "cello", "filter": {"agentcore.strategy": FACTS.id}})
    assert [e["content"]["parts"][0]["text"] for e in found.body["entries"]] == ["Alice's sister Ana plays the cello."]
    # And the fact is in the knowledge graph, with the record it was learnt as
    ana = api.get(f"{ALICE}/graph/entities/Ana/history").body
    assert [(o["content"], o["source"]) for o in ana["observations"]] == [
        ("Alice's sister Ana plays the cello.", facts[0]["memoryRecordId"])
    ]
    assert "Ana" in api.get(f"{ALICE}/graph/profile-card").body["text"]


def entries_by_id(api: ApiClient) -> dict[str, str]:
    listed = api.get(f"{ALICE}/memories", query={"limit": 100}).body["entries"]
    return {e["id"]: e["content"]["parts"][0]["text"] for e in listed}


def test_a_contradiction_updates_the_record_and_keeps_the_old_one_in_history(
    api: ApiClient, container: Container, model: Model
) -> None:
    # Given a preference learnt from a first session
    model.answers["Preferences"] = lambda _n, _p: {"preferences": [{"text": "Alice prefers tea.", "messages": [1]}]}
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("I love tea.", "Noted.")})
    run(container)
    [tea] = records(api, "/preferences/alice/")
    # When a later session contradicts it, and the model says the new one replaces it
    model.answers["Preferences"] = lambda _n, _p: {
        "preferences": [{"text": "Alice prefers coffee now.", "messages": [1]}]
    }
    model.answers["Decisions"] = lambda _n, _p: {"decisions": [{"memory": 0, "action": "UPDATE", "existing": 0}]}
    api.put(f"{ALICE}/sessions/s2/memories", {"entries": said("I switched to coffee.", "Okay.")})
    run(container)
    # Then AgentCore lists only the current preference
    [coffee] = records(api, "/preferences/alice/")
    assert coffee["content"]["text"] == "Alice prefers coffee now."
    assert "existing 0: Alice prefers tea." in model.asked_for("Decisions")[0]
    # And the old record is kept, its valid time ended and naming its successor
    old = api.get(f"/agentcore/memories/{APP}/memoryRecord/{tea['memoryRecordId']}").body["memoryRecord"]
    assert old["content"]["text"] == "Alice prefers tea."
    # (and GetMemoryRecord says it was replaced, by which record and since when, in the record's metadata)
    assert old["metadata"]["agentcore.supersededBy"] == {"stringValue": coffee["memoryRecordId"]}
    assert "dateTimeValue" in old["metadata"]["agentcore.validTo"]
    assert "agentcore.supersededBy" not in (coffee.get("metadata") or {})
    held = [
        e
        for e in api.get(f"{ALICE}/export").body["entries"]
        if e["content"]["parts"][0]["text"] == "Alice prefers tea."
    ]
    assert held[0]["metadata"]["agentcore.superseded_by"] == coffee["memoryRecordId"]
    assert held[0]["metadata"]["agentcore.valid_to"] >= held[0]["timestamp"]
    # And the graph's history shows both, in order, the first no longer valid
    history = api.get(f"{ALICE}/graph/entities/alice/history").body["observations"]
    assert [(o["content"], o["valid_to"] is None) for o in history] == [
        ("Alice prefers tea.", False),
        ("Alice prefers coffee now.", True),
    ]


def test_a_repeat_writes_nothing_and_asks_no_consolidation(api: ApiClient, container: Container, model: Model) -> None:
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    run(container)
    before = api.get(f"{ALICE}/export").body["entries"]
    # When another session says the same thing again
    api.put(f"{ALICE}/sessions/s2/memories", {"entries": said("Ana still plays the cello.", "Yes.")})
    run(container)
    # Then no record is added, and no consolidation call was needed for a word-for-word repeat
    assert [r["content"]["text"] for r in records(api, "/facts/alice/")] == ["Ana plays the cello."]
    assert model.asked_for("Decisions") == []

    def facts(entries: list[dict[str, Any]]) -> list[str]:
        return [e["id"] for e in entries if e["metadata"].get("agentcore.namespace") == "/facts/alice/"]

    assert facts(api.get(f"{ALICE}/export").body["entries"]) == facts(before)


def test_a_redelivered_step_writes_nothing_twice(api: ApiClient, container: Container, model: Model) -> None:
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    partition = UserRef(APP, "alice").scope(None).partition
    run(container)
    asked = len(model.asked)
    # When the same pending row is delivered again (the stream delivers at least once), twice
    steps = [container.local_extraction.drain()]
    for _ in range(2):
        container.local_extraction.notify(partition, "s1")
        steps.append(container.local_extraction.drain())
    # Then nothing is asked and nothing written again
    assert len(model.asked) == asked
    assert len(records(api, "/facts/alice/")) == 1
    assert len(records(api, "/summaries/alice/s1/")) == 1


def test_a_batch_committed_before_a_crash_is_not_written_again(
    api: ApiClient, container: Container, model: Model, table: Table
) -> None:
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    scope = UserRef(APP, "alice").scope(None)
    pending = table.get(scope.partition, work.pending_sk("s1"))
    run(container)
    # Given the process died after the batch's commit, before it removed the pending row
    assert pending is not None
    table.put(pending)
    # When the pending row is worked again
    container.local_extraction.notify(scope.partition, "s1")
    run(container)
    # Then the batch is not written twice
    assert len(records(api, "/facts/alice/")) == 1


def park_a_failing_batch(
    api: ApiClient, container: Container, model: Model, clock: Clock
) -> tuple[list[str], list[int]]:
    """A session of Alice's whose facts the model fails to give on every attempt, its steps run (the clock moved to
    each retry) until the batch is parked: the steps' states, and the waits between them in seconds."""
    learns(container, FACTS)
    model.answers["Facts"] = lambda _n, _p: ScriptedFailure(503, "overloaded")
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    states = [o.state for o in run(container)]
    waits = []
    for _ in range(extraction_service.MAX_ATTEMPTS - 1):
        [(due, _, _)] = container.local_extraction.pending()
        waits.append(round(due / 1000 - clock.now.timestamp()))
        clock.advance(waits[-1])
        states += [o.state for o in run(container)]
    return states, waits


def test_a_failing_model_is_retried_with_backoff_then_parked_and_started_again(
    api: ApiClient, container: Container, model: Model, clock: Clock
) -> None:
    # When the model fails on every attempt
    states, waits = park_a_failing_batch(api, container, model, clock)
    # Then the batch waited and was retried (with growing waits), then parked, and nothing was written
    assert states == ["retry"] * (extraction_service.MAX_ATTEMPTS - 1) + ["parked"]
    assert waits == [10, 40]
    assert records(api, "/facts/alice/") == []
    jobs = api.post(f"/agentcore/memories/{APP}/extractionJobs", {}).body["jobs"]
    assert [(j["status"], j["actorId"], j["sessionId"], j["strategyId"]) for j in jobs] == [
        ("FAILED", "alice", "s1", FACTS.id)
    ]
    assert "model_unavailable" in jobs[0]["failureReason"]
    assert len(jobs[0]["messages"]["messagesList"]) == 2
    # When the model recovers and the job is started again
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    started = api.post(
        f"/agentcore/memories/{APP}/extractionJobs/start", {"extractionJob": {"jobId": jobs[0]["jobID"]}}
    )
    assert started.status == 200, started.body
    run(container)
    # Then its records are written and it is no longer listed
    assert [r["content"]["text"] for r in records(api, "/facts/alice/")] == ["Ana plays the cello."]
    assert api.post(f"/agentcore/memories/{APP}/extractionJobs", {}).body["jobs"] == []


@pytest.mark.parametrize(
    "answer",
    [
        "I think Ana plays the cello",  # not JSON
        '{"facts": [{"text": "Bob likes jazz.", "about": "Bob"}], "namespace": "/facts/bob/"}',  # names a namespace
        '{"facts": [{"text": "Bob likes jazz.", "actorId": "bob"}]}',  # names another actor
    ],
)
def test_an_answer_out_of_schema_changes_nothing(
    api: ApiClient, container: Container, model: Model, answer: str
) -> None:
    learns(container, FACTS)
    model.answers["Facts"] = lambda _n, _p: answer
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    before = api.get(f"{ALICE}/export").body
    # When the model answers out of schema on every attempt
    outcomes = run(container)
    # Then the batch is retried later, and nothing was written for anyone
    assert [o.state for o in outcomes] == ["retry"]
    assert len(model.asked_for("Facts")) == 2  # asked once more, told what was wrong
    assert "Your previous answer was refused" in model.asked_for("Facts")[1]
    assert api.get(f"{ALICE}/export").body == before
    assert api.get(scope_path(APP, "bob") + "/export").body["entries"] == []


def test_an_erasure_during_extraction_leaves_nothing(api: ApiClient, container: Container, model: Model) -> None:
    learns(container, FACTS)
    erased: list[int] = []

    def erase_then_answer(_name: str, _prompt: str) -> Any:
        # the user is erased while the model thinks (from another thread: another request)
        worker = threading.Thread(target=lambda: erased.append(api.delete(ALICE).status))
        worker.start()
        worker.join(timeout=60)
        return {"facts": [{"text": "Ana plays the cello.", "about": "Ana", "messages": [1]}]}

    model.answers["Facts"] = erase_then_answer
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    run(container)
    # Then the erasure ran, and the answer that came after it wrote nothing: no record, no graph, no work
    assert erased == [202]
    held = api.get(f"{ALICE}/export").body
    assert (held["entries"], held["graph"]["entities"], held["episodes"]) == ([], [], [])
    assert container.table.query(UserRef(APP, "alice").scope(None).partition).items == []
    assert api.post(f"/agentcore/memories/{APP}/extractionJobs", {}).body["jobs"] == []


def test_without_a_model_nothing_is_noted_and_writes_work(table: Table) -> None:
    without = Container(Settings(deletion_drain_seconds=0), table=table, background=False)
    set_container(without)
    try:
        learns(without, FACTS)
        api = ApiClient()
        assert (
            api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")}).status == 200
        )
        scope = UserRef(APP, "alice").scope(None)
        assert table.get(scope.partition, work.pending_sk("s1")) is None
    finally:
        set_container(None)


def test_a_token_budget_pauses_extraction_and_never_fails_a_write(
    api: ApiClient, container: Container, model: Model
) -> None:
    learns(container, FACTS, token_budget=1)
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    run(container)  # spends more than one token
    # When more is said after the budget is spent
    reply = api.put(f"{ALICE}/sessions/s2/memories", {"entries": said("Ana also sings.", "Wow.")})
    outcomes = run(container)
    # Then the write was stored, and extraction paused with its reason, asking nothing
    assert reply.status == 200
    assert [(o.state, "token budget" in o.reason) for o in outcomes] == [("paused", True)]
    assert [r["content"]["text"] for r in records(api, "/facts/alice/")] == ["Ana plays the cello."]


def test_pending_work_survives_a_restart(table: Table, model: Model) -> None:
    chat = OpenAICompatibleChatModel(model.server.url, model.server.model, timeout_seconds=10)
    first = Container(Settings(deletion_drain_seconds=0), table=table, model=chat, background=False)
    set_container(first)
    try:
        learns(first, FACTS)
        model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
        ApiClient().put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
        # Given the process stopped before it ran anything
        restarted = Container(Settings(deletion_drain_seconds=0), table=table, model=chat, background=False)
        set_container(restarted)
        # When a new process starts, it finds the pending work in the table and runs it
        assert restarted.local_extraction.resume() == 1
        restarted.local_extraction.drain()
        assert [r["content"]["text"] for r in records(ApiClient(), "/facts/alice/")] == ["Ana plays the cello."]
    finally:
        set_container(None)


def test_the_idle_trigger_waits_for_the_session_to_be_quiet(
    api: ApiClient, container: Container, model: Model, clock: Clock
) -> None:
    learns(container, FACTS, trigger_messages=10, trigger_idle_seconds=30)
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    # When fewer messages than the trigger are new, the step waits until the session has been idle long enough
    [outcome] = container.local_extraction.drain()
    assert outcome.state == "waiting"
    assert outcome.at_ms is not None
    assert model.asked == []
    # And runs once that moment is reached
    clock.advance(30)
    assert [o.state for o in container.local_extraction.drain()] == ["done"]
    assert len(records(api, "/facts/alice/")) == 1


def test_agentcore_events_are_learnt_from_too(api: ApiClient, container: Container, model: Model) -> None:
    learns(container, FACTS)
    model.answers["Facts"] = facts_about(("Alice sails a wooden boat.", "alice", [1]))
    for i, (role, text) in enumerate([("USER", "I sail a wooden boat"), ("ASSISTANT", "Sounds fun")]):
        reply = api.post(
            f"/agentcore/memories/{APP}/events",
            {
                "actorId": "alice",
                "sessionId": "trip",
                "eventTimestamp": 1.77e9 + i,
                "payload": [{"conversational": {"content": {"text": text}, "role": role}}],
            },
        )
        assert reply.status == 201, reply.body
    run(container)
    found = api.post(
        f"/agentcore/memories/{APP}/retrieve",
        {"namespace": "/facts/alice/", "searchCriteria": {"searchQuery": "boat"}},
    ).body["memoryRecordSummaries"]
    assert [r["content"]["text"] for r in found] == ["Alice sails a wooden boat."]
    assert re.search(r"\[1\] \(\d{4}-\d\d-\d\d\) user: I sail a wooden boat", model.asked_for("Facts")[0])


def test_the_message_trigger_counts_the_messages_of_an_event_not_the_events(
    api: ApiClient, container: Container, model: Model
) -> None:
    # Given an app that learns once a session has 4 messages (AgentCore's messageCount counts messages)
    learns(container, FACTS, trigger_messages=4)
    model.answers["Facts"] = facts_about(("Alice sails a wooden boat.", "alice", [1]))
    turns = [("I sail a wooden boat", "Sounds fun"), ("On the lake", "Lovely")]
    for i, (said_by_user, answered) in enumerate(turns):
        # When two events are written, each a user's message and the assistant's answer (the SDK's usual event)
        payload = [
            {"conversational": {"content": {"text": said_by_user}, "role": "USER"}},
            {"conversational": {"content": {"text": answered}, "role": "ASSISTANT"}},
        ]
        body = {"actorId": "alice", "sessionId": "trip", "eventTimestamp": 1.77e9 + i, "payload": payload}
        assert api.post(f"/agentcore/memories/{APP}/events", body).status == 201
        outcomes = run(container)
        # Then the first holds 2 messages (the step waits), the second makes 4: the step learns at once
        assert [o.state for o in outcomes] == (["waiting"] if i == 0 else ["done"]), outcomes
    assert [r["content"]["text"] for r in records(api, "/facts/alice/")] == ["Alice sails a wooden boat."]


def test_blob_events_are_never_learnt_from_nor_counted_by_the_trigger(
    api: ApiClient, container: Container, model: Model
) -> None:
    # Given an app that learns once a session has 2 messages (issue 43, point 7)
    learns(container, FACTS, trigger_messages=2)
    model.answers["Facts"] = facts_about(("Alice sails a wooden boat.", "alice", [1]))
    state = '{"agent_id": "default", "state": {"secret": "xyzzy"}, "conversation_manager_state": {}}'
    events = [
        [{"conversational": {"content": {"text": "I sail a wooden boat"}, "role": "USER"}}],
        [{"blob": state}],  # the agent's state, as the Strands session manager writes it
        [{"blob": {"session_id": "trip", "session_type": "AGENT"}}],
        [{"conversational": {"content": {"text": "Sounds fun"}, "role": "ASSISTANT"}}],
    ]
    for i, payload in enumerate(events):
        body = {"actorId": "alice", "sessionId": "trip", "eventTimestamp": 1.77e9 + i, "payload": payload}
        assert api.post(f"/agentcore/memories/{APP}/events", body).status == 201
        outcomes = run(container)
        # Then the blobs count as no message: the step learns at the second conversational event only
        if i < len(events) - 1:
            assert all(o.state != "done" for o in outcomes), (i, outcomes)
        else:
            assert [o.state for o in outcomes] == ["done"]
    # And the model was shown the two messages, none of the blobs
    [prompt] = model.asked_for("Facts")
    assert "I sail a wooden boat" in prompt
    assert "Sounds fun" in prompt
    assert "xyzzy" not in prompt
    assert "session_type" not in prompt


def test_the_rest_route_sets_and_shows_what_an_app_learns(api: ApiClient, container: Container, model: Model) -> None:
    path = "/v1/apps/rest-app/extraction"
    # Given an app that learns nothing
    assert api.get(path).body["state"]["status"] == "off"
    # When it is given strategies, triggers and a budget
    body = {
        "strategies": [
            {"type": "SEMANTIC", "name": "facts", "namespace": "/facts/{actorId}/", "instruction": "Keep dates."},
            {"type": "SUMMARIZATION", "name": "summaries"},
        ],
        "trigger_messages": 2,
        "token_budget": 1_000_000,
    }
    reply = api.put(path, body)
    # Then it answers what it will learn, with AgentCore's default namespace where none was given
    assert reply.status == 200, reply.body
    assert [(s["name"], s["namespace"]) for s in reply.body["strategies"]] == [
        ("facts", "/facts/{actorId}/"),
        ("summaries", "/strategies/{memoryStrategyId}/actors/{actorId}/sessions/{sessionId}/"),
    ]
    assert reply.body["state"] == {
        "status": "on",
        "model": model.server.model,
        "tokens_this_month": 0,
        "message": "extraction runs after writes into sessions",
    }
    # And a strategy keeps its id when the configuration is written again
    again = api.put(path, {**body, "token_budget": 2_000_000}).body
    assert [s["id"] for s in again["strategies"]] == [s["id"] for s in reply.body["strategies"]]
    # And the instruction reaches the prompt
    api.put("/v1/apps/rest-app/users/alice/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    run(container)
    assert any("Keep dates." in system for system in model.system_prompts)


@pytest.mark.parametrize(
    "strategies",
    [
        [{"type": "SEMANTIC", "name": "facts", "namespace": "/shared/facts/"}],  # names no actor
        [{"type": "SEMANTIC", "name": "facts"}, {"type": "SUMMARIZATION", "name": "facts"}],  # one name twice
        [{"type": "REFLECTION", "name": "facts"}],
        [{"type": "SEMANTIC", "name": f"s{i}"} for i in range(7)],
    ],
)
def test_a_bad_configuration_is_refused_and_changes_nothing(api: ApiClient, strategies: list[dict[str, Any]]) -> None:
    path = "/v1/apps/rest-app/extraction"
    before = api.get(path).body
    reply = api.put(path, {"strategies": strategies})
    assert reply.status == 422, reply.body
    assert api.get(path).body == before


def test_a_long_backlog_is_worked_in_bounded_steps(api: ApiClient, container: Container, model: Model) -> None:
    learns(container, FACTS)
    turns = extraction_service.BATCH_MESSAGES * extraction_service.BATCHES_PER_STEP + 10
    stamps = [f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}Z" for n in range(turns)]
    entries = [text_entry(f"message number {n}", timestamp=stamp) for n, stamp in enumerate(stamps)]
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": entries})
    # When the runner works the session
    outcomes = run(container)
    # Then the first step took as many batches as a step takes, and the next step the rest, at once
    assert [o.state for o in outcomes] == ["waiting", "done"]
    assert len(model.asked_for("Facts")) == extraction_service.BATCHES_PER_STEP + 1
    last_prompt = model.asked_for("Facts")[-1]
    assert f"message number {turns - 1}" in last_prompt
    assert "message number 0" not in last_prompt


def test_a_session_is_learnt_from_on_demand(api: ApiClient, container: Container, model: Model) -> None:
    learns(container, FACTS, trigger_messages=50, trigger_idle_seconds=3000)
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("Ana plays the cello.", "Nice.")})
    # Given a session below its triggers, nothing is extracted
    assert [o.state for o in run(container)] == ["waiting"]
    # When extraction is asked for it
    reply = api.post(f"{ALICE}/sessions/s1/extract", {})
    # Then it is queued and runs at once, whatever the triggers say
    assert (reply.status, reply.body) == (202, {"session_id": "s1", "status": "queued"})
    assert [o.state for o in run(container)] == ["done"]
    assert [r["content"]["text"] for r in records(api, "/facts/alice/")] == ["Ana plays the cello."]
    # And an app that learns nothing says so
    assert api.post(scope_path("other-app", "alice") + "/sessions/s1/extract", {}).body["status"] == "off"


def test_a_turn_written_late_with_an_earlier_time_is_still_learnt_from(
    api: ApiClient, container: Container, model: Model, clock: Clock
) -> None:
    learns(container, FACTS, trigger_messages=1)

    def event(text: str, when: float) -> None:
        payload = [{"conversational": {"content": {"text": text}, "role": "USER"}}]
        body = {"actorId": "alice", "sessionId": "trip", "eventTimestamp": when, "payload": payload}
        assert api.post(f"/agentcore/memories/{APP}/events", body).status == 201

    # Given two turns learnt from
    event("I sail on Sundays", 1_770_000_100)
    event("The boat is blue", 1_770_000_200)
    run(container)
    # When a turn is written afterwards with an earlier time (a client backfilling, a clock behind)
    clock.advance(1)
    event("I bought the boat in Porto", 1_770_000_000)
    run(container)
    # Then it is read in its own step, and the turns read before are not read again
    assert "I bought the boat in Porto" in model.asked_for("Facts")[-1]
    assert "The boat is blue" not in model.asked_for("Facts")[-1].split("Messages:")[1]


def test_an_app_past_its_share_of_the_models_tokens_this_minute_waits_and_another_app_does_not(
    table: Table, model: Model, clock: Clock
) -> None:
    # Given a deployment that gives each app 1 token of the model a minute (any call passes it), and two apps
    with learning_process(table, model, clock, extraction_tokens_per_minute=1) as built:
        api = ApiClient()
        learns(built, FACTS)
        now = format_timestamp(clock())
        other = AppMemory("other-app", "learning", "other-app", now, now, strategies=(FACTS,), trigger_messages=2)
        built.memories.put(other)
        # When the first app's session is learnt from, and then a second of its sessions and one of the other app
        assert api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("I play chess.", "Nice.")}).status == 200
        assert [o.state for o in run(built)] == ["done"]
        asked = len(model.asked)
        assert asked >= 1
        assert api.put(f"{ALICE}/sessions/s2/memories", {"entries": said("I swim.", "Great.")}).status == 200
        bob = scope_path("other-app", "bob")
        assert api.put(f"{bob}/sessions/s1/memories", {"entries": said("I row.", "Cool.")}).status == 200
        outcomes = {o.reason: o.state for o in run(built)}
        # Then the first app waits for the next minute without asking the model; the other app's session is learnt
        assert "waiting" in outcomes.values()
        assert any("extraction this minute" in reason for reason in outcomes if reason)
        assert "done" in outcomes.values()
        assert len(model.asked) == asked + 1
        # And once the minute has passed, the waiting session is learnt from too
        clock.advance(61)
        assert [o.state for o in run(built)] == ["done"]
        assert len(model.asked) == asked + 2


def test_an_actor_id_with_a_slash_learns_into_its_own_namespace(
    api: ApiClient, container: Container, model: Model
) -> None:
    # Given two actors the API accepts, "org" and "org/alice" (AgentCore's actorId allows "/"), each with a
    # session, and a model that finds a fact in each; the template puts either id where a namespace's owner is read
    learns(container, FACTS)
    answers = iter(
        [facts_about(("Org hosts the chess club.", "Org", [1])), facts_about(("Alice plays chess.", "Alice", [1]))]
    )
    model.answers["Facts"] = lambda name, prompt: next(answers)(name, prompt)
    for actor, said_first in (("org", "We host the chess club."), ("org/alice", "I play chess.")):
        reply = api.put(f"{scope_path(APP, actor)}/sessions/s1/memories", {"entries": said(said_first, "Nice.")})
        assert reply.status == 200, reply.body
        # When its session is learnt from
        assert [o.state for o in run(container)] == ["done"]
    # Then each actor's fact is in its own namespace, "/facts/org/alice/" being org/alice's and not org's
    assert [r["content"]["text"] for r in records(api, "/facts/org/")] == ["Org hosts the chess club."]
    alices = records(api, "/facts/org/alice/")
    assert [r["content"]["text"] for r in alices] == ["Alice plays chess."]
    found = api.post(
        f"/agentcore/memories/{APP}/retrieve",
        {"namespace": "/facts/org/alice/", "searchCriteria": {"searchQuery": "chess"}},
    ).body["memoryRecordSummaries"]
    assert [r["content"]["text"] for r in found] == ["Alice plays chess."]
    # And the record is org/alice's own: erasing org/alice takes it, and leaves org's
    assert api.delete(scope_path(APP, "org/alice")).status == 202
    assert records(api, "/facts/org/alice/") == []
    assert [r["content"]["text"] for r in records(api, "/facts/org/")] == ["Org hosts the chess club."]
    assert container.extraction.list_parked(APP, after=None, limit=10)[0] == []


def test_learnt_records_that_would_pass_the_users_entry_limit_are_parked_and_the_user_can_still_write(
    table: Table, model: Model, clock: Clock
) -> None:
    # Given a deployment whose users hold at most 3 entries, and a user with a session of 2 messages
    with learning_process(table, model, clock, max_entries=3) as built:
        api = ApiClient()
        learns(built, FACTS)
        model.answers["Facts"] = facts_about(("Alice plays chess.", "Alice", [1]), ("Alice swims.", "Alice", [2]))
        assert api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("I play chess.", "I swim.")}).status == 200
        # When the model finds two facts (the user would hold 4)
        outcomes = run(built)
        # Then the batch is parked with the limit as its reason, and no record was written
        assert [o.state for o in outcomes] == ["parked"], outcomes
        assert "user_memory_full" in outcomes[0].reason
        assert records(api, "/facts/alice/") == []
        # And the user's own next write still fits (3 of 3)
        assert api.post(f"{ALICE}/memories", {"entry": text_entry("I like tea")}).status == 201


def test_starting_a_parked_job_again_asks_no_model_past_the_apps_budget(
    api: ApiClient, container: Container, model: Model, clock: Clock
) -> None:
    # Given a job parked after the model failed, and an app whose month's token budget is spent meanwhile
    park_a_failing_batch(api, container, model, clock)
    [job] = api.post(f"/agentcore/memories/{APP}/extractionJobs", {}).body["jobs"]
    learns(container, FACTS, token_budget=100)
    metering.record_usage(container.table, APP, model_calls=1, model_input_tokens=100)  # (the month's, spent)
    model.answers["Facts"] = facts_about(("Ana plays the cello.", "Ana", [1]))
    asked = len(model.asked)
    # When it is started again, and the session is looked at five times
    start = {"extractionJob": {"jobId": job["jobID"]}}
    assert api.post(f"/agentcore/memories/{APP}/extractionJobs/start", start).status == 200
    for _ in range(5):
        container.local_extraction.wake(UserRef(APP, "alice").scope().partition, "s1", 0)
        outcomes = run(container)
        # Then each step pauses on the budget, asking the model nothing
        assert [(o.state, "token budget" in o.reason) for o in outcomes] == [("paused", True)], outcomes
    assert len(model.asked) == asked
    assert records(api, "/facts/alice/") == []


def test_what_is_learnt_in_a_project_stays_in_it_and_goes_with_it(
    api: ApiClient, container: Container, model: Model
) -> None:
    # Given a fact learnt from a session of project p
    learns(container, FACTS)
    model.answers["Facts"] = facts_about(("Alice's sister Ana plays the cello.", "Ana", [1]))
    body = {"entries": said("My sister Ana plays the cello.", "Lovely!"), "project_id": "p"}
    assert api.put(f"{ALICE}/sessions/s1/memories", body).status == 200
    assert [o.state for o in run(container)] == ["done"]
    # Then the project's graph knows it, the user's own graph does not
    in_project = api.get(f"{ALICE}/graph/search", query={"q": "Ana", "project_id": "p"}).body["results"]
    assert [r["entity"]["name"] for r in in_project] == ["Ana"]
    assert api.get(f"{ALICE}/graph/search", query={"q": "Ana"}).body["results"] == []
    assert "Ana" not in api.get(f"{ALICE}/graph/profile-card").body["text"]
    # And when the project is deleted, the fact goes with it
    assert api.delete(f"{ALICE}/projects/p").status == 200
    assert api.get(f"{ALICE}/graph/search", query={"q": "Ana", "project_id": "p"}).body["results"] == []
    assert api.get(f"{ALICE}/graph/search", query={"q": "Ana"}).body["results"] == []


def test_a_consolidation_answer_out_of_schema_keeps_the_new_records(
    api: ApiClient, container: Container, model: Model
) -> None:
    # Given a preference learnt from a first session
    model.answers["Preferences"] = lambda _n, _p: {"preferences": [{"text": "Alice prefers tea.", "messages": [1]}]}
    api.put(f"{ALICE}/sessions/s1/memories", {"entries": said("I love tea.", "Noted.")})
    run(container)
    # When a later one says something close to it, and the model's consolidation answer is out of schema twice
    model.answers["Preferences"] = lambda _n, _p: {
        "preferences": [{"text": "Alice prefers green tea.", "messages": [1]}]
    }
    model.answers["Decisions"] = lambda _n, _p: "I would merge them"
    api.put(f"{ALICE}/sessions/s2/memories", {"entries": said("I love green tea.", "Okay.")})
    outcomes = run(container)
    # Then, as AgentCore does, the new record is kept beside the old one, and nothing is parked
    assert [o.state for o in outcomes] == ["done"], outcomes
    assert len(model.asked_for("Decisions")) == 2
    texts = sorted(r["content"]["text"] for r in records(api, "/preferences/alice/"))
    assert texts == ["Alice prefers green tea.", "Alice prefers tea."]
    assert api.post(f"/agentcore/memories/{APP}/extractionJobs", {}).body["jobs"] == []
