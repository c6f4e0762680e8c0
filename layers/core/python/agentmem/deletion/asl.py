"""A tiny interpreter of the Amazon States Language subset the deletion workflow uses.

The local runner executes ``delete_user.asl.json`` itself with this interpreter, so the embedded
server and Step Functions run the same states in the same order and cannot drift (docs/adr/0500).
Supported: Task (Parameters, ResultPath, Retry, Catch), Choice (BooleanEquals,
NumericGreaterThanEquals), Map (ItemsPath, ItemSelector, ItemProcessor; items run one after
another), Parallel (branches run one after another), Pass, Wait (Seconds or SecondsPath), Succeed,
Fail (Error/Cause or ErrorPath/CausePath). Paths: ``$``, ``$.a.b``, ``$$.Map.Item.Value.a``, ``$$.Execution.Name``.
A definition using anything else is refused when loaded, never half-interpreted.
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

Invoke = Callable[[str, Any], Any]
"""Runs a Task: ``invoke(resource, payload) -> result``; raising fails the Task with the class name."""

_STATE_FIELDS: dict[str, set[str]] = {
    "Task": {"Resource", "Parameters", "ResultPath", "Retry", "Catch", "Next", "End", "Comment"},
    "Choice": {"Choices", "Default", "Comment"},
    "Map": {"ItemsPath", "ItemSelector", "ItemProcessor", "MaxConcurrency", "ResultPath", "Retry", "Catch"}
    | {"Next", "End", "Comment"},
    "Parallel": {"Branches", "ResultPath", "Retry", "Catch", "Next", "End", "Comment"},
    "Pass": {"Result", "ResultPath", "Next", "End", "Comment"},
    "Wait": {"Seconds", "SecondsPath", "Next", "End", "Comment"},
    "Succeed": {"Comment"},
    "Fail": {"Error", "Cause", "ErrorPath", "CausePath", "Comment"},
}
_CHOICE_TESTS = {"BooleanEquals", "NumericGreaterThanEquals"}
_MAX_TRANSITIONS = 1_000_000


class AslUnsupported(ValueError):
    """The definition uses a part of the language this interpreter does not implement."""


class ExecutionFailed(Exception):
    def __init__(self, error: str, cause: str) -> None:
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause


def validate(definition: Mapping[str, Any]) -> None:
    """Refuse, before running anything, a definition that uses states or fields not implemented here."""
    states = definition.get("States") or {}
    if definition.get("StartAt") not in states:
        raise AslUnsupported("StartAt names no state")
    for name, state in states.items():
        kind = state.get("Type")
        if kind not in _STATE_FIELDS:
            raise AslUnsupported(f"state {name}: type {kind!r} is not supported")
        extra = set(state) - _STATE_FIELDS[kind] - {"Type"}
        if extra:
            raise AslUnsupported(f"state {name}: fields {sorted(extra)} are not supported")
        if kind == "Choice":
            for rule in state["Choices"]:
                tests = set(rule) - {"Variable", "Next"}
                if not tests <= _CHOICE_TESTS or len(tests) != 1:
                    raise AslUnsupported(f"state {name}: choice rule {sorted(tests)} is not supported")
        if kind == "Map":
            validate(state["ItemProcessor"])
        if kind == "Parallel":
            for branch in state["Branches"]:
                validate(branch)


class Interpreter:
    def __init__(
        self,
        definition: Mapping[str, Any],
        invoke: Invoke,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        validate(definition)
        self._definition = definition
        self._invoke = invoke
        self._sleep = sleep

    def run(self, execution_input: Any, *, execution_name: str = "local") -> Any:
        """Run to the end; return the output, or raise :class:`ExecutionFailed` as a FAILED execution."""
        context = {"Execution": {"Name": execution_name, "Input": execution_input}}
        return self._run_machine(self._definition, execution_input, context)

    def _run_machine(self, machine: Mapping[str, Any], data: Any, context: dict[str, Any]) -> Any:
        name: str = machine["StartAt"]
        for _ in range(_MAX_TRANSITIONS):
            state = machine["States"][name]
            kind = state["Type"]
            if kind == "Succeed":
                return data
            if kind == "Fail":
                error = _path(data, context, state["ErrorPath"]) if "ErrorPath" in state else state.get("Error")
                cause = _path(data, context, state["CausePath"]) if "CausePath" in state else state.get("Cause")
                raise ExecutionFailed(str(error or "States.Fail"), str(cause or ""))
            if kind == "Choice":
                name = _choose(state, data, context)
                continue
            try:
                data = self._run_state(state, data, context)
            except ExecutionFailed as failure:
                handler = _catcher(state, failure.error)
                if handler is None:
                    raise
                data = _put(data, handler.get("ResultPath", "$"), {"Error": failure.error, "Cause": failure.cause})
                name = handler["Next"]
                continue
            if state.get("End"):
                return data
            name = state["Next"]
        raise ExecutionFailed("States.Runtime", "the workflow exceeded the transition limit")

    def _run_state(self, state: Mapping[str, Any], data: Any, context: dict[str, Any]) -> Any:
        kind = state["Type"]
        if kind == "Pass":
            return _put(data, state.get("ResultPath", "$"), copy.deepcopy(state.get("Result", data)))
        if kind == "Wait":
            seconds = _path(data, context, state["SecondsPath"]) if "SecondsPath" in state else state["Seconds"]
            if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
                raise ExecutionFailed("States.Runtime", f"Wait needs a number of seconds >= 0, not {seconds!r}")
            if seconds:
                self._sleep(seconds)
            return data
        if kind == "Task":
            payload = _render(state.get("Parameters", "$"), data, context)
            result = self._with_retry(state, lambda: self._call(state["Resource"], payload))
        elif kind == "Parallel":
            result = self._with_retry(
                state, lambda: [self._run_machine(b, copy.deepcopy(data), context) for b in state["Branches"]]
            )
        else:  # Map
            items = _path(data, context, state.get("ItemsPath", "$"))
            result = self._with_retry(state, lambda: self._map(state, items, data, context))
        return _put(data, state.get("ResultPath", "$"), result)

    def _map(self, state: Mapping[str, Any], items: list[Any], data: Any, context: dict[str, Any]) -> list[Any]:
        results = []
        for index, value in enumerate(items):
            item_context = {**context, "Map": {"Item": {"Index": index, "Value": value}}}
            item_input = _render(state["ItemSelector"], data, item_context) if "ItemSelector" in state else value
            results.append(self._run_machine(state["ItemProcessor"], item_input, item_context))
        return results

    def _call(self, resource: str, payload: Any) -> Any:
        try:
            return self._invoke(resource, payload)
        except ExecutionFailed:
            raise
        except Exception as exc:
            cause = json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)})
            raise ExecutionFailed(type(exc).__name__, cause) from exc

    def _with_retry(self, state: Mapping[str, Any], action: Callable[[], Any]) -> Any:
        attempts: dict[int, int] = {}
        while True:
            try:
                return action()
            except ExecutionFailed as failure:
                rules = enumerate(state.get("Retry", []))
                retriers = [(i, r) for i, r in rules if _matches(r["ErrorEquals"], failure.error)]
                if not retriers:
                    raise
                index, rule = retriers[0]
                done = attempts.get(index, 0)
                if done >= rule.get("MaxAttempts", 3):
                    raise
                attempts[index] = done + 1
                delay = rule.get("IntervalSeconds", 1) * rule.get("BackoffRate", 2.0) ** done
                delay = min(delay, rule.get("MaxDelaySeconds", delay))
                if rule.get("JitterStrategy") == "FULL":
                    delay = random.uniform(0, delay)
                self._sleep(delay)


def _matches(names: list[str], error: str) -> bool:
    if error in names:
        return True
    return "States.ALL" in names and error != "States.Runtime"


def _catcher(state: Mapping[str, Any], error: str) -> Mapping[str, Any] | None:
    for rule in state.get("Catch", []):
        if _matches(rule["ErrorEquals"], error):
            return rule  # type: ignore[no-any-return]
    return None


def _choose(state: Mapping[str, Any], data: Any, context: dict[str, Any]) -> str:
    for rule in state["Choices"]:
        try:
            value = _path(data, context, rule["Variable"])
        except ExecutionFailed:
            continue
        if "BooleanEquals" in rule and isinstance(value, bool) and value == rule["BooleanEquals"]:
            return str(rule["Next"])
        if (
            "NumericGreaterThanEquals" in rule
            and isinstance(value, int | float)
            and not isinstance(value, bool)
            and value >= rule["NumericGreaterThanEquals"]
        ):
            return str(rule["Next"])
    if "Default" not in state:
        raise ExecutionFailed("States.NoChoiceMatched", "no choice rule matched and there is no Default")
    return str(state["Default"])


def _path(data: Any, context: Mapping[str, Any], path: str) -> Any:
    if path.startswith("$$"):
        value: Any = context
        rest = path[2:]
    elif path.startswith("$"):
        value = data
        rest = path[1:]
    else:
        raise AslUnsupported(f"path {path!r} is not supported")
    for part in filter(None, rest.split(".")):
        if not isinstance(value, Mapping) or part not in value:
            raise ExecutionFailed("States.Runtime", f"the path {path!r} does not exist in the input")
        value = value[part]
    return value


def _render(template: Any, data: Any, context: Mapping[str, Any]) -> Any:
    """Evaluate a Parameters / ItemSelector template: ``"key.$": "$.path"`` takes a value from the input."""
    if isinstance(template, str) and template == "$":
        return copy.deepcopy(data)
    if isinstance(template, dict):
        rendered: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                rendered[key[:-2]] = copy.deepcopy(_path(data, context, value))
            else:
                rendered[key] = _render(value, data, context)
        return rendered
    if isinstance(template, list):
        return [_render(v, data, context) for v in template]
    return template


def _put(data: Any, result_path: str | None, result: Any) -> Any:
    """Place a state's result into its input as ResultPath says (null keeps the input unchanged)."""
    if result_path is None:
        return data
    if result_path == "$":
        return result
    if not result_path.startswith("$."):
        raise AslUnsupported(f"ResultPath {result_path!r} is not supported")
    output = copy.deepcopy(data) if isinstance(data, dict) else {}
    target = output
    parts = result_path[2:].split(".")
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = result
    return output
