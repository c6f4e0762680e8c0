"""The part of the Model Context Protocol this server speaks, written against the specification
(revisions 2025-06-18 and 2025-11-25), without the SDK: importing the MCP Python SDK costs most of a
second, which every cold start of the API would pay (docs/adr/0700-mcp-protocol-subset.md).

One JSON-RPC message in, at most one out: ``initialize``, ``ping``, ``tools/list``, ``tools/call``,
``resources/list``, ``resources/templates/list``, ``resources/read``; notifications and responses from
the client are accepted and answered with nothing. Stateless: no session, nothing kept between
messages, so the same :class:`McpServer` serves Streamable HTTP (one POST per message) and stdio.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentmem import __version__
from agentmem.errors import MemoryServiceError
from agentmem.mcp.results import ToolResult, graph_result
from agentmem.mcp.tool import Services, ToolArgumentsError
from agentmem.mcp.tools import TOOLS
from agentmem.observability import logger

if TYPE_CHECKING:
    from agentmem.keys import Scope

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18")
"""Newest first: offered when the client asks for a version we do not speak."""
SERVER_NAME = "agentmem"
GRAPH_RESOURCE = "memory://knowledge-graph"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

INSTRUCTIONS = (
    "Long-term memory for this user: a knowledge graph (entities with observations, typed relations) and "
    "searchable memories. Use search_nodes or search_memory before answering from memory; store lasting "
    "facts with remember or create_entities / add_observations."
)


class ProtocolError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True, slots=True)
class Reply:
    """What to send back: an HTTP status and the JSON-RPC message (None: nothing, 202)."""

    status: int
    message: dict[str, Any] | None = None


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class McpServer:
    """The tools and the graph resource of one scope ``(app, user, project)`` on the given services."""

    def __init__(self, services: Services, scope: Scope) -> None:
        self.services = services
        self.scope = scope

    def handle_text(self, body: str | None, *, protocol_version: str | None = None) -> Reply:
        """One message as it arrived (a POST body or a stdio line)."""
        try:
            message = json.loads(body or "")
        except (json.JSONDecodeError, RecursionError):
            return Reply(400, _error(None, PARSE_ERROR, "Parse error: the body is not one JSON-RPC message"))
        return self.handle(message, protocol_version=protocol_version)

    def handle(self, message: Any, *, protocol_version: str | None = None) -> Reply:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return Reply(400, _error(None, INVALID_REQUEST, "Invalid Request: expected one JSON-RPC 2.0 object"))
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            return Reply(202)  # a response to a server request; this server sends none
        if not isinstance(method, str):
            return Reply(400, _error(message.get("id"), INVALID_REQUEST, "Invalid Request: method must be a string"))
        if "id" not in message:
            return Reply(202)  # notifications (initialized, cancelled, ...) need no answer
        request_id = message["id"]
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return Reply(400, _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"))
        if method != "initialize" and protocol_version is not None and protocol_version not in PROTOCOL_VERSIONS:
            supported = ", ".join(PROTOCOL_VERSIONS)
            return Reply(
                400,
                _error(request_id, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version {protocol_version!r}; "
                       f"supported: {supported}", {"supported": list(PROTOCOL_VERSIONS)}),
            )  # fmt: skip
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return Reply(200, _error(request_id, INVALID_PARAMS, "params must be an object"))
        try:
            result = self._dispatch(method, params)
        except ProtocolError as error:
            return Reply(200, _error(request_id, error.code, error.message, error.data))
        return Reply(200, {"jsonrpc": "2.0", "id": request_id, "result": result})

    def _dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [tool.definition() for tool in TOOLS.values()]}
        if method == "tools/call":
            return self._call_tool(params)
        if method == "resources/list":
            return {"resources": [_graph_resource()]}
        if method == "resources/templates/list":
            return {"resourceTemplates": []}
        if method == "resources/read":
            return self._read_resource(params)
        raise ProtocolError(METHOD_NOT_FOUND, f"Method not found: {method}")

    @staticmethod
    def _initialize(params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}, "resources": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "title": "Agent memory", "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    def _call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        tool = TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return _tool_error(f"Invalid arguments for tool {name}: arguments must be an object")
        try:
            result = tool.call(self.services, self.scope, arguments)
        except ToolArgumentsError as error:
            return _tool_error(str(error))
        except MemoryServiceError as error:
            if error.http_status >= 500:
                logger.warning("mcp tool failed on a dependency", tool=tool.name, error_code=error.code)
            return _tool_error(f"{error.message} ({error.code})")
        except Exception:
            logger.exception("mcp tool failed", tool=tool.name)
            return _tool_error("internal error; retry later")
        return _tool_result(result)

    def _read_resource(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if uri != GRAPH_RESOURCE:
            raise ProtocolError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
        graph = self.services.graph.read_graph(self.scope)
        text = graph_result(graph["entities"], graph["relations"]).text
        return {"contents": [{"uri": GRAPH_RESOURCE, "mimeType": "application/json", "text": text}]}


def _tool_result(result: ToolResult) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": result.text}],
        "structuredContent": result.structured,
        "isError": False,
    }


def _tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _graph_resource() -> dict[str, Any]:
    return {
        "uri": GRAPH_RESOURCE,
        "name": "knowledge-graph",
        "title": "Knowledge Graph",
        "description": "The full knowledge graph with all entities and relations (at most 1 MiB)",
        "mimeType": "application/json",
    }
