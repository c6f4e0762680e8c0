"""CodeDeploy's pre-traffic hook of the API (functions/prehook, agentmem/release_hook.py): its event, and its
verdict on the real API handler invoked in-process, as the hook invokes the new version (JSON in, JSON out).

The report to CodeDeploy (PutLifecycleEventHookExecutionStatus) is one boto3 call in the handler; moto does not
implement it, so it is not driven here (the template's grant of it: tests/infra/test_tenant_isolation.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agentmem.api.app import lambda_handler
from agentmem.container import Container, set_container
from agentmem.errors import InvalidInput
from agentmem.local.events import LocalContext
from agentmem.release_hook import (
    FAILED,
    HEALTH_PATH,
    NEVER_MADE_KEY,
    SUCCEEDED,
    check_authorizer,
    check_version,
    health_request,
    hook_execution,
)
from agentmem.settings import Settings
from agentmem.stores.table import Table


def _as_lambda_invokes_it(event: dict[str, Any]) -> tuple[Any, str | None]:
    """The API handler as the new version runs it: the event and the answer cross as JSON."""
    answer = lambda_handler(json.loads(json.dumps(event)), LocalContext())  # type: ignore[arg-type]
    return json.loads(json.dumps(answer)), None


def test_the_hook_reads_codedeploys_event() -> None:
    # Given CodeDeploy's documented hook event / Then the deployment and the hook's execution
    run = hook_execution({"DeploymentId": "d-ABCDEF123", "LifecycleEventHookExecutionId": "eyJ..."})
    assert (run.deployment_id, run.execution_id) == ("d-ABCDEF123", "eyJ...")
    for event in ({}, {"DeploymentId": "d-1"}, {"DeploymentId": "", "LifecycleEventHookExecutionId": "x"}):
        with pytest.raises(InvalidInput):
            hook_execution(event)


def test_a_healthy_version_passes(container: Container) -> None:
    # Given the synthetic request, API Gateway's proxy event for GET /v1/health
    request = health_request("prehook-1")
    assert (request["httpMethod"], request["path"], request["resource"]) == ("GET", HEALTH_PATH, HEALTH_PATH)
    # When the real API handler answers it / Then the version may take traffic
    result = check_version(_as_lambda_invokes_it, "prehook-1")
    assert result.status == SUCCEEDED, result.reason
    assert "200" in result.reason


def test_a_version_that_cannot_reach_its_table_fails(dynamo_table: Table) -> None:
    from agentmem.stores.dynamo_table import DynamoTable

    # Given a version whose table does not exist (moto: ResourceNotFoundException on every call)
    container = Container(
        Settings(deletion_drain_seconds=0), table=DynamoTable("no-such-table", region_name="us-east-1")
    )
    set_container(container)
    try:
        # When the hook asks it / Then it is refused traffic: the health answer is 503
        result = check_version(_as_lambda_invokes_it, "prehook-2")
    finally:
        set_container(None)
    assert result.status == FAILED
    assert "503" in result.reason


@pytest.mark.parametrize(
    ("answer", "error", "why"),
    [
        (
            {"errorMessage": "No module named 'agentmem'", "errorType": "Runtime.ImportModuleError"},
            "Unhandled",
            "failed",
        ),
        (None, None, "not an API Gateway proxy response"),
        ({"statusCode": 500, "body": '{"error": {"code": "internal_error"}}'}, None, "answered 500"),
    ],
)
def test_a_version_that_crashes_or_answers_otherwise_fails(answer: Any, error: str | None, why: str) -> None:
    result = check_version(lambda event: (answer, error), "prehook-3")
    assert result.status == FAILED
    assert why in result.reason


def test_a_version_that_cannot_be_invoked_fails() -> None:
    def throttled(event: dict[str, Any]) -> tuple[Any, str | None]:
        raise RuntimeError("TooManyRequestsException")

    result = check_version(throttled, "prehook-4")
    assert result.status == FAILED
    assert "TooManyRequestsException" in result.reason


def _authorizer_as_lambda_invokes_it(event: dict[str, Any]) -> tuple[Any, str | None]:
    """The authorizer's handler as Lambda runs it: an exception it raises is Lambda's Unhandled function error."""
    from functions.authorizer.handler import handler

    try:
        return json.loads(json.dumps(handler(json.loads(json.dumps(event)), LocalContext()))), None
    except Exception as error:  # Lambda's answer for a raised exception
        return {"errorMessage": str(error), "errorType": type(error).__name__}, "Unhandled"


def test_an_authorizer_version_that_refuses_a_key_never_made_passes(container: Container) -> None:
    from agentmem.tenancy.keys import KEY_FORMAT

    # Given the key the hook presents: of the key format, never made
    assert re.match(KEY_FORMAT, NEVER_MADE_KEY)
    container.tenants.create_key("someone")
    # When the real authorizer is asked about it / Then it refuses it, and the version may take traffic
    result = check_authorizer(_authorizer_as_lambda_invokes_it, "prehook-5")
    assert result.status == SUCCEEDED, result.reason


def test_an_authorizer_version_that_lets_the_key_in_or_cannot_read_its_table_fails(dynamo_table: Table) -> None:
    from agentmem.stores.dynamo_table import DynamoTable

    let_in = ({"principalId": "x", "policyDocument": {}}, None)
    assert check_authorizer(lambda event: let_in, "prehook-6").status == FAILED
    # Given a version whose table does not exist: its lookup fails (not Unauthorized) / Then it is refused traffic
    set_container(Container(Settings(), table=DynamoTable("no-such-table", region_name="us-east-1")))
    try:
        result = check_authorizer(_authorizer_as_lambda_invokes_it, "prehook-7")
    finally:
        set_container(None)
    assert result.status == FAILED, result.reason
