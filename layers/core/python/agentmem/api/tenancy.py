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

A missing, unknown or revoked key is 401; a key of another app is 403; a tenant over its daily quota
is 429. Each request that passes is metered to the app and UTC day: a request, and the items stored and
the texts embedded, as the services count them (:mod:`agentmem.tenancy.metering`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from agentmem.agentcore.records import app_of_memory
from agentmem.api.http import error_result, path_id
from agentmem.container import get_container
from agentmem.errors import Forbidden, MemoryServiceError, RateLimited
from agentmem.keys import validate_id
from agentmem.observability import logger
from agentmem.tenancy.keys import ApiKey, presented_key
from agentmem.tenancy.metering import counting, record_meter, record_usage

API_KEY_HEADER = "x-api-key"
_APP_PATH = re.compile(r"^/v1/apps/([^/]+)(?:/|$)")
_MEMORY_PATH = re.compile(r"^/agentcore/memories/([^/]+)(?:/|$)")
"""The AgentCore data plane (docs/agentcore.md): a memory id names an app."""
_STORING_METHODS = {"POST", "PUT"}

Resolve = Callable[[dict[str, Any]], dict[str, Any]]


def app_of_path(path: str) -> str | None:
    """The app a path addresses; None outside ``/v1/apps/{app}`` and ``/agentcore/memories/{memoryId}`` or when
    the segment is not a valid id."""
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
        )
    container = get_container()
    if container.settings.auth != "required":
        return None
    return container.tenants.resolve(presented_key(event.get("headers")))


def guard(event: dict[str, Any], resolve: Resolve, request_id: str = "") -> dict[str, Any]:
    """Authenticate, authorise and meter one API Gateway event around ``resolve``."""
    path_app = app_of_path(str(event.get("path") or ""))
    if path_app is None:
        return resolve(event)
    request_id = request_id or str((event.get("requestContext") or {}).get("requestId") or "")
    try:
        caller = caller_of(event)
        if caller is not None and caller.app != path_app:
            raise Forbidden("this API key belongs to another app")
        usage = record_usage(get_container().table, path_app, requests=1)
        quota = caller.quota_requests_per_day if caller else None
        if quota is not None and usage.requests > quota:
            raise RateLimited(f"the daily quota of {quota} requests of this app is used up")
    except MemoryServiceError as error:
        if error.http_status >= 500:
            logger.warning("tenant check failed", error_code=error.code)
        return error_result(error.http_status, error.code, error.message, request_id)
    with counting() as meter:
        result = resolve(event)
    try:
        record_meter(get_container().table, path_app, meter)
    except MemoryServiceError:  # the counters could not be written: the request's own answer stands
        logger.warning("metering failed", app=path_app)
    return result
