"""Small HTTP helpers shared by the routes: JSON responses, the error body, path decoding."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response

from agentmem.keys import Scope, UserRef, validate_project

JSON = "application/json"
MAX_BODY_BYTES = 6 * 1024 * 1024
SCOPE_PATH = "/v1/apps/<app>/users/<user>"
_SCOPE_RE = re.compile(r"^/v1/apps/([^/]+)/users/([^/]+)")


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
