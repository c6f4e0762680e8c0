"""The local HTTP server: each request becomes an API Gateway REST proxy event for the real handler."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentmem.api.http import MAX_BODY_BYTES
from agentmem.local.events import LocalContext, rest_event

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
_HANDLER_LOCK = threading.Lock()


class _RequestHandler(BaseHTTPRequestHandler):
    server_version = "agent-memory-local"
    protocol_version = "HTTP/1.1"
    lambda_handler: LambdaHandler

    def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": {"code": code, "message": message, "request_id": ""}}).encode()
        self._reply(status, {"Content-Type": "application/json"}, body)

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._error(413, "payload_too_large", f"the request body exceeds {MAX_BODY_BYTES} bytes")
            return
        raw = self.rfile.read(length) if length else b""
        try:
            body = raw.decode("utf-8") if raw else None
        except UnicodeDecodeError:
            self._error(400, "malformed_request", "the request body is not valid UTF-8")
            return
        path, _, query = self.path.partition("?")
        event = rest_event(self.command, path, query=query, headers=dict(self.headers.items()), body=body)
        # Like one Lambda execution environment, the handler serves one event at a time: the Powertools
        # resolver keeps the current event on the app object, which concurrent calls would share.
        with _HANDLER_LOCK:
            result = type(self).lambda_handler(event, LocalContext())
        headers = {k: str(v) for k, v in (result.get("headers") or {}).items()}
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers[name] = ", ".join(str(v) for v in values)
        self._reply(int(result.get("statusCode", 500)), headers, (result.get("body") or "").encode("utf-8"))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _dispatch

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def make_server(host: str, port: int, lambda_handler: LambdaHandler) -> ThreadingHTTPServer:
    handler_class = type("RequestHandler", (_RequestHandler,), {"lambda_handler": staticmethod(lambda_handler)})
    server = ThreadingHTTPServer((host, port), handler_class)
    server.daemon_threads = True
    return server
