"""API Gateway REQUEST authorizer: resolve ``x-api-key`` (or ``Authorization: Bearer``, as MCP clients
send it) to the tenant (app) it is bound to.

API Gateway caches the answer per key (identity source ``method.request.header.x-api-key``), so the
policy allows every method of the stage; the API handler then checks that the path's app is the
caller's app (403 otherwise). An unknown or revoked key raises ``Unauthorized``, which API Gateway
turns into 401, and counts in the ``KeysRejected`` metric: Lambda counts the raise as a function error, so the
stack's alarm on authorizer errors subtracts these to see the failures (infra/components/operations.py).
``usageIdentifierKey`` ties the request to the tenant's usage plan (quotas); ``tier`` in the context is the
tenant's plan tier (agentmem/tenancy/keys.py ``TIERS``).
"""

from __future__ import annotations

from typing import Any

from agentmem.container import get_container
from agentmem.errors import Unauthorized
from agentmem.observability import KEYS_REJECTED, MetricUnit, logger, metrics
from agentmem.tenancy.keys import presented_key


def _stage_wildcard(method_arn: str) -> str:
    """arn:aws:execute-api:region:account:api/stage/METHOD/path -> arn:...:api/stage/*/*"""
    prefix, _, rest = method_arn.partition(":execute-api:")
    parts = rest.split("/")
    return f"{prefix}:execute-api:{parts[0]}/{parts[1]}/*/*" if len(parts) >= 2 else method_arn


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        key = get_container().tenants.resolve(presented_key(event.get("headers")))
    except Unauthorized as exc:
        logger.info("api key rejected")
        metrics.add_metric(name=KEYS_REJECTED, unit=MetricUnit.Count, value=1)
        metrics.flush_metrics()
        raise Exception("Unauthorized") from exc  # API Gateway's documented way to answer 401
    response: dict[str, Any] = {
        "principalId": f"{key.app}/{key.key_id}",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": _stage_wildcard(event["methodArn"])}
            ],
        },
        "context": {
            "app": key.app,
            "key_id": key.key_id,
            "quota": key.quota_requests_per_day or 0,
            "tier": key.tier,
        },
    }
    if key.usage_key:
        response["usageIdentifierKey"] = key.usage_key
    return response
