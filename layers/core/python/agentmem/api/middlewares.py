"""Middlewares that apply to every write route."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

from agentmem.api.http import user_of_path
from agentmem.budget import dumps
from agentmem.clock import parse_timestamp
from agentmem.container import get_container
from agentmem.errors import InvalidInput, PayloadTooLarge
from agentmem.held_items import collecting
from agentmem.idempotency import StoredResponse

IDEMPOTENCY_HEADER = "idempotency-key"
_WRITE_METHODS = {"POST", "PUT", "DELETE", "PATCH"}
_USER_ERASURE = re.compile(r"^/v1/apps/[^/]+/users/[^/]+/*$")
_MCP = re.compile(r"^/v1/apps/[^/]+/users/[^/]+/mcp/*$")
_READ_POSTS = re.compile(r"^/v1/apps/[^/]+/users/[^/]+/memories/(search|query)/*$")
_STORE_BATCH = re.compile(r"^/v1/apps/[^/]+/store/batch/*$")
"""A store batch is not recorded: its reads must answer from the data as it is, and its writes are
upserts and deletes by key, which a retry repeats harmlessly."""
"""``DELETE {scope}`` keeps no Idempotency-Key record: it would be written into the very partition
being erased, after the erasure; the route answers a retry with the running deletion by itself.
Trailing slashes as the REST resolver matches them (any number: ``^{rule}/*$``)."""


def _fingerprint(app: APIGatewayRestResolver) -> str:
    event = app.current_event
    query = sorted((event.multi_value_query_string_parameters or {}).items())
    digest = hashlib.sha256()
    for part in (event.http_method, event.path, repr(query), event.body or ""):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


def _writes(app: APIGatewayRestResolver) -> bool:
    """Whether the request is a write whose answer an ``Idempotency-Key`` records: not a read (GET, the read
    POSTs search and query, an MCP message other than a call of a tool that writes), not an erasure."""
    event = app.current_event
    if event.http_method not in _WRITE_METHODS:
        return False
    if event.http_method == "DELETE" and _USER_ERASURE.match(event.path):
        return False
    if _READ_POSTS.match(event.path) or _STORE_BATCH.match(event.path):
        return False
    if _MCP.match(event.path):
        return _calls_a_writing_tool(event.body)
    return True


def _calls_a_writing_tool(body: str | None) -> bool:
    from agentmem.mcp.tools import TOOLS

    try:
        message = json.loads(body or "")
    except ValueError:
        return False
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return False
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    tool = TOOLS.get(name) if isinstance(name, str) else None
    return tool is not None and not tool.annotations.get("readOnlyHint", False)


def _succeeded(response: Response[Any], body: str, mcp: bool) -> bool:
    """A 2xx, and for MCP a result that is neither a JSON-RPC error nor a failed tool call."""
    if not 200 <= response.status_code < 300:
        return False
    if not mcp:
        return True
    try:
        message = json.loads(body)
    except ValueError:
        return False
    result = message.get("result") if isinstance(message, dict) else None
    return isinstance(result, dict) and "error" not in message and result.get("isError") is not True


def _earliest_expiry(body: str) -> int | None:
    """The earliest ``expires_at`` anywhere in a JSON answer, in epoch seconds (None: none)."""
    found: list[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                if name == "expires_at" and isinstance(item, str):
                    with contextlib.suppress(ValueError):
                        found.append(int(parse_timestamp(item).timestamp()))
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    with contextlib.suppress(ValueError):
        walk(json.loads(body))
    return min(found, default=None)


def idempotency(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Replay the first answer to a write retried with the same ``Idempotency-Key`` and body."""
    event = app.current_event
    key = event.headers.get(IDEMPOTENCY_HEADER) if _writes(app) else None
    user = user_of_path(event.path) if key else None
    if key is None or user is None:
        return next_middleware(app)
    store = get_container().idempotency
    fingerprint = _fingerprint(app)
    stored = store.begin(user, key, fingerprint)
    if stored is not None:
        return Response(
            status_code=stored.status_code,
            content_type=stored.content_type,
            body=stored.body,
            headers={"Idempotent-Replayed": "true"},
        )
    started_ms = int(time.time() * 1000)
    try:
        with collecting() as held:  # the items the answer holds, as the services write them
            response = next_middleware(app)
    except BaseException:
        store.release(user, key)
        raise
    # The route's answer, as the resolver will write it (already checked against its model).
    body = response.body if isinstance(response.body, str) else dumps(response.body)
    if not _succeeded(response, body, bool(_MCP.match(event.path))):
        store.release(user, key)
        return response
    try:
        answer = StoredResponse(response.status_code, body, "application/json")
        expires = _earliest_expiry(body)
        store.complete(user, key, fingerprint, answer, started_ms=started_ms, expires=expires, holds=held)
    except PayloadTooLarge:  # an answer over one item, or holding too many: the write stands, a retry runs again
        store.release(user, key)
    return response


def project_in_body(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Refuse ``?project_id=`` on a POST or PUT: those routes read the project from the JSON body, and
    ignoring the query parameter would silently widen the write to the user's global scope."""
    event = app.current_event
    if _MCP.match(event.path):
        return next_middleware(app)  # MCP takes its scope from the URL (API.md): the body is JSON-RPC
    if event.http_method in ("POST", "PUT") and "project_id" in (event.query_string_parameters or {}):
        raise InvalidInput(
            "on POST and PUT, send project_id in the JSON body, not in the query string",
            code="project_id_in_query",
        )
    return next_middleware(app)
