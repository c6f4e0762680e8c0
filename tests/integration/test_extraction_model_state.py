"""Learning a newcomer can see (issue 43, point 2): with its model unreachable (a real local port that refuses
connections) or too slow (the scripted model answering after the call's limit), the app's extraction state
says so with the cause, the log says why, /v1/health is degraded, and the parked jobs are listed over REST
(``GET /v1/apps/{app}/extraction/jobs``), on SQLite and on DynamoDB (moto), through the real handler.

The model is asked over real HTTP (OpenAICompatibleChatModel); the local runner's steps are run when the
test says (``drain``), on the test's clock, so the retries' waits pass at once."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from agentmem.clock import format_timestamp, utc_now
from agentmem.container import Container, set_container
from agentmem.extraction import service as extraction_service
from agentmem.extraction.config import AppMemory, Strategy
from agentmem.llm.openai_compatible import OpenAICompatibleChatModel
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.e2e.conftest import free_port
from tests.scripted_model import ScriptedDelay, ScriptedFailure, ScriptedModelServer, scripted_answers
from tests.support import ApiClient, Clock, inline_deletion_runner, scope_path, text_entry

APP = "seen-app"
JOBS = f"/v1/apps/{APP}/extraction/jobs"
STATE = f"/v1/apps/{APP}/extraction"
FACTS = Strategy("facts-0000000001", "facts", "SEMANTIC", "/facts/{actorId}/")


@contextlib.contextmanager
def learning(table: Table, url: str, clock: Clock, *, timeout_seconds: float = 5) -> Iterator[Container]:
    """A process whose app learns facts through the model at ``url``, its steps run only when asked."""
    built = Container(
        Settings(deletion_drain_seconds=0),
        table=table,
        model=OpenAICompatibleChatModel(url, "tiny-model", timeout_seconds=timeout_seconds),
        deletion_runner=inline_deletion_runner(),
        background=False,
        clock=clock,
    )
    set_container(built)
    now = format_timestamp(clock())
    built.memories.put(AppMemory(APP, "seen", APP, now, now, strategies=(FACTS,), trigger_messages=2))
    try:
        yield built
    finally:
        set_container(None)
        assert built.close(30)


def said(api: ApiClient, user: str, session: str) -> None:
    entries = [text_entry("Ana plays the cello.", author=user), text_entry("Nice.", author="assistant")]
    reply = api.put(f"{scope_path(APP, user)}/sessions/{session}/memories", {"entries": entries})
    assert reply.status == 200, reply.body


def until_parked(container: Container, clock: Clock) -> list[str]:
    """Run the steps due, moving the clock to each retry, until nothing is due: the steps' states."""
    states = [o.state for o in container.local_extraction.drain()]
    while container.local_extraction.pending():
        clock.advance(extraction_service.RETRY_BASE_MS * 4**extraction_service.MAX_ATTEMPTS / 1000)
        states += [o.state for o in container.local_extraction.drain()]
    return states


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[str]:
    """The causes the log gave with ``message``."""
    return [str(getattr(r, "cause", "")) for r in caplog.records if r.getMessage() == message]


@pytest.fixture
def clock() -> Clock:
    return Clock(utc_now())


def test_an_unreachable_model_is_named_in_the_state_the_log_health_and_the_parked_jobs(
    table: Table, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given an app that learns through a model on a local port that refuses connections
    port = free_port()
    with learning(table, f"http://127.0.0.1:{port}/v1", clock) as container:
        api = ApiClient()
        assert api.get(STATE).body["state"]["status"] == "on"
        assert api.get("/v1/health").body == {"status": "ok", "checks": {"table": "ok", "model": "ok"}}
        caplog.clear()
        # When Alice's session is written and its batch is tried until it is parked
        said(api, "alice", "s1")
        states = until_parked(container, clock)
        # Then the batch was retried, then parked
        assert states == ["retry"] * (extraction_service.MAX_ATTEMPTS - 1) + ["parked"]
        # And the app's extraction state says the model cannot be reached, why, and where the parked jobs are
        state = api.get(STATE).body["state"]
        assert state["status"] == "model_unreachable"
        assert state["model"] == "tiny-model"
        assert f"127.0.0.1:{port}" in state["message"]
        assert "ConnectionRefusedError" in state["message"]
        assert f"/v1/apps/{APP}/extraction/jobs" in state["message"]
        # And the log names the cause of each retry and of the parking
        retries = logged(caplog, "extraction failed; retrying")
        parked = logged(caplog, "extraction parked")
        assert len(retries) == extraction_service.MAX_ATTEMPTS - 1
        assert len(parked) == 1
        assert all("unreachable: ConnectionRefusedError" in cause for cause in [*retries, *parked])
        # And health is degraded (200: what is said is kept, nothing is learnt), the model its failing check
        health = api.get("/v1/health")
        assert health.status == 200
        assert health.body == {"status": "degraded", "checks": {"table": "ok", "model": "failing"}}
        # And the parked job is listed over REST with its reason and the entries it holds
        listed = api.get(JOBS)
        assert listed.status == 200, listed.body
        [job] = listed.body["jobs"]
        assert listed.body["next_cursor"] is None
        assert (job["user"], job["session"], job["strategy"], job["project"]) == ("alice", "s1", FACTS.id, None)
        assert job["failure"].startswith("facts: model_unavailable (model endpoint http://127.0.0.1:")
        assert "unreachable: ConnectionRefusedError" in job["failure"]
        entries = api.get(f"{scope_path(APP, 'alice')}/memories").body["entries"]
        assert sorted(job["entry_ids"]) == sorted(e["id"] for e in entries)
        # (the same job AgentCore's ListMemoryExtractionJobs shows)
        agentcore = api.post(f"/agentcore/memories/{APP}/extractionJobs", {}).body["jobs"]
        assert [(j["jobID"], j["failureReason"]) for j in agentcore] == [(job["job_id"], job["failure"])]
        # When the model comes back on that port and the parked job is started again
        with ScriptedModelServer(scripted_answers('{"facts": []}'), model="tiny-model", port=port):
            started = api.post(
                f"/agentcore/memories/{APP}/extractionJobs/start", {"extractionJob": {"jobId": job["job_id"]}}
            )
            assert started.status == 200, started.body
            assert [o.state for o in container.local_extraction.drain()] == ["done"]
        # Then the state is on again, health ok, and no job is parked
        assert api.get(STATE).body["state"]["status"] == "on"
        assert api.get("/v1/health").body["status"] == "ok"
        assert api.get(JOBS).body == {"jobs": [], "next_cursor": None}


def test_a_slow_model_is_said_to_time_out_not_to_be_unreachable_with_the_setting_that_raises_the_limit(
    table: Table, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a model that answers, but 30 s after each call whose limit is half a second
    slow = ScriptedDelay(30.0, '{"facts": []}')
    answers = scripted_answers(*[slow] * extraction_service.MAX_ATTEMPTS)
    with ScriptedModelServer(answers) as server, learning(table, server.url, clock, timeout_seconds=0.5) as container:
        api = ApiClient()
        caplog.clear()
        # When a session is written and its batch is tried until it is parked
        said(api, "alice", "s1")
        assert until_parked(container, clock)[-1] == "parked"
        # Then the state says the model timed out, not that it cannot be reached, and which setting helps
        state = api.get(STATE).body["state"]
        assert state["status"] == "model_timed_out"
        assert "timed out" in state["message"]
        assert "within 0.5 s" in state["message"]
        assert "MEMORY_MODEL_TIMEOUT_SECONDS raises the limit" in state["message"]
        assert "cannot be reached" not in state["message"]
        assert "unreachable" not in state["message"]
        # And so do the parked job's reason and the log
        [job] = api.get(JOBS).body["jobs"]
        assert job["failure"].startswith("facts: model_timed_out (model endpoint ")
        limit = "did not answer within 0.5 s; MEMORY_MODEL_TIMEOUT_SECONDS raises the limit)"
        assert job["failure"].endswith(limit)
        [cause] = logged(caplog, "extraction parked")
        assert "MEMORY_MODEL_TIMEOUT_SECONDS raises the limit" in cause
        assert "unreachable" not in cause
        # And health is degraded by it
        assert api.get("/v1/health").body["checks"]["model"] == "failing"


def test_parked_jobs_are_listed_page_by_page_bad_paging_is_refused_and_an_erased_users_are_gone(
    table: Table, clock: Clock
) -> None:
    # Given three sessions parked with the model unreachable: two of Alice's, one of Bob's
    with learning(table, f"http://127.0.0.1:{free_port()}/v1", clock) as container:
        api = ApiClient()
        for user, session in (("alice", "s1"), ("alice", "s2"), ("bob", "s3")):
            said(api, user, session)
        until_parked(container, clock)
        # When they are listed two at a time
        first = api.get(JOBS, query={"limit": 2})
        assert first.status == 200, first.body
        second = api.get(JOBS, query={"limit": 2, "cursor": first.body["next_cursor"]})
        # Then the two pages hold the three jobs once each, oldest first, and the last page says it is the last
        assert len(first.body["jobs"]) == 2
        assert first.body["next_cursor"]
        assert len(second.body["jobs"]) == 1
        assert second.body["next_cursor"] is None
        jobs = first.body["jobs"] + second.body["jobs"]
        assert sorted((j["user"], j["session"]) for j in jobs) == [("alice", "s1"), ("alice", "s2"), ("bob", "s3")]
        assert [j["job_id"] for j in jobs] == sorted(j["job_id"] for j in jobs)
        # And bad paging is refused in the API's error envelope, changing nothing
        for query in ({"cursor": "not-a-cursor!"}, {"cursor": "J#x"}, {"limit": 0}, {"limit": 101}, {"limit": "x"}):
            refused = api.get(JOBS, query=query)
            assert refused.status == 422, (query, refused.body)
            assert {"code", "message", "request_id"} <= set(refused.body["error"])
        assert api.get(JOBS, query={"cursor": "not-a-cursor!"}).error_code == "invalid_cursor"
        # When Alice is erased
        assert api.delete(scope_path(APP, "alice")).status == 202
        # Then her jobs are never listed again; Bob's still are
        assert [(j["user"], j["session"]) for j in api.get(JOBS).body["jobs"]] == [("bob", "s3")]


def test_a_model_that_refuses_the_request_is_said_to_refuse_it_with_the_endpoints_words(
    table: Table, clock: Clock
) -> None:
    # Given an endpoint that answers every call 404: no such model (a wrong MEMORY_MODEL_ID)
    refusal = ScriptedFailure(404, '{"error": {"message": "model tiny-model not found"}}')
    answers = scripted_answers(*[refusal] * extraction_service.MAX_ATTEMPTS)
    with ScriptedModelServer(answers) as server, learning(table, server.url, clock) as container:
        api = ApiClient()
        # When a session is written and its batch is tried until it is parked
        said(api, "alice", "s1")
        assert until_parked(container, clock)[-1] == "parked"
        # Then the state says the model refused, in the endpoint's words, and health counts it
        state = api.get(STATE).body["state"]
        assert state["status"] == "model_refused"
        assert "answered 404: model tiny-model not found" in state["message"]
        assert api.get("/v1/health").body["checks"]["model"] == "failing"
        [job] = api.get(JOBS).body["jobs"]
        assert job["failure"].startswith("facts: model_refused (")
