"""Every accepted erasure ends SUCCEEDED (issue 37, point 2), in the rehearsal: the template's state machine on
moto, its steps and the re-drive run by their real handlers as their roles, through the gateway.

What moto cannot show is modelled from AWS's documentation (tests/cloud/rehearsal.py): EventBridge's status-change
event and rule (``deliver_execution_events``), Lambda's reserved concurrency (``ReservedConcurrency``: a 429 beyond
the function's slots, ``Lambda.TooManyRequestsException`` to the Task) and a step's process dying
(``Runtime.ExitError``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from tests.cloud.conftest import APP, Flow
from tests.cloud.rehearsal import Gateway

DELETION_FUNCTION = "deletion"


def _entry(text: str) -> dict[str, Any]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def _erase(gateway: Gateway, key: str, user: str) -> str:
    scope = f"/v1/apps/{APP}/users/{user}"
    stored = gateway.request("POST", f"{scope}/memories", {"entry": _entry(f"{user} drinks tea")}, api_key=key)
    assert stored.status == 201, stored.body
    erase = gateway.request("DELETE", scope, api_key=key)
    assert erase.status == 202, erase.body
    return str(erase.body["deletion_id"])


def _status(gateway: Gateway, key: str, user: str, deletion_id: str) -> dict[str, Any]:
    reply = gateway.request("GET", f"/v1/apps/{APP}/users/{user}/deletions/{deletion_id}", api_key=key)
    assert reply.status == 200, reply.body
    return reply.body  # type: ignore[no-any-return]


def _until_all_end(
    flow: Flow, gateway: Gateway, key: str, erasures: Mapping[str, str], timeout: float = 600.0
) -> tuple[dict[str, str], list[Any]]:
    """Poll each erasure's status through the API, delivering every execution's status change to the rule's
    target meanwhile, until each is SUCCEEDED (or the time is up). Returns the statuses and the re-drive's
    answers."""
    deadline = time.monotonic() + timeout
    answers: list[Any] = []
    while True:
        answers += flow.deployment.deliver_execution_events()
        statuses = {user: _status(gateway, key, user, d)["status"] for user, d in erasures.items()}
        if all(s == "SUCCEEDED" for s in statuses.values()) or time.monotonic() > deadline:
            return statuses, answers
        time.sleep(0.5)


def _crash(when: Callable[[Mapping[str, Any]], bool]) -> Callable[[str, Mapping[str, Any]], bool]:
    return lambda function, event: function == DELETION_FUNCTION and when(event)


def test_an_erasure_whose_first_attempt_fails_is_redriven_to_succeeded(flow: Flow) -> None:
    d = flow.deployment
    gateway = Gateway(d)
    key = flow.keys[APP]
    # Given an erasure whose first attempt dies at its first step, and its failure record with it
    user = "redriven-dave"
    d.crashing = _crash(lambda event: event.get("step") in ("mark", "record_failure"))
    try:
        deletion_id = _erase(gateway, key, user)
        first = _until_attempt_stops(flow, deletion_id)
    finally:
        d.crashing = None
    assert first == "FAILED"
    # When EventBridge delivers its failure to the rule's target, and the re-drive's attempt runs
    statuses, answers = _until_all_end(flow, gateway, key, {user: deletion_id})
    # Then the erasure ends SUCCEEDED, by the second attempt
    assert statuses == {user: "SUCCEEDED"}
    assert {"outcome": "redriven"} in answers
    assert _until_attempt_stops(flow, f"{deletion_id}-1") == "SUCCEEDED"
    names = {e["name"]: e["status"] for e in _executions(flow) if e["name"].startswith(deletion_id)}
    assert names == {deletion_id: "FAILED", f"{deletion_id}-1": "SUCCEEDED"}
    exported = gateway.request("GET", f"/v1/apps/{APP}/users/{user}/export", api_key=key)
    assert exported.status == 200
    assert exported.body["entries"] == []
    # And every call the re-drive made was within its role's grants
    assert d.violations() == []


def test_a_burst_of_erasures_above_the_reserved_slots_all_ends_succeeded(flow: Flow) -> None:
    d = flow.deployment
    gateway = Gateway(d)
    key = flow.keys[APP]
    steps = d.functions[DELETION_FUNCTION].logical_id
    slots = d.concurrency.limits[steps]
    throttled_before = d.concurrency.throttled.get(steps, 0)
    # Given more erasures at once than the deletion function has reserved slots, all arriving before any
    # invocation finishes (the slots' holders are held until every erasure has asked for one)
    users = [f"burst-{n}" for n in range(slots + 2)]
    d.concurrency.hold.clear()
    try:
        erasures = {user: _erase(gateway, key, user) for user in users}
        deadline = time.monotonic() + 60
        while d.concurrency.throttled.get(steps, 0) - throttled_before < len(users) - slots:
            assert time.monotonic() < deadline, "the burst never went past the reserved slots"
            time.sleep(0.1)
        assert d.concurrency.in_flight[steps] == slots
    finally:
        d.concurrency.hold.set()
    # When the slots are free again / Then every erasure ends SUCCEEDED (retried through the throttling)
    statuses, _ = _until_all_end(flow, gateway, key, erasures)
    assert statuses == dict.fromkeys(users, "SUCCEEDED")
    assert d.concurrency.throttled[steps] - throttled_before >= len(users) - slots
    assert d.violations() == []


def _executions(flow: Flow) -> list[dict[str, Any]]:
    client = flow.deployment.operator_client("stepfunctions")
    pages = client.get_paginator("list_executions").paginate(stateMachineArn=flow.deployment.state_machine_arn)
    return [e for page in pages for e in page["executions"]]


def _until_attempt_stops(flow: Flow, name: str, timeout: float = 300.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status = next(e["status"] for e in _executions(flow) if e["name"] == name)
        if status != "RUNNING":
            return str(status)
        assert time.monotonic() < deadline, f"the execution {name} never stopped"
        time.sleep(0.2)
