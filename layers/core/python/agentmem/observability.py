"""Powertools observability singletons, beside the domain so every layer may log without importing a handler.

Never log memory content: log ids, counts and codes only.

Tracing: Lambda's active tracing (set by the CDK stack) records every invocation without any SDK in the
function. The X-Ray SDK (Powertools Tracer), which adds subsegments for each AWS call, costs about 300 ms
of import on every cold start, so it is opt-in: set ``MEMORY_XRAY_SDK=true``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

__all__ = [
    "KEYS_REJECTED",
    "NAMESPACE",
    "SEARCHES_DEGRADED",
    "SERVICE",
    "MetricUnit",
    "logger",
    "metrics",
    "trace_handler",
    "xray_sdk_enabled",
]

SERVICE = "agent-memory"
NAMESPACE = "AgentMemory"
SEARCHES_DEGRADED = "SearchesDegraded"
"""A search answered by keyword only because the embedder or the vector index failed (the stack alarms on it)."""
KEYS_REJECTED = "KeysRejected"
"""A missing, unknown or revoked key refused by the authorizer (what its alarm subtracts from its errors)."""

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

Handler = TypeVar("Handler", bound=Callable[..., Any])


def xray_sdk_enabled() -> bool:
    return os.environ.get("MEMORY_XRAY_SDK", "").lower() in ("1", "true", "yes")


def trace_handler(handler: Handler) -> Handler:
    """Wrap a Lambda handler with the Powertools Tracer on its first call, only when the SDK is enabled."""
    traced: list[Callable[..., Any]] = []

    @wraps(handler)
    def wrapper(event: Any, context: Any) -> Any:
        if not traced:
            if xray_sdk_enabled():
                from aws_lambda_powertools import Tracer

                traced.append(Tracer(service=SERVICE).capture_lambda_handler(handler, capture_response=False))
            else:
                traced.append(handler)
        return traced[0](event, context)

    return wrapper  # type: ignore[return-value]
