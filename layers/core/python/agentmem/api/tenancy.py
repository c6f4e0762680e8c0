"""Tenant guard and metering for every route under ``/v1/apps/{app}`` (registered in api/app.py).

Who the caller is:
- in the cloud, API Gateway's REQUEST authorizer (functions/authorizer) has resolved ``x-api-key``
  and put ``app`` (and the tenant's quota) in ``requestContext.authorizer``;
- otherwise, when ``MEMORY_AUTH=required`` (the default inside Lambda; ``agentmem serve --auth
  required`` locally), the key is resolved here against the tenant records in the table;
- with ``MEMORY_AUTH=none`` (the local default) there is no caller and no check.

A missing, unknown or revoked key is 401; a key of another app is 403, before any route runs.
Each request that passes is metered to the app of the day (requests, and items stored by writes).
"""

from __future__ import annotations

import json
import re
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

from agentmem.api.http import path_id
from agentmem.container import get_container
from agentmem.errors import Forbidden, MemoryServiceError, RateLimited
from agentmem.keys import validate_id
from agentmem.observability import logger
from agentmem.tenancy.keys import ApiKey
from agentmem.tenancy.metering import record_usage

API_KEY_HEADER = "x-api-key"
_APP_PATH = re.compile(r"^/v1/apps/([^/]+)(?:/|$)")
_STORING_METHODS = {"POST", "PUT"}


def app_of_path(path: str) -> str | None:
    match = _APP_PATH.match(path)
    return validate_id(path_id(match.group(1)), "app") if match else None


def _caller(app: APIGatewayRestResolver) -> ApiKey | None:
    event = app.current_event
    context = (event.raw_event.get("requestContext") or {}).get("authorizer") or {}
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
    return container.tenants.resolve(event.headers.get(API_KEY_HEADER))


def items_stored(method: str, response: Response[Any]) -> int:
    """How many entries or graph items a successful write stored, read from its response body."""
    if method not in _STORING_METHODS or not 200 <= response.status_code < 300:
        return 0
    try:
        body = json.loads(response.body) if isinstance(response.body, str) and response.body else None
    except json.JSONDecodeError:
        return 0
    if not isinstance(body, dict):
        return 0
    stored = body.get("stored")
    if isinstance(stored, bool):
        facts = body.get("facts_added")
        return facts if isinstance(facts, int) and stored else int(stored)
    if isinstance(stored, int):
        return stored
    if response.status_code == 201 and "id" in body:
        return 1
    for name in ("entities", "observations", "relations"):
        if isinstance(body.get(name), list):
            return len(body[name])
    if "created" in body or body.get("related") is True:
        return 1
    return 0


def tenant_guard(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
    event = app.current_event
    path_app = app_of_path(event.path)
    if path_app is None:
        return next_middleware(app)
    caller = _caller(app)
    if caller is not None and caller.app != path_app:
        raise Forbidden("this API key belongs to another app")
    table = get_container().table
    usage = record_usage(table, path_app, requests=1)
    quota = caller.quota_requests_per_day if caller else None
    if quota is not None and usage.requests > quota:
        raise RateLimited(f"the daily quota of {quota} requests of this app is used up")
    response = next_middleware(app)
    stored = items_stored(event.http_method, response)
    if stored:
        try:
            record_usage(table, path_app, items_stored=stored)
        except MemoryServiceError:
            logger.warning("metering failed", app=path_app)
    return response
