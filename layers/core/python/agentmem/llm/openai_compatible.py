"""Any OpenAI-compatible chat-completions endpoint: Ollama, llama.cpp's server, vLLM, OpenAI itself.

Only the standard library (``urllib.request``) speaks to it, so the Lambda layer gains no dependency. The
answer's schema is sent as ``response_format: {"type": "json_schema", ...}``; an endpoint that refuses
that field (a 400 or 422) is asked once more without it, and the adapter remembers that this endpoint
does not take it. Without the field the model sees the schema only where the caller's prompt states it.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlparse

from agentmem.endpoint_errors import MAX_ERROR_BYTES, describe, error_message
from agentmem.llm.port import (
    DEFAULT_TIMEOUT_SECONDS,
    ChatAnswer,
    ChatRequest,
    ModelRefused,
    ModelTimedOut,
    ModelUnavailable,
    Usage,
    wire_name,
)

MAX_ANSWER_BYTES = 4 * 1024 * 1024
"""The most of an answer body read: ``max_tokens`` bounds an honest endpoint's answer far below it."""
CHARS_PER_TOKEN = 4
"""The estimate of tokens for an endpoint that reports no ``usage`` (a rough average for English text)."""
_SCHEMA_REFUSED = (400, 422)
_READ_CHUNK = 64 * 1024


class OpenAICompatibleChatModel:
    """A :class:`~agentmem.llm.port.ChatModel` answered by ``POST {base_url}/chat/completions``.

    ``base_url`` ends where the API's paths begin (``http://127.0.0.1:11434/v1`` for Ollama,
    ``http://127.0.0.1:8080/v1`` for llama.cpp's server); ``model`` is the endpoint's model name;
    ``api_key`` is sent as a bearer token when given. ``timeout_seconds`` bounds the wait for each
    network operation and the whole read of the answer.

    Usage is the endpoint's ``usage`` (``prompt_tokens``, ``completion_tokens``); an endpoint that reports
    none gets an estimate of one token per :data:`CHARS_PER_TOKEN` characters of the prompts and of the
    answer. A call asked again without ``response_format`` counts as two calls.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        parsed = urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"the model endpoint must be an http or https URL, not {base_url!r}")
        _ = parsed.port  # a port that is not a number raises ValueError here, not on the first call
        self.model_id = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._timeout = timeout_seconds
        self.takes_json_schema = True
        """False once this endpoint has refused ``response_format: json_schema``: it is no longer sent."""

    def complete(self, request: ChatRequest) -> ChatAnswer:
        body = self.request_body(request)
        try:
            return self._post(body, Usage())
        except _Refused as refused:
            if "response_format" not in body or refused.status not in _SCHEMA_REFUSED:
                raise refused.as_model_refused() from None
            spent = refused.usage
        del body["response_format"]
        try:
            answer = self._post(body, spent)
        except _Refused as refused:  # refused without the schema too: it was not the schema
            raise refused.as_model_refused() from None
        self.takes_json_schema = False
        return answer

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (public so that tests state the exact request)."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.prompt},
            ],
            "max_tokens": request.max_output_tokens,
            "temperature": 0,
        }
        if self.takes_json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": wire_name(request.schema_name),
                    "schema": request.schema,
                    "strict": strict_schema(request.schema),
                },
            }
        return body

    def _post(self, body: dict[str, Any], spent: Usage) -> ChatAnswer:
        """Send ``body`` once; ``spent`` is what earlier calls for the same request cost."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        call = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        failed = spent + Usage(calls=1)
        try:
            with urllib.request.urlopen(call, timeout=self._timeout) as response:
                raw = self._read(response, time.monotonic() + self._timeout, failed)
        except urllib.error.HTTPError as error:
            raise self._failure(error, failed) from None
        except (OSError, http.client.HTTPException) as error:
            # URLError (refused, no route, DNS), TimeoutError, a connection reset or cut mid-answer.
            reason = getattr(error, "reason", None) or error
            if isinstance(reason, TimeoutError):  # reached (or still connecting), but no answer in time: slow
                raise self._timed_out("did not answer", failed) from None
            message = f"model endpoint {self.url} unreachable: {describe(reason)}"
            raise ModelUnavailable(message, usage=failed) from None
        return self._answer(raw, body, spent)

    def _read(self, response: http.client.HTTPResponse, deadline: float, failed: Usage) -> bytes:
        """The answer body, read in chunks until :data:`MAX_ANSWER_BYTES` or the deadline (an endpoint that
        trickles its answer would otherwise hold the call for a timeout per chunk)."""
        chunks: list[bytes] = []
        size = 0
        while chunk := response.read1(_READ_CHUNK):
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise ModelUnavailable(
                    f"model endpoint {self.url} answered more than {MAX_ANSWER_BYTES} bytes", usage=failed
                )
            if time.monotonic() > deadline:
                raise self._timed_out("did not finish its answer", failed)
            chunks.append(chunk)
        return b"".join(chunks)

    def _timed_out(self, what: str, failed: Usage) -> ModelTimedOut:
        message = f"model endpoint {self.url} timed out: it {what} within {self._timeout:g} s"
        return ModelTimedOut(message, timeout_seconds=self._timeout, usage=failed)

    def _failure(self, error: urllib.error.HTTPError, failed: Usage) -> ModelUnavailable | _Refused:
        status = error.code
        try:
            detail = error_message(error.read(MAX_ERROR_BYTES))
        except (OSError, http.client.HTTPException):
            detail = ""
        finally:
            error.close()
        message = f"model endpoint {self.url} answered {status}{': ' + detail if detail else ''}"
        if status in (408, 429) or status >= 500:
            return ModelUnavailable(message, usage=failed)
        return _Refused(status, message, failed)

    def _answer(self, raw: bytes, body: dict[str, Any], spent: Usage) -> ChatAnswer:
        try:
            payload = json.loads(raw)
            choice = payload["choices"][0]
            content = choice["message"]["content"]
            if not isinstance(content, str | None):
                raise TypeError(f"content is {type(content).__name__}")
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise ModelUnavailable(
                f"model endpoint {self.url} answered without a chat completion ({describe(error)})",
                usage=spent + Usage(calls=1),
            ) from None
        text = content or ""
        reported = payload.get("usage") if isinstance(payload.get("usage"), dict) else None
        if reported and isinstance(reported.get("prompt_tokens"), int):
            usage = Usage(1, reported["prompt_tokens"], int(reported.get("completion_tokens") or 0))
        else:
            prompts = sum(len(str(message["content"])) for message in body["messages"])
            usage = Usage(1, math.ceil(prompts / CHARS_PER_TOKEN), math.ceil(len(text) / CHARS_PER_TOKEN))
        return ChatAnswer(text, spent + usage, truncated=choice.get("finish_reason") == "length")


def connection_refused(base_url: str, timeout_seconds: float = 1.0) -> str | None:
    """Why a TCP connection to the endpoint's host and port fails now (None when it connects): what the local
    server's banner says of its model. Nothing is sent."""
    parsed = urlparse(base_url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout_seconds):
            return None
    except OSError as error:
        return describe(error)


class _Refused(Exception):
    """A 4xx other than 408 and 429, before :meth:`OpenAICompatibleChatModel.complete` decides whether it
    was the schema that was refused."""

    def __init__(self, status: int, message: str, usage: Usage) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.usage = usage

    def as_model_refused(self) -> ModelRefused:
        return ModelRefused(self.message, usage=self.usage)


def strict_schema(schema: Any) -> bool:
    """Whether OpenAI's strict mode takes ``schema``: every object closed (``additionalProperties: false``)
    with every property required. Endpoints that do not know strict mode ignore the flag."""
    if isinstance(schema, list):
        return all(strict_schema(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(properties):
            return False
    return all(strict_schema(v) for k, v in schema.items() if k not in ("required", "enum", "const", "default"))
