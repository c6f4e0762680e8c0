"""A scripted OpenAI-compatible chat-completions server for tests: real HTTP on 127.0.0.1, no model.

    with ScriptedModelServer(scripted_answers('{"facts": []}')) as server:
        chat = OpenAICompatibleChatModel(server.url, server.model)
        ...
        assert server.requests[0]["max_tokens"] == 1024

The test says what the "model" answers to each request with an :data:`Answerer`: a function of the request's
JSON that returns the assistant's message content (a string), a :class:`ScriptedFailure` (an HTTP status and
body, sent as they are), or a :class:`ScriptedDelay` (wait, then answer). The server behaves as an endpoint
does where a test can observe it:

- it answers ``POST /v1/chat/completions`` only (any other path is a 404);
- it honours ``max_tokens``: content longer than ``max_tokens`` tokens is cut there, with
  ``finish_reason: "length"``;
- it reports ``usage`` as ``prompt_tokens`` and ``completion_tokens``, one token per :data:`CHARS_PER_TOKEN`
  characters (of the messages' contents, and of the content sent), unless built with ``report_usage=False``.

An answerer that raises (a script that ran out, an assertion) makes the server answer 500, and the server
raises that error when its ``with`` block ends, so the test fails with it rather than with whatever the
500 led to.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CHARS_PER_TOKEN = 4
COMPLETIONS_PATH = "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class ScriptedFailure:
    """Answer with this HTTP status and body as they are (``status=200`` with a body that is not a chat
    completion scripts an endpoint that answers nonsense)."""

    status: int
    body: str = ""


@dataclass(frozen=True, slots=True)
class ScriptedDelay:
    """Wait ``seconds`` (cut short when the server stops), then answer ``then``."""

    seconds: float
    then: Reply


Reply = str | ScriptedFailure | ScriptedDelay
Answerer = Callable[[dict[str, Any]], Reply]
"""What the scripted model answers to a request (its JSON body)."""


def scripted_answers(*answers: Reply) -> Answerer:
    """Answer the requests in turn with ``answers``, one each. A request after the last is an error (the
    test made a call it did not expect): the server answers it 500 and raises it when its block ends."""
    remaining = list(answers)
    lock = threading.Lock()

    def answer(request: dict[str, Any]) -> Reply:
        with lock:
            if not remaining:
                raise AssertionError(f"the scripted model was asked more than the {len(answers)} answers scripted")
            return remaining.pop(0)

    return answer


class ScriptedModelServer:
    """An OpenAI-compatible endpoint on a free port of 127.0.0.1, answering as ``answer`` says; a context
    manager (or :meth:`start` and :meth:`stop`).

    ``url`` is the base URL (``http://127.0.0.1:<port>/v1``), ``model`` the model name it reports,
    ``requests`` every request body received, in order, and ``headers`` their HTTP headers (lower-case
    names), in the same order (both appended under a lock; read them after the calls).
    """

    path = COMPLETIONS_PATH
    """The one path it answers (a subclass serves another API: tests/scripted_embeddings.py)."""

    def __init__(
        self, answer: Answerer, *, model: str = "scripted-model", report_usage: bool = True, port: int = 0
    ) -> None:
        """``port``: where to listen (0: a free one; a port that refused connections until now: a model that
        comes back)."""
        self.answer = answer
        self.port = port
        self.model = model
        self.report_usage = report_usage
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.errors: list[BaseException] = []
        """What the answerer raised; :meth:`stop` (the end of the ``with`` block) raises the first."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the scripted model server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ScriptedModelServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, *, check: bool = True) -> None:
        """Stop serving (a request still waiting in a :class:`ScriptedDelay` is let go at once); with
        ``check``, raise what the answerer raised, if anything."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if check and self.errors:
            raise AssertionError(f"the scripted model's answerer raised: {self.errors[0]!r}") from self.errors[0]

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop(check=kind is None)  # a failing test keeps its own error

    # -- what one request gets (runs on the server's request threads) --------------------------------

    def _reply(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
        try:
            reply = self.answer(request)
            while isinstance(reply, ScriptedDelay):
                if self._stopping.wait(reply.seconds):
                    return 503, b'{"error": {"message": "the scripted model server is stopping"}}'
                reply = reply.then
        except Exception as error:
            with self._lock:
                self.errors.append(error)
            return 500, json.dumps({"error": {"message": f"the scripted answer raised {error!r}"}}).encode()
        if isinstance(reply, ScriptedFailure):
            return reply.status, reply.body.encode("utf-8")
        return 200, json.dumps(self._completion(request, reply)).encode("utf-8")

    def _completion(self, request: dict[str, Any], content: str) -> dict[str, Any]:
        max_tokens = request.get("max_tokens")
        finish_reason = "stop"
        if isinstance(max_tokens, int) and _tokens(content) > max_tokens:
            content, finish_reason = content[: max_tokens * CHARS_PER_TOKEN], "length"
        completion: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
        }
        if self.report_usage:
            prompt = sum(_tokens(str(message.get("content", ""))) for message in request.get("messages", []))
            output = _tokens(content)
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": output,
                "total_tokens": prompt + output,
            }
        return completion


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _handler_for(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != server.path:
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            try:
                request = json.loads(body)
            except ValueError:
                self._send(400, b'{"error": {"message": "the body is not JSON"}}')
                return
            self._send(*server._reply(request, {name.lower(): value for name, value in self.headers.items()}))

        def _send(self, status: int, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up (a timeout test): nobody reads this answer
                pass

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
