"""Tenant guard and metering around every request under ``/v1/apps/{app}`` (wired in api/app.py).

It wraps the resolver rather than being a Powertools route middleware because Powertools validates
the request before any ``app.use`` middleware runs: a caller with no key, or with another app's key,
must get 401/403 before anything else, not learn how the body of another tenant's route is checked.

Who the caller is:
- in the cloud, API Gateway's REQUEST authorizer (functions/authorizer) has resolved ``x-api-key``
  and put ``app`` (and the tenant's daily quota) in ``requestContext.authorizer``;
- otherwise, when ``MEMORY_AUTH=required`` (the default inside Lambda; ``agentmem serve --auth
  required`` locally), the key is resolved here against the tenant records in the table;
- with ``MEMORY_AUTH=none`` (the local default) there is no caller and no check.

A key may act on its own app and on every memory its app created through AgentCore's ``CreateMemory``
(agentmem/agentcore/control.py); any other app's is 403. ``CreateMemory`` and ``ListMemories`` name no
app: they act for the caller's (:func:`caller_app`). A memory being deleted answers 409 to everything but
the control plane. A missing, unknown or revoked key is 401; a tenant over its daily quota is 429. Each
request that passes is metered to the app and UTC day: a request, and the items stored and the texts
embedded, as the services count them (:mod:`agentmem.tenancy.metering`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from agentmem.agentcore.records import app_of_memory
from agentmem.api.http import JSON, error_result, path_id
from agentmem.budget import dumps
from agentmem.container import get_container
from agentmem.errors import (
    Conflict,
    Forbidden,
    MemoryServiceError,
    NotFound,
    RateLimited,
    TooManyInFlight,
)
from agentmem.keys import validate_id
from agentmem.observability import logger
from agentmem.tenancy.keys import DEFAULT_TIER, TIERS, ApiKey, presented_key
from agentmem.tenancy.metering import counting, record_meter, record_usage

API_KEY_HEADER = "x-api-key"
MCP_REFUSED = -32001
"""The JSON-RPC error code (implementation-defined server errors: -32000 to -32099) of a request to
``{scope}/mcp`` refused before it reached the MCP server (no key, another app's key, over quota)."""
_APP_PATH = re.compile(r"^/v1/apps/([^/]+)(?:/|$)")
_MEMORY_PATH = re.compile(r"^/agentcore/memories/([^/]+)(?:/|$)")
"""The AgentCore data plane (docs/agentcore.md): a memory id names an app."""
_CONTROL_PATH = re.compile(r"^/agentcore/memories/(?:create|[^/]+/(?:details|update|delete))?/?$")
"""The AgentCore control plane's memory operations (CreateMemory, ListMemories, Get/Update/DeleteMemory)."""
_caller_app: ContextVar[str | None] = ContextVar("caller_app", default=None)
_STORING_METHODS = {"POST", "PUT"}

Resolve = Callable[[dict[str, Any]], dict[str, Any]]


def caller_app() -> str:
    """The app of the key the current request carries ("" when auth is off): what CreateMemory makes the
    owner of a new memory, and whose memories ListMemories lists."""
    return _caller_app.get() or ""


def is_control_path(path: str) -> bool:
    return bool(_CONTROL_PATH.match(path))


def app_of_path(path: str) -> str | None:
    """The app a path addresses; None outside ``/v1/apps/{app}`` and ``/agentcore/memories/{memoryId}`` or when
    the segment is not a valid id (or names no memory: CreateMemory and ListMemories)."""
    if path.rstrip("/") in ("/agentcore/memories", "/agentcore/memories/create"):
        return None
    match = _APP_PATH.match(path)
    memory = _MEMORY_PATH.match(path) if match is None else None
    if match is None and memory is None:
        return None
    try:
        if memory is not None:
            return app_of_memory(path_id(memory.group(1)))
        assert match is not None
        return validate_id(path_id(match.group(1)), "app")
    except (MemoryServiceError, UnicodeDecodeError):
        return None  # the route itself answers 400/422


def _header(event: Mapping[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name:
            return str(value) if value is not None else None
    return None


def caller_of(event: Mapping[str, Any]) -> ApiKey | None:
    """The authenticated caller, or None when auth is off; raises Unauthorized for a bad key."""
    context = (event.get("requestContext") or {}).get("authorizer") or {}
    if isinstance(context, dict) and context.get("app"):
        quota = str(context.get("quota") or "")
        return ApiKey(
            app=str(context["app"]),
            key_id=str(context.get("key_id") or ""),
            status="active",
            created_at="",
            quota_requests_per_day=int(quota) if quota.isdigit() and int(quota) > 0 else None,
            tier=str(context["tier"]) if context.get("tier") in TIERS else DEFAULT_TIER,
        )
    container = get_container()
    if container.settings.auth != "required":
        return None
    return container.tenants.resolve(presented_key(event.get("headers")))


def guard(event: dict[str, Any], resolve: Resolve, request_id: str = "") -> dict[str, Any]:
    """Authenticate, authorise and meter one API Gateway event around ``resolve``."""
    path = str(event.get("path") or "")
    control = is_control_path(path)
    path_app = app_of_path(path)
    request_id = request_id or str((event.get("requestContext") or {}).get("requestId") or "")
    if path_app is None and not control:
        return resolve(event)
    try:
        caller = caller_of(event)
        if path_app is None:  # CreateMemory, ListMemories: for the caller's app
            path_app = caller.app if caller is not None else None
        else:
            _authorise(caller.app if caller is not None else None, path_app, control)
    except MemoryServiceError as error:
        return _refused(error, request_id, path)
    token = _caller_app.set(caller.app if caller is not None else None)
    try:
        if path_app is None:
            return resolve(event)
        return _metered(event, resolve, path_app, caller, request_id)
    finally:
        _caller_app.reset(token)


def _authorise(caller: str | None, app: str, control: bool) -> None:
    """A key may act on its own app and on the memories its app owns; a deleting memory takes only the
    control plane."""
    memories = get_container().memories
    memory = memories.get(app)
    if memory is None and memories.deleted(app):
        # AgentCore's answer for a deleted memory, to its owner as to anyone, with a key or without
        raise NotFound(f"no memory {app!r}: it was deleted", code="memory_not_found")
    if caller is not None and caller != app and (memory is None or memory.owner != caller):
        raise Forbidden("this API key belongs to another app, which does not own this memory")
    if memory is not None and memory.deleting and not control:
        raise Conflict("this memory is being deleted; nothing can be read or written", code="memory_deleting")


def _refused(error: MemoryServiceError, request_id: str, path: str) -> dict[str, Any]:
    """The refusal, in the API's error envelope; on ``{scope}/mcp``, as a JSON-RPC error (the envelope's
    fields in its ``data``), which MCP clients show as the message (the SDK shows any other body as
    "Server returned an error response")."""
    if error.http_status >= 500:
        logger.warning("tenant check failed", error_code=error.code)
    if path.rstrip("/").endswith("/mcp"):
        data = {"code": error.code, "request_id": request_id}
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": MCP_REFUSED, "message": error.message, "data": data}}
        return {"statusCode": error.http_status, "headers": {"Content-Type": JSON}, "body": dumps(body)}
    return error_result(error.http_status, error.code, error.message, request_id)


def _metered(
    event: dict[str, Any], resolve: Resolve, path_app: str, caller: ApiKey | None, request_id: str
) -> dict[str, Any]:
    path = str(event.get("path") or "")
    try:
        usage = record_usage(get_container().table, path_app, requests=1)
        quota = caller.quota_requests_per_day if caller else None
        if quota is not None and usage.requests > quota:
            raise RateLimited(f"the daily quota of {quota} requests of this app is used up")
    except MemoryServiceError as error:
        return _refused(error, request_id, path)
    admission = get_container().admission
    try:
        with (
            counting() as meter,  # (what the in-flight count writes is the request's too)
            admission.admitted(path_app, caller.tier) if caller else contextlib.nullcontext(),
        ):
            result = resolve(event)  # (the routes answer their own errors: a model share used included)
    except TooManyInFlight as error:
        return _refused(error, request_id, path)
    try:
        record_meter(get_container().table, path_app, meter)
    except MemoryServiceError:  # the counters could not be written: the request's own answer stands
        logger.warning("metering failed", app=path_app)
    return result
