"""The local ASL interpreter: the states the deletion workflow uses, and refusal of everything else."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agentmem.deletion import asl, records
from agentmem.deletion.runners import FUNCTION_PLACEHOLDER, WORKFLOW_FILE, load_definition
from agentmem.errors import RateLimited
from agentmem.keys import UserRef
from tests.conftest import REPO_ROOT

RETRY = [{"ErrorEquals": ["RateLimited"], "IntervalSeconds": 2, "MaxAttempts": 3, "BackoffRate": 2.0}]


def task(step: str, **extra: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": "fn", "Parameters": {"step": step, "n.$": "$.n"}, **extra}


def test_the_workflow_cdk_deploys_is_the_packaged_one_and_is_interpretable() -> None:
    # Given the file CDK loads and the file the package ships
    deployed = REPO_ROOT / "infra" / "workflows" / WORKFLOW_FILE
    packaged = REPO_ROOT / "layers" / "core" / "python" / "agentmem" / "deletion" / WORKFLOW_FILE
    # Then they are one file, with the function substitution CDK fills, and the interpreter accepts it
    assert deployed.resolve() == packaged.resolve()
    assert FUNCTION_PLACEHOLDER in deployed.read_text()
    assert set(re.findall(r"\$\{[^}]*\}", deployed.read_text())) == {FUNCTION_PLACEHOLDER}
    asl.validate(load_definition())


def test_retry_backs_off_then_succeeds() -> None:
    # Given a task that is throttled twice
    failures = [RateLimited("slow down"), RateLimited("slow down")]
    slept: list[float] = []

    def invoke(resource: str, payload: Any) -> Any:
        if failures:
            raise failures.pop()
        return {"ok": payload["n"]}

    machine = {"StartAt": "A", "States": {"A": task("a", Retry=RETRY, ResultPath="$.out", End=True)}}
    # When it runs
    output = asl.Interpreter(machine, invoke, sleep=slept.append).run({"n": 7})
    # Then it waited with exponential backoff and kept the result under ResultPath
    assert slept == [2, 4]
    assert output == {"n": 7, "out": {"ok": 7}}


def test_exhausted_retries_go_to_catch_with_error_and_cause() -> None:
    def invoke(resource: str, payload: Any) -> Any:
        raise RateLimited("always")

    machine = {
        "StartAt": "A",
        "States": {
            "A": task("a", Retry=RETRY, Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.f", "Next": "F"}]),
            "F": {"Type": "Fail", "ErrorPath": "$.f.Error", "CausePath": "$.f.Cause"},
        },
    }
    # When the task keeps failing
    with pytest.raises(asl.ExecutionFailed) as failed:
        asl.Interpreter(machine, invoke, sleep=lambda _: None).run({"n": 1})
    # Then the execution fails with the task's error name and a Lambda-shaped cause
    assert failed.value.error == "RateLimited"
    assert json.loads(failed.value.cause) == {"errorType": "RateLimited", "errorMessage": "always"}


def test_map_parallel_and_choice_loop_run_every_step() -> None:
    # Given a map over two items, each looping until its counter reaches 2, beside a parallel branch
    calls: list[tuple[str, Any]] = []
    counters: dict[str, int] = {}

    def invoke(resource: str, payload: Any) -> Any:
        calls.append((payload["step"], payload.get("item")))
        if payload["step"] == "batch":
            counters[payload["item"]] = counters.get(payload["item"], 0) + 1
            return {"more": counters[payload["item"]] < 2}
        return {}

    loop = {
        "StartAt": "B",
        "States": {
            "B": {"Type": "Task", "Resource": "fn", "Parameters": {"step": "batch", "item.$": "$.item"}}
            | {"ResultPath": "$.r", "Next": "More"},
            "More": {"Type": "Choice", "Choices": [{"Variable": "$.r.more", "BooleanEquals": True, "Next": "B"}]}
            | {"Default": "Done"},
            "Done": {"Type": "Succeed"},
        },
    }
    machine = {
        "StartAt": "P",
        "States": {
            "P": {
                "Type": "Parallel",
                "ResultPath": None,
                "End": True,
                "Branches": [
                    {
                        "StartAt": "M",
                        "States": {
                            "M": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": None, "End": True}
                            | {"ItemSelector": {"item.$": "$$.Map.Item.Value"}, "ItemProcessor": loop},
                        },
                    },
                    {"StartAt": "V", "States": {"V": task("vectors", End=True)}},
                ],
            }
        },
    }
    # When it runs
    output = asl.Interpreter(machine, invoke).run({"items": ["x", "y"], "n": 0})
    # Then each item looped twice, the other branch ran, and ResultPath null kept the input
    assert calls == [("batch", "x"), ("batch", "x"), ("batch", "y"), ("batch", "y"), ("vectors", None)]
    assert output == {"items": ["x", "y"], "n": 0}


@pytest.mark.parametrize(
    "state",
    [
        {"Type": "Wait", "Timestamp": "2026-01-01T00:00:00Z", "End": True},
        {"Type": "Task", "Resource": "fn", "TimeoutSeconds": 3, "End": True},
        {"Type": "Choice", "Choices": [{"Variable": "$.a", "StringEquals": "x", "Next": "S"}], "Default": "S"},
    ],
)
def test_a_definition_using_unsupported_parts_is_refused_before_running(state: dict[str, Any]) -> None:
    machine = {"StartAt": "S", "States": {"S": state}}
    with pytest.raises(asl.AslUnsupported):
        asl.Interpreter(machine, lambda r, p: None)


@pytest.mark.parametrize(
    ("item", "kind"),
    [
        ({"sk": "E#01ABC", "content": "{}"}, "entries"),
        ({"sk": "GE#ana", "entity_type": "person"}, "graph_items"),
        ({"sk": "GP#s1#1", "text": "hello"}, "episodes"),
        ({"sk": "GT#token#doc", "tf": 1, "dl": 3}, None),
        ({"sk": "GPT#token#doc", "tf": 1, "dl": 3}, None),
        ({"sk": "GSTATS", "docs": 1, "length": 2, "version": 1}, None),
        ({"sk": "MT#dark#01ABC", "tf": 1, "dl": 3}, None),
        ({"sk": "SX#s1#01ABC"}, None),
    ],
)
def test_items_are_classified_by_kind(item: dict[str, Any], kind: str | None) -> None:
    assert records.classify({"pk": "S#a#u#", **item}) == kind


def test_the_receipt_hash_is_keyed_and_distinguishes_apps_and_users() -> None:
    ana = records.user_hash(b"k1", UserRef("app", "ana"))
    assert ana == records.user_hash(b"k1", UserRef("app", "ana"))
    assert ana != records.user_hash(b"k2", UserRef("app", "ana"))
    assert ana != records.user_hash(b"k1", UserRef("other", "ana"))
    assert records.user_hash(b"k1", UserRef("a#b", "c")) != records.user_hash(b"k1", UserRef("a", "b#c"))
    assert "ana" not in ana


def test_wait_sleeps_the_seconds_its_path_names() -> None:
    # Given a Wait reading its duration from the state, then a Pass
    machine = {
        "StartAt": "W",
        "States": {
            "W": {"Type": "Wait", "SecondsPath": "$.mark.drain_seconds", "Next": "P"},
            "P": {"Type": "Pass", "Result": "done", "ResultPath": "$.after", "End": True},
        },
    }
    slept: list[float] = []
    interpreter = asl.Interpreter(machine, lambda resource, payload: None, sleep=slept.append)
    # When it runs
    out = interpreter.run({"mark": {"drain_seconds": 7}})
    # Then it slept that long and went on; a duration that is not a number of seconds fails the execution
    assert slept == [7]
    assert out == {"mark": {"drain_seconds": 7}, "after": "done"}
    with pytest.raises(asl.ExecutionFailed):
        interpreter.run({"mark": {"drain_seconds": "x"}})
