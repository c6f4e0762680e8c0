"""Every accepted erasure ends SUCCEEDED (issue 37, point 2): the re-drive of failed executions and the operator's
list and retry, on moto's Step Functions interpreter running the ASL file CDK deploys, whose Lambda tasks run the
real steps handler, against moto DynamoDB. The status-change event is built from the execution as EventBridge
documents it ("Step Functions Execution Status Change"): moto emits none."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
import pytest

from agentmem.clock import utc_now
from agentmem.container import Container, set_container
from agentmem.deletion import records
from agentmem.deletion.redrive import REDRIVE_DELAYS, failed_erasures, redrive, retry
from agentmem.deletion.runners import Attempt, StepFunctionsRunner, execution_name
from agentmem.deletion.service import DeletionService
from agentmem.keys import UserRef
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.stores.table import Table
from tests.erasure_support import StepRouter, export_all, moto_deployment
from tests.support import ApiClient, execution_status_change, text_entry

pytestmark = pytest.mark.xdist_group("erasure-moto")
NO_WAIT = (0,) * len(REDRIVE_DELAYS)


class Crashed(Exception):
    """A step's process dying: an error name no retry rule of the workflow names (it goes to the catch)."""


@dataclass
class Cloud:
    api: ApiClient
    table: DynamoTable
    runner: StepFunctionsRunner
    router: StepRouter

    @property
    def client(self) -> Any:
        return boto3.client("stepfunctions", region_name="us-east-1")

    def ended(self, deletion_id: str, attempt: int = 0, timeout: float = 120.0) -> dict[str, Any]:
        """The attempt's execution once it has stopped."""
        import time

        arn = self.runner.execution_arn(execution_name(deletion_id, attempt))
        deadline = time.monotonic() + timeout
        while True:
            described = self.client.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING":
                return described  # type: ignore[no-any-return]
            assert time.monotonic() < deadline, f"attempt {attempt} of {deletion_id} never ended"
            time.sleep(0.05)

    def stop_once_waiting(self, arn: str, timeout: float = 120.0) -> None:
        """Stop an execution once it waits in its Backoff state (moto's interpreter cannot stop an execution
        whose thread has not begun yet, however long a busy machine takes to begin it)."""
        import time

        deadline = time.monotonic() + timeout
        while not any(
            e["type"] == "WaitStateEntered" for e in self.client.get_execution_history(executionArn=arn)["events"]
        ):
            assert time.monotonic() < deadline, "the attempt never began its backoff"
            time.sleep(0.05)
        self.client.stop_execution(executionArn=arn)

    def status_change(self, described: dict[str, Any]) -> dict[str, Any]:
        """The event EventBridge delivers for the execution's last status change (its documented shape)."""
        return execution_status_change(described)

    def erase(self, user: UserRef) -> str:
        path = f"/v1/apps/{user.app}/users/{user.user}"
        reply = self.api.put(f"{path}/sessions/s1/memories", {"entries": [text_entry(f"{user.user} likes tea")]})
        assert reply.status == 200, reply.body
        started = self.api.delete(path)
        assert started.status == 202, started.body
        return str(started.body["deletion_id"])

    def deletion_status(self, user: UserRef, deletion_id: str) -> dict[str, Any]:
        reply = self.api.get(f"/v1/apps/{user.app}/users/{user.user}/deletions/{deletion_id}")
        assert reply.status == 200, reply.body
        return reply.body  # type: ignore[no-any-return]


@pytest.fixture
def cloud() -> Iterator[Cloud]:
    with moto_deployment("agent-memory-redrive", deletion_drain_seconds=0) as (settings, table, router):
        container = Container(settings, table=table)
        set_container(container)
        runner = container.deletion_runner
        assert isinstance(runner, StepFunctionsRunner)
        try:
            yield Cloud(ApiClient(), table, runner, router)
        finally:
            set_container(None)


def crash_while(cloud: Cloud, broken: dict[str, bool], steps: tuple[str, ...] = ("mark",)) -> None:
    def hook(event: dict[str, Any]) -> None:
        if broken["on"] and event.get("step") in steps:
            raise Crashed("the step's process exited")

    cloud.router.before_step = hook


def test_a_failed_first_attempt_is_redriven_to_succeeded(cloud: Cloud) -> None:
    # Given an erasure whose first attempt fails at its first step (an error no retry names)
    user = UserRef("shop", "ana")
    broken = {"on": True}
    crash_while(cloud, broken)
    deletion_id = cloud.erase(user)
    first = cloud.ended(deletion_id)
    assert first["status"] == "FAILED"
    assert cloud.deletion_status(user, deletion_id)["status"] == "FAILED"
    # When the cause is gone and EventBridge delivers the failure to the re-drive
    broken["on"] = False
    assert redrive(cloud.status_change(first), table=cloud.table, runner=cloud.runner, delays=NO_WAIT) == "redriven"
    # Then the next attempt runs the whole workflow again and the erasure ends SUCCEEDED
    second = cloud.ended(deletion_id, attempt=1)
    assert second["status"] == "SUCCEEDED", second
    assert json.loads(second["input"]) == {
        "deletion_id": deletion_id,
        "app": "shop",
        "attempt": 1,
        "redrive": 1,
        "delay_seconds": 0,
    }
    status = cloud.deletion_status(user, deletion_id)
    assert status["status"] == "SUCCEEDED"
    assert status["deleted"]["entries"] == 1
    assert "error" not in status
    assert export_all(cloud.api, f"/v1/apps/shop/users/{user.user}")["entries"] == []
    # And the user may write again
    assert cloud.api.post("/v1/apps/shop/users/ana/memories", {"entry": text_entry("hello again")}).status == 201
    # And nothing re-drives a finished erasure
    assert redrive(cloud.status_change(first), table=cloud.table, runner=cloud.runner) == "finished"
    assert redrive(cloud.status_change(second), table=cloud.table, runner=cloud.runner) == "ignored"


def test_the_lambda_handler_starts_the_next_attempt_with_its_backoff_once_per_failure(cloud: Cloud) -> None:
    from functions.redrive.handler import handler

    # Given an erasure whose first attempt failed (a later attempt's first step is held until the test ends: it
    # stays RUNNING however slowly the test runs)
    marks: list[dict[str, Any]] = []
    done = threading.Event()

    def hook(event: dict[str, Any]) -> None:
        if event.get("step") == "mark":
            if marks:
                done.wait(120)
            marks.append(event)
            raise Crashed("the step's process exited")

    cloud.router.before_step = hook
    deletion_id = cloud.erase(UserRef("shop", "bo"))
    event = cloud.status_change(cloud.ended(deletion_id))
    # When the event reaches the function twice (EventBridge delivers at least once)
    assert handler(event) == {"outcome": "redriven"}
    assert handler(event) == {"outcome": "redriven"}
    # Then one next attempt runs, waiting the first backoff before it marks the user again
    runs = [e for e in cloud.runner.executions() if json.loads(e["input"])["deletion_id"] == deletion_id]
    assert sorted(e["name"] for e in runs) == [deletion_id, f"{deletion_id}-1"]
    waiting = next(e for e in runs if e["name"] == f"{deletion_id}-1")
    assert waiting["status"] == "RUNNING"
    assert json.loads(waiting["input"])["delay_seconds"] == REDRIVE_DELAYS[0] > 0
    # And while it waits, a new DELETE from the tenant finds the erasure running (no second erasure)
    again = cloud.api.delete("/v1/apps/shop/users/bo")
    assert (again.status, again.body["deletion_id"]) == (202, deletion_id)
    cloud.stop_once_waiting(waiting["executionArn"])
    done.set()


def test_after_the_last_redrive_the_erasure_is_given_up_loudly_and_listed_for_the_operator(cloud: Cloud) -> None:
    # Given an erasure that keeps failing (every step crashes, the failure record too)
    user = UserRef("shop", "cy")
    crash_while(cloud, {"on": True}, steps=("mark", "record_failure"))
    deletion_id = cloud.erase(user)
    described = cloud.ended(deletion_id)
    outcomes = []
    # When every failure is re-driven, as often as the schedule allows
    for attempt in range(1, len(REDRIVE_DELAYS) + 2):
        outcomes.append(redrive(cloud.status_change(described), table=cloud.table, runner=cloud.runner, delays=NO_WAIT))
        if outcomes[-1] != "redriven":
            break
        described = cloud.ended(deletion_id, attempt=attempt)
        assert described["status"] == "FAILED"
    # Then it was re-driven six times, then given up (the ErasuresGivenUp metric: its alarm)
    assert outcomes == ["redriven"] * len(REDRIVE_DELAYS) + ["gave_up"]
    # And the operator's list names it, at its last attempt
    (listed,) = failed_erasures(cloud.runner, cloud.table)
    assert (listed.deletion_id, listed.app, listed.attempt, listed.status) == (deletion_id, "shop", 6, "FAILED")
    # When the operator retries it once the cause is fixed
    cloud.router.before_step = None
    started = retry(cloud.runner, cloud.table, deletion_id)
    # Then its next attempt starts at once, with the automatic re-drives counted from 0 again
    assert (started.attempt, started.redrive) == (7, 0)
    assert cloud.ended(deletion_id, attempt=7)["status"] == "SUCCEEDED"
    assert cloud.deletion_status(user, deletion_id)["status"] == "SUCCEEDED"
    # And the list is empty, a second retry refused
    assert failed_erasures(cloud.runner, cloud.table) == []
    with pytest.raises(ValueError, match="nothing to retry"):
        retry(cloud.runner, cloud.table, deletion_id)


def test_the_operator_command_lists_and_retries_failed_erasures(
    cloud: Cloud, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentmem.cli import main

    # Given an erasure whose attempt failed and was never re-driven (its event lost)
    crash_while(cloud, {"on": True})
    deletion_id = cloud.erase(UserRef("clinic", "di"))
    cloud.ended(deletion_id)
    cloud.router.before_step = None
    for name in ("MEMORY_TABLE_NAME", "MEMORY_STORE"):
        monkeypatch.setenv(name, "")
    options = ["--table", cloud.table.table_name, "--state-machine", cloud.runner.state_machine_arn]
    # When the operator lists the failed erasures / Then it is named with its app and attempt
    assert main(["erasures", "list", *options]) == 0
    listed = capsys.readouterr()
    assert listed.out.splitlines()[0].split("\t")[:4] == [deletion_id, "app=clinic", "attempt=0", "FAILED"]
    assert "1 erasures need a retry" in listed.err
    # When they retry it / Then its next attempt finishes it
    assert main(["erasures", "retry", deletion_id, *options]) == 0
    assert f"erasure {deletion_id}: attempt 1 started" in capsys.readouterr().out
    assert cloud.ended(deletion_id, attempt=1)["status"] == "SUCCEEDED"
    assert main(["erasures", "list", *options]) == 0
    assert capsys.readouterr().out == ""
    # And a retry of an erasure that has finished is refused
    assert main(["erasures", "retry", deletion_id, *options]) == 1


def _marked(table: Table, drain: int, elapsed: float) -> tuple[DeletionService, UserRef, str, dict[str, Any]]:
    clock = {"now": utc_now()}
    service = DeletionService(table, receipt_key=b"k", drain_seconds=drain, clock=lambda: clock["now"])
    user = UserRef("shop", "eve")
    start = service.begin(user, is_active=lambda _id: False)
    service.record_failure(user, start.deletion_id, "Crashed", "the step's process exited")
    clock["now"] += timedelta(seconds=elapsed)
    return service, user, start.deletion_id, service.mark(user, start.deletion_id)


def test_a_later_attempt_waits_only_what_is_left_of_the_drain_and_runs_again(table: Table) -> None:
    # Given an erasure marked by the API 20 s ago whose first attempt failed (drain: 30 s)
    _service, user, deletion_id, marked = _marked(table, drain=30, elapsed=20)
    # Then its next attempt's mark waits the 10 s left, and the request is RUNNING again without the error
    assert marked == {"drain_seconds": 10}
    request = table.get(*records.request_key(user.app, deletion_id))
    assert request is not None
    assert request["status"] == "RUNNING"
    assert "error" not in request
    assert "cause" not in request
    # And past the drain, an attempt waits nothing
    assert _marked(table, drain=30, elapsed=45)[3] == {"drain_seconds": 0}


def test_a_redriven_attempt_is_named_after_the_erasure_and_its_number() -> None:
    assert execution_name("d1", 0) == "d1"
    assert execution_name("d1", 3) == "d1-3"
    assert Attempt() == Attempt(0, 0, 0)
