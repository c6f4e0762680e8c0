"""``{scope}/mcp``: the Model Context Protocol over Streamable HTTP, stateless (API.md, "MCP").

A POST carries one JSON-RPC message and gets an ``application/json`` answer (202 and no body for a
notification); there is no session and no server-sent stream, so GET is 405. ``?project_id=`` scopes
every tool. Auth, metering and ``Idempotency-Key`` are the API's own (api/tenancy.py, middlewares).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from agentmem.api.http import JSON, SCOPE_PATH, scope_from_path
from agentmem.api.routes.graph import ProjectQuery
from agentmem.container import get_container

router = Router()

MCP = SCOPE_PATH + "/mcp"
PROTOCOL_HEADER = "mcp-protocol-version"


@router.post(MCP, summary="MCP over Streamable HTTP: one JSON-RPC message per POST", include_in_schema=False)
def mcp_message(app: str, user: str, project_id: ProjectQuery = None) -> Response[Any]:
    from agentmem.mcp.protocol import McpServer
    from agentmem.mcp.results import dumps

    scope = scope_from_path(app, user, project_id)
    event = router.current_event
    reply = McpServer(get_container(), scope).handle_text(
        event.body, protocol_version=event.headers.get(PROTOCOL_HEADER)
    )
    body = "" if reply.message is None else dumps(reply.message)
    return Response(status_code=reply.status, content_type=JSON, body=body)


@router.get(MCP, summary="No server-sent stream: this MCP server is stateless", include_in_schema=False)
def mcp_stream(app: str, user: str) -> Response[Any]:
    body = (
        '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Method Not Allowed: POST one JSON-RPC message"}}'
    )
    return Response(status_code=405, content_type=JSON, body=body, headers={"Allow": "POST"})
