"""Middlewares that apply to every write route."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

from agentmem.api.http import user_of_path
from agentmem.budget import dumps
from agentmem.container import get_container
from agentmem.errors import InvalidInput, PayloadTooLarge
from agentmem.idempotency import StoredResponse

IDEMPOTENCY_HEADER = "idempotency-key"
_WRITE_METHODS = {"POST", "PUT", "DELETE", "PATCH"}
_USER_ERASURE = re.compile(r"^/v1/apps/[^/]+/users/[^/]+/*$")
_MCP = re.compile(r"^/v1/apps/[^/]+/users/[^/]+/mcp/*$")
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


def idempotency(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Replay the first answer to a write retried with the same ``Idempotency-Key`` and body."""
    event = app.current_event
    key = event.headers.get(IDEMPOTENCY_HEADER) if event.http_method in _WRITE_METHODS else None
    if event.http_method == "DELETE" and _USER_ERASURE.match(event.path):
        key = None
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
    try:
        response = next_middleware(app)
    except BaseException:
        store.release(user, key)
        raise
    if 200 <= response.status_code < 300:
        # The route's answer, as the resolver will write it (already checked against its model).
        body = response.body if isinstance(response.body, str) else dumps(response.body)
        try:
            store.complete(user, key, fingerprint, StoredResponse(response.status_code, body, "application/json"))
        except PayloadTooLarge:  # an answer too big for one table item: the write stands, a retry runs again
            store.release(user, key)
    else:
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
