"""The pre-traffic check of a new API or authorizer version (CodeDeploy's ``BeforeAllowTraffic`` hook,
functions/prehook).

Before CodeDeploy moves any request to the version it deploys, the hook invokes that version directly with a
synthetic ``GET /v1/health`` (API Gateway's proxy event, as the gateway would send it) and tells CodeDeploy
``Succeeded`` when the version answers 200 (its stores ok, or degraded as the running version would be), else
``Failed``: a version that cannot import, start, reach its table or answer at all is rolled back before a
tenant's request meets it, however quiet the stage is (a canary that gets no traffic proves nothing). The same
hook checks the authorizer's version (its deployments are hidden from the canary's alarms by API Gateway's cache
of its answers): it must refuse a key of the key format that was never made (``Unauthorized``), which it can only
do by reading the key table; an answer that lets such a key in, or any other failure, is ``Failed``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentmem.errors import InvalidInput
from agentmem.settings import Env

TARGET_ENV = Env.PREHOOK_TARGET
"""The environment variable naming the version to check (its qualified ARN; the stack sets it to the version
being deployed)."""
AUTHORIZER_TARGET_ENV = Env.PREHOOK_AUTHORIZER_TARGET
"""Likewise, the authorizer's version."""
NEVER_MADE_KEY = "amk_standard_000000000000_" + "0" * 43
"""A key of the key format that no ``keys create`` makes (its key id is not random): the authorizer must refuse it."""
HEALTH_PATH = "/v1/health"
SUCCEEDED = "Succeeded"
FAILED = "Failed"

Invoke = Callable[[dict[str, Any]], tuple[Any, str | None]]
"""Invokes the version with an event: its payload (parsed JSON) and Lambda's ``FunctionError`` (None if none)."""


@dataclass(frozen=True)
class HookExecution:
    """What CodeDeploy's hook event names: the deployment and this run of its lifecycle hook."""

    deployment_id: str
    execution_id: str


@dataclass(frozen=True)
class Verdict:
    status: str
    """``Succeeded`` or ``Failed`` (CodeDeploy's lifecycle event status)."""
    reason: str


def hook_execution(event: Mapping[str, Any]) -> HookExecution:
    """The deployment and hook execution of CodeDeploy's event (``DeploymentId``, ``LifecycleEventHookExecutionId``)."""
    deployment, execution = event.get("DeploymentId"), event.get("LifecycleEventHookExecutionId")
    if not isinstance(deployment, str) or not deployment or not isinstance(execution, str) or not execution:
        raise InvalidInput("not a CodeDeploy lifecycle hook event (DeploymentId, LifecycleEventHookExecutionId)")
    return HookExecution(deployment, execution)


def health_request(request_id: str) -> dict[str, Any]:
    """``GET /v1/health`` as API Gateway's REST proxy integration delivers it on the stage."""
    return {
        "resource": HEALTH_PATH,
        "path": HEALTH_PATH,
        "httpMethod": "GET",
        "headers": {"User-Agent": "agentmem-prehook"},
        "multiValueHeaders": {"User-Agent": ["agentmem-prehook"]},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": HEALTH_PATH,
            "httpMethod": "GET",
            "path": HEALTH_PATH,
            "stage": "prehook",
            "requestId": request_id,
            "identity": {"sourceIp": "127.0.0.1", "apiKey": None},
            "authorizer": None,
        },
        "body": None,
        "isBase64Encoded": False,
    }


def verdict(payload: Any, function_error: str | None) -> Verdict:
    """Whether the version's answer to the health request lets it take traffic."""
    if function_error:
        return Verdict(FAILED, f"the version failed ({function_error}): {json.dumps(payload)[:300]}")
    if not isinstance(payload, Mapping) or "statusCode" not in payload:
        return Verdict(FAILED, "the version's answer is not an API Gateway proxy response")
    status = payload["statusCode"]
    try:
        body = json.loads(payload.get("body") or "null")
    except ValueError:
        body = None
    checks = body.get("checks") if isinstance(body, Mapping) else None
    if status != 200:
        return Verdict(FAILED, f"GET {HEALTH_PATH} answered {status}: {checks}")
    return Verdict(SUCCEEDED, f"GET {HEALTH_PATH} answered 200: {checks}")


def check_version(invoke: Invoke, request_id: str) -> Verdict:
    """Ask the version for its health and judge the answer (an invocation that raises is a failure)."""
    try:
        payload, function_error = invoke(health_request(request_id))
    except Exception as exc:  # any failure to invoke is the version's failure to deploy
        return Verdict(FAILED, f"the version could not be invoked: {type(exc).__name__}: {exc}")
    return verdict(payload, function_error)


def unknown_key_request(request_id: str) -> dict[str, Any]:
    """API Gateway's REQUEST authorizer event for ``GET /v1/health`` with a key that was never made."""
    return {
        "type": "REQUEST",
        "methodArn": f"arn:aws:execute-api:us-east-1:000000000000:prehook/prehook/GET{HEALTH_PATH}",
        "resource": HEALTH_PATH,
        "path": HEALTH_PATH,
        "httpMethod": "GET",
        "headers": {"x-api-key": NEVER_MADE_KEY, "User-Agent": "agentmem-prehook"},
        "requestContext": {"requestId": request_id, "stage": "prehook", "httpMethod": "GET", "path": HEALTH_PATH},
    }


def authorizer_verdict(payload: Any, function_error: str | None) -> Verdict:
    """Whether the authorizer's answer to a never-made key (``Unauthorized``, API Gateway's 401) lets it serve."""
    message = payload.get("errorMessage") if isinstance(payload, Mapping) else None
    if function_error and message == "Unauthorized":
        return Verdict(SUCCEEDED, "the authorizer refused a key that was never made (Unauthorized)")
    if not function_error:
        return Verdict(FAILED, f"the authorizer let a key that was never made in: {json.dumps(payload)[:300]}")
    return Verdict(FAILED, f"the authorizer failed ({function_error}): {json.dumps(payload)[:300]}")


def check_authorizer(invoke: Invoke, request_id: str) -> Verdict:
    """Ask the authorizer's version about a never-made key and judge the answer."""
    try:
        payload, function_error = invoke(unknown_key_request(request_id))
    except Exception as exc:
        return Verdict(FAILED, f"the authorizer could not be invoked: {type(exc).__name__}: {exc}")
    return authorizer_verdict(payload, function_error)
