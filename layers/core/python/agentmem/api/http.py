"""Small HTTP helpers shared by the routes: JSON responses, the error body, path decoding."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response

from agentmem.errors import MalformedRequest
from agentmem.keys import Scope, UserRef, validate_project

JSON = "application/json"
MAX_BODY_BYTES = 6 * 1024 * 1024
MAX_JSON_DEPTH = 64
"""Arrays and objects nest at most this deep in a request body (function-call arguments included)."""
SCOPE_PATH = "/v1/apps/<app>/users/<user>"
_SCOPE_RE = re.compile(r"^/v1/apps/([^/]+)/users/([^/]+)")


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
    return Response(status_code=status_code, content_type=JSON, body=json.dumps(body, ensure_ascii=False))


def no_content() -> Response[Any]:
    return Response(status_code=204, content_type=JSON, body="")


def error_response(status_code: int, code: str, message: str, request_id: str, details: Any = None) -> Response[Any]:
    error: dict[str, Any] = {"code": code, "message": message, "request_id": request_id}
    if details is not None:
        error["details"] = details
    return json_response(status_code, {"error": error})


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
