"""CodeDeploy's pre-traffic hook of the API and the authorizer: check the versions being deployed before they take
traffic (agentmem/release_hook.py), then report the verdict to CodeDeploy, which rolls the deployment back on
Failed."""

from __future__ import annotations

import json
from typing import Any

import boto3

from agentmem.observability import logger
from agentmem.release_hook import FAILED, TARGET_ENV, check_authorizer, check_version, hook_execution
from agentmem.settings import get_settings


def _invoke(target: str) -> Any:
    client = boto3.client("lambda")

    def invoke(event: dict[str, Any]) -> tuple[Any, str | None]:
        answer = client.invoke(FunctionName=target, InvocationType="RequestResponse", Payload=json.dumps(event))
        return json.loads(answer["Payload"].read() or b"null"), answer.get("FunctionError")

    return invoke


def handler(event: dict[str, Any], context: Any) -> dict[str, str]:
    run = hook_execution(event)
    target = get_settings().prehook_target
    if not target:
        raise RuntimeError(f"{TARGET_ENV} is not set: the stack names the version to check")
    settings = get_settings()
    result = check_version(_invoke(target), request_id=f"prehook-{run.execution_id}")
    if result.status != FAILED and settings.prehook_authorizer_target:
        result = check_authorizer(_invoke(settings.prehook_authorizer_target), f"prehook-{run.execution_id}")
    logger.info("pre-traffic check", status=result.status, reason=result.reason, target=target)
    boto3.client("codedeploy").put_lifecycle_event_hook_execution_status(
        deploymentId=run.deployment_id, lifecycleEventHookExecutionId=run.execution_id, status=result.status
    )
    return {"status": result.status, "reason": result.reason}
