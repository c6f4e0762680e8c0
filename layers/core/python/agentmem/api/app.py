"""The API resolver: every route of API.md, one error mapping, and the Lambda entry point.

``functions/api/handler.py`` re-exports :func:`lambda_handler`; the local server calls the same
function with API Gateway REST proxy events, so local and Lambda run one code path.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentmem import __version__
from agentmem.api import middlewares, tenancy
from agentmem.api.http import (
    JSON,
    MAX_BODY_BYTES,
    documented,
    error_response,
    error_result,
    json_response,
    parse_body,
    served_methods,
)
from agentmem.api.routes import agentcore, extraction, graph, mcp, memories, service, store, users
from agentmem.api.routes import tenancy as tenancy_routes
from agentmem.budget import dumps
from agentmem.errors import MemoryServiceError, MethodNotAllowed
from agentmem.observability import logger, metrics, trace_handler
from agentmem.search import told
from agentmem.users import writes_end_with


class _Resolver(APIGatewayRestResolver):
    """Powertools' resolver, with the request it is resolving kept per thread.

    Powertools keeps the request on the resolver (and on a class attribute): one request at a time, as
    Lambda and the local server run it. Tests drive the handler from several threads at once, as several
    Lambda containers would, and there each thread's request must stay its own (two at once mixed their
    routes, and one answered 500)."""

    _request = threading.local()

    @property  # type: ignore[override]
    def current_event(self) -> Any:
        return self._request.event

    @current_event.setter
    def current_event(self, value: Any) -> None:
        self._request.event = value

    @property  # type: ignore[override]
    def lambda_context(self) -> Any:
        return getattr(self._request, "lambda_context", None)

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._request.lambda_context = value

    @property  # type: ignore[override]
    def context(self) -> dict[str, Any]:
        if not hasattr(self._request, "context"):
            self._request.context = {}
        return self._request.context  # type: ignore[no-any-return]

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._request.context = value

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        self.current_event = self._to_proxy_event(dict(event))
        self.lambda_context = context
        return super().resolve(event, context)


# Each answer is checked against its route's response model (a mismatch is our bug: 500, logged).
app = _Resolver(
    enable_validation=True, serializer=dumps, response_validation_error_http_code=500, json_body_deserializer=parse_body
)
app.use(middlewares=[middlewares.project_in_body, middlewares.idempotency])
app.include_router(memories.router)
app.include_router(service.router)
app.include_router(users.router)
app.include_router(tenancy_routes.router)
app.include_router(graph.router)
app.include_router(mcp.router)
app.include_router(store.router)
app.include_router(agentcore.router)
app.include_router(extraction.router)


def _request_id() -> str:
    context = getattr(app, "lambda_context", None)
    request_id = getattr(context, "aws_request_id", None)
    if request_id:
        return str(request_id)
    try:
        return str(app.current_event.request_context.request_id or "")
    except (AttributeError, KeyError):
        return ""


def _location(loc: Any) -> str:
    """Where a validation error is: its location's kind (body, query, path) left out, never a field that
    shares that name (a body's ``query``)."""
    parts = [str(p) for p in loc or ()]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "request"


@app.exception_handler(MemoryServiceError)
def _domain_error(exc: MemoryServiceError) -> Response[Any]:
    if exc.http_status >= 500:
        logger.warning("dependency failure", error_code=exc.code)
    headers = {"Allow": ", ".join(exc.allowed)} if isinstance(exc, MethodNotAllowed) else None
    return error_response(exc.http_status, exc.code, exc.message, _request_id(), exc.details, headers)


@app.exception_handler(RequestValidationError)
def _validation_error(exc: RequestValidationError) -> Response[Any]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "malformed_json", "the request body is not valid JSON", _request_id())
    details = [{"location": _location(e.get("loc")), "message": str(e.get("msg", ""))} for e in errors]
    first = details[0] if details else {"location": "request", "message": "invalid request"}
    message = f"{first['location']}: {first['message']}"
    return error_response(422, "invalid_input", message, _request_id(), details)


@app.exception_handler(UnicodeDecodeError)
def _bad_encoding(exc: UnicodeDecodeError) -> Response[Any]:
    return error_response(400, "malformed_request", "the request is not valid UTF-8", _request_id())


@app.not_found
def _not_found(exc: Exception) -> Response[Any]:
    served = served_methods(app, str(app.current_event.path))
    if served:  # the path is one of ours, by another method
        refused: Response[Any] = _domain_error(MethodNotAllowed(served))
        return refused
    return error_response(404, "route_not_found", "no such route; see /v1/openapi.json", _request_id())


@app.exception_handler(Exception)
def _unexpected(exc: Exception) -> Response[Any]:
    logger.exception("unhandled error")
    return error_response(
        500, "internal_error", "internal error; quote the request id when reporting it", _request_id()
    )


@app.get("/v1/openapi.json", summary="The OpenAPI document of this API", responses=documented(200, "the document"))
def openapi() -> Response[dict[str, Any]]:
    return json_response(200, openapi_document())


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document, with the bodies the error handlers above really send: Powertools lists its
    own shapes for a failed request or response validation, which :func:`_validation_error` and
    :func:`_unexpected` turn into the error envelope."""
    document: dict[str, Any] = json.loads(app.get_openapi_json_schema(title="Agent memory API", version=__version__))
    envelope = documented(200, "", 500)[500]
    error = {"description": envelope["description"], "content": {JSON: {"schema": {"$ref": _ERROR_REF}}}}
    for methods in document["paths"].values():
        for operation in methods.values():
            operation["responses"]["500"] = error
    schemas = document["components"]["schemas"]
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(unused, None)
    return document


_ERROR_REF = "#/components/schemas/ErrorBody"


def _oversized(event: dict[str, Any]) -> dict[str, Any] | None:
    body = event.get("body") or ""
    if len(body) * 4 <= MAX_BODY_BYTES or len(body.encode("utf-8", "surrogatepass")) <= MAX_BODY_BYTES:
        return None  # (bytes, not characters: 6 MB of CJK text is 2 M characters)
    request_id = str((event.get("requestContext") or {}).get("requestId", ""))
    return error_result(413, "payload_too_large", f"the request body exceeds {MAX_BODY_BYTES} bytes", request_id)


def _read_body_as_json(event: dict[str, Any]) -> dict[str, Any]:
    """The API speaks JSON only: read every body as JSON whatever Content-Type the client claimed
    (``curl -d`` sends a form type), so a JSON body is never parsed as a form."""
    if not event.get("body"):
        return event
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    return {
        **event,
        "headers": {**headers, "content-type": JSON},
        "multiValueHeaders": {**multi, "content-type": [JSON]},
    }


@logger.inject_lambda_context(clear_state=True)
@trace_handler
@metrics.log_metrics
def _handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request_id = str(getattr(context, "aws_request_id", "") or "")
    result = tenancy.guard(
        event, lambda checked: _oversized(checked) or app.resolve(_read_body_as_json(checked), context), request_id
    )
    return agentcore.aws_shaped(event, result)  # /agentcore answers errors in AgentCore's shape


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The API's Lambda entry point (and the local server's). Its writes end a second before its time does
    (:func:`~agentmem.users.writes_end_with`)."""
    try:
        with writes_end_with(context), told.reading():
            response: dict[str, Any] = _handle(event, context)
        return response
    finally:
        # log_metrics has flushed them when metrics are on; when they are off (the local server) Powertools
        # never clears them, and each request's values would pile up for the life of the process.
        metrics.clear_metrics()
