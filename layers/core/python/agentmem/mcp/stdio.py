"""MCP over stdio (``agentmem mcp``): newline-delimited JSON-RPC on stdin/stdout.

Two backends answer the messages: :class:`McpServer` on the embedded store (the container), or a
remote API's ``{scope}/mcp`` endpoint, to which each message is forwarded as one POST (the same
tools, served by the deployed API with its auth and metering).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import IO, Any
from urllib.parse import quote, urlencode

from agentmem.mcp.protocol import PROTOCOL_VERSIONS, McpServer, Reply
from agentmem.mcp.results import dumps

Answer = Callable[[str], Reply]


def serve(answer: Answer, stdin: IO[str], stdout: IO[str]) -> None:
    """Answer each line of ``stdin`` until it closes; notifications get no line back."""
    for line in stdin:
        if not line.strip():
            continue
        reply = answer(line)
        if reply.message is not None:
            stdout.write(dumps(reply.message) + "\n")
            stdout.flush()


def embedded(server: McpServer) -> Answer:
    return lambda line: server.handle_text(line)


def endpoint_url(base_url: str, app: str, user: str, project_id: str | None) -> str:
    url = f"{base_url.rstrip('/')}/v1/apps/{quote(app, safe='')}/users/{quote(user, safe='')}/mcp"
    return url + (f"?{urlencode({'project_id': project_id})}" if project_id is not None else "")


def remote(url: str, api_key: str | None, *, timeout: float = 60.0) -> Answer:
    """Forward each message to a remote ``{scope}/mcp``; an HTTP refusal becomes a JSON-RPC error."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSIONS[0],
    }
    if api_key:
        headers["x-api-key"] = api_key

    def answer(line: str) -> Reply:
        request = urllib.request.Request(url, data=line.encode("utf-8"), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, body = response.status, response.read().decode("utf-8")
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read().decode("utf-8", "replace")
        except OSError as error:
            return Reply(503, _failure(line, f"the memory API at {url} cannot be reached: {error}"))
        if not body:
            return Reply(status)
        try:
            message = json.loads(body)
        except json.JSONDecodeError:
            return Reply(status, _failure(line, f"the memory API answered {status} without JSON"))
        refused = isinstance(message, dict) and status >= 400 and message.get("id") is None
        if isinstance(message, dict) and "jsonrpc" in message and not refused:
            return Reply(status, message)
        detail = message.get("error", {}).get("message") if isinstance(message, dict) else None
        return Reply(status, _failure(line, f"the memory API refused the request ({status}): {detail or body}"))

    return answer


def _failure(line: str, message: str) -> dict[str, Any] | None:
    """A JSON-RPC error answering the request on ``line``; None if it was a notification."""
    try:
        request = json.loads(line)
    except json.JSONDecodeError:
        request = None
    if isinstance(request, dict) and "id" not in request:
        return None
    request_id = request.get("id") if isinstance(request, dict) else None
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": message}}
