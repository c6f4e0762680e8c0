"""Small HTTP helpers shared by the routes: JSON responses, the error body, the documented statuses,
path ids and their decoding."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from agentmem.budget import dumps
from agentmem.errors import MalformedRequest
from agentmem.keys import ID_JSON_SCHEMA, Scope, UserRef, validate_project
from agentmem.models.responses import ErrorBody, error_body

JSON = "application/json"
MAX_BODY_BYTES = 6 * 1024 * 1024
MAX_JSON_DEPTH = 64
"""Arrays and objects nest at most this deep in a request body (function-call arguments included)."""
SCOPE_PATH = "/v1/apps/<app>/users/<user>"
_SCOPE_RE = re.compile(r"^/v1/apps/([^/]+)/users/([^/]+)")
T = TypeVar("T")

PathId = Annotated[
    str,
    Path(
        description="1..256 bytes of UTF-8, no control characters; percent-encoded in the path",
        json_schema_extra=ID_JSON_SCHEMA,
    ),
]
"""A path segment that names an id; checked (after decoding) by :func:`agentmem.keys.validate_id`."""

_REASONS = {
    400: "malformed request (JSON, encoding, cursor)",
    401: "missing or unknown API key",
    403: "the API key belongs to another app",
    404: "unknown entity, or an id outside the caller's scope",
    409: "user erasure in progress, or a conflicting concurrent write",
    413: "request body over 6 MB",
    422: "invalid input",
    429: "throttled or over the daily quota",
    500: "internal error",
    503: "a dependency is down",
}
ALWAYS = (413, 422, 500)
"""Any request can be too large, invalid or meet a bug."""
TENANT = (400, 401, 403, 429, 503)
"""Every route under ``/v1/apps/{app}``: decoded path ids, the tenant check and quota, the table."""
WRITE = (*TENANT, 409)


def documented(status: int, description: str, *errors: int) -> dict[int, OpenAPIResponse]:
    """The OpenAPI responses of a route: its success (body from the return annotation) and its errors."""
    out: dict[int, OpenAPIResponse] = {status: {"description": description}}
    if status == 204:
        out[status]["content"] = {}
    for code in sorted({*ALWAYS, *errors}):
        out[code] = {"description": _REASONS[code], "content": {JSON: {"model": ErrorBody}}}
    return out


def parse_body(body: str) -> Any:
    """The request body as JSON, refused (400) when it nests deeper than ``MAX_JSON_DEPTH`` or holds a
    string no UTF-8 store can hold (a lone surrogate such as ``"\\ud800"``)."""
    try:
        value = json.loads(body)
    except RecursionError:
        raise MalformedRequest(
            f"the request body nests deeper than {MAX_JSON_DEPTH} levels", code="json_too_deep"
        ) from None
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                raise MalformedRequest(
                    "the request body holds a lone surrogate escape (\\ud800..\\udfff): not valid Unicode",
                    code="invalid_unicode",
                ) from None
        elif isinstance(node, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise MalformedRequest(
                    f"the request body nests deeper than {MAX_JSON_DEPTH} levels", code="json_too_deep"
                )
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            pending.extend((child, depth + 1) for child in children)
    return value


def json_response(status_code: int, body: Any) -> Response[Any]:
    """A JSON answer; the resolver checks ``body`` against the route's response model and writes it."""
    return Response(status_code=status_code, content_type=JSON, body=body)


def no_content() -> Response[Any]:
    """A 204 (its route returns ``Response[Any]``: a ``None`` model would have the body written as ``null``)."""
    return Response(status_code=204, content_type=JSON, body="")


def error_response(
    status_code: int,
    code: str,
    message: str,
    request_id: str,
    details: Any = None,
    headers: dict[str, str] | None = None,
) -> Response[Any]:
    return Response(status_code, JSON, dumps(error_body(code, message, request_id, details)), headers=headers)


def served_methods(resolver: Any, path: str, *, named: bool = False) -> list[str]:
    """The methods the resolver's routes serve ``path`` with; ``named``: only routes whose last segment is
    that name, not a placeholder (``POST .../memories/search``, not ``GET .../memories/<entry_id>``)."""
    methods: set[str] = set()
    for route in [*resolver._static_routes, *resolver._dynamic_routes]:
        if route.rule.match(path) and not (named and route.path.rstrip("/").rsplit("/", 1)[-1].startswith("<")):
            methods.add(str(route.method).upper())
    return sorted(methods)


def error_result(status_code: int, code: str, message: str, request_id: str) -> dict[str, Any]:
    """An error as an API Gateway proxy result, for answers given before the resolver runs (the tenant
    guard, the body size check) or outside it (the local server)."""
    body = dumps(error_body(code, message, request_id))
    return {"statusCode": status_code, "headers": {"Content-Type": JSON}, "body": body}


def path_id(raw: str) -> str:
    """Path segments arrive percent-encoded (API Gateway REST keeps them so): decode once."""
    return unquote(raw, errors="strict")


def user_from_path(app: str, user: str) -> UserRef:
    return UserRef.of(path_id(app), path_id(user))


def scope_from_path(app: str, user: str, project_id: str | None) -> Scope:
    ref = user_from_path(app, user)
    return Scope(ref.app, ref.user, validate_project(project_id))


def user_of_path(path: str) -> UserRef | None:
    """The user a request path addresses, if any (for middlewares that run before the route)."""
    match = _SCOPE_RE.match(path)
    return user_from_path(match.group(1), match.group(2)) if match else None
