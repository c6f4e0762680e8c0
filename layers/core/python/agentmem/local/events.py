"""Build API Gateway REST proxy events (the shape Lambda receives) from plain HTTP requests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs


def rest_event(
    method: str,
    raw_path: str,
    *,
    query: str = "",
    headers: Mapping[str, str] | None = None,
    body: str | None = None,
    stage: str = "local",
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event. ``raw_path`` stays percent-encoded, as API Gateway sends it."""
    multi_query = parse_qs(query, keep_blank_values=True) if query else {}
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    request_id = str(uuid.uuid4())
    return {
        "resource": "/{proxy+}",
        "path": raw_path,
        "httpMethod": method.upper(),
        "headers": lowered,
        "multiValueHeaders": {k: [v] for k, v in lowered.items()},
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": {"proxy": raw_path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method.upper(),
            "path": f"/{stage}{raw_path}",
            "stage": stage,
            "requestId": request_id,
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": source_ip, "apiKey": lowered.get("x-api-key")},
            "authorizer": None,
        },
        "body": body,
        "isBase64Encoded": False,
    }


LOCAL_REQUEST_SECONDS = 25
"""A local request's time, as the function's timeout is in Lambda: under the 30 s an erasure waits after its
mark (MEMORY_DELETION_DRAIN_SECONDS) for the requests begun before it, so none of them writes after that."""


class LocalContext:
    """The parts of a Lambda context that the handler and Powertools read; its time starts when it is made."""

    function_name = "agent-memory-local"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:agent-memory-local"
    memory_limit_in_mb = 1024
    log_group_name = "local"
    log_stream_name = "local"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self._ends_at = time.monotonic() + LOCAL_REQUEST_SECONDS

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends_at - time.monotonic()) * 1000))
