"""Any OpenAI-compatible ``/embeddings`` endpoint: OpenAI, Ollama, vLLM, LM Studio, llama.cpp's server, gateways.

Only the standard library (``urllib.request``) speaks to it, so the Lambda layer gains no dependency. Texts
go in batches (a list ``input``) of at most ``batch_size`` texts and :data:`BATCH_TOKENS` estimated tokens;
each text is cut to :data:`~agentmem.embeddings.bedrock.MAX_INPUT_TOKENS` by a cautious estimate (OpenAI's
limit; an endpoint whose model reads fewer truncates or refuses). Failures map to the library's errors:

- 429, 408, 5xx and a connection refused or reset are retried (``max_attempts`` in all, with backoff), then
  :class:`~agentmem.errors.Unavailable` (``embedder_unavailable``); a timeout is not retried (it already
  waited ``timeout_seconds``);
- 401/403 (the key), 404 (the model or the path) and vectors of another size than configured are
  :class:`~agentmem.embeddings.port.EmbedderMisconfigured`, naming the setting to fix;
- another 4xx refuses the texts: :class:`~agentmem.errors.InvalidInput` (``embedding_refused``), so a write
  embeds its other texts one by one and stores the refused one pending.

``model_id`` is ``openai:<model>`` (``openai:<model>:<dimensions>`` when dimensions are asked for): what the
store records beside each vector. The endpoint's address is not part of it, so the same model served
elsewhere keeps its vectors comparable.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlparse

from agentmem.embeddings.bedrock import estimated_tokens, first_tokens
from agentmem.embeddings.port import EmbedderMisconfigured
from agentmem.endpoint_errors import MAX_ERROR_BYTES, describe, error_message
from agentmem.errors import InvalidInput, Unavailable

DEFAULT_BATCH_SIZE = 64
BATCH_TOKENS = 100_000
"""Estimated tokens one request carries at most (OpenAI takes 300,000 a request; local servers fewer)."""
DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_ANSWER_BYTES = 64 * 1024 * 1024
_HEALTH_WINDOW_SECONDS = 60.0

ApiKey = str | Callable[[], str] | None
"""The bearer token, or a function that reads it (from Secrets Manager, on the first call), or none."""


class OpenAICompatibleEmbedder:
    """An :class:`~agentmem.embeddings.port.Embedder` answered by ``POST {base_url}/embeddings``.

    ``base_url`` ends where the API's paths begin (``https://api.openai.com/v1``, ``http://127.0.0.1:11434/v1``);
    ``dimensions``, when given, is sent (for models that shorten their vectors, as OpenAI's text-embedding-3)
    and every answer is checked against it; without it the model's own size is learned from its first answer.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: ApiKey = None,
        dimensions: int | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"the embedding endpoint must be an http or https URL, not {base_url!r}")
        _ = parsed.port  # a port that is not a number raises ValueError here, not on the first call
        if not model:
            raise ValueError("the embedding endpoint needs a model name")
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be above 0, not {dimensions}")
        self.model = model
        self.url = base_url.rstrip("/") + "/embeddings"
        self.asked_dimensions = dimensions
        self._model_id = f"openai:{model}" + (f":{dimensions}" if dimensions else "")
        self._dimension = dimensions
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._batch_size = max(1, batch_size)
        self._max_attempts = max(1, max_attempts)
        self._sleep = sleep
        self._last_failure: float | None = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        """The configured size, or the model's own, learned from an answer (asked for with one text if
        nothing was embedded yet: ``agentmem create-index`` sizes the OpenSearch index by it)."""
        if self._dimension is None:
            self.embed(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in self.batches([first_tokens(text) or " " for text in texts]):
            vectors.extend(self._embed_batch(batch))
        return vectors

    def batches(self, texts: Sequence[str]) -> list[list[str]]:
        """``texts`` in requests of at most ``batch_size`` texts and :data:`BATCH_TOKENS` estimated tokens."""
        batches: list[list[str]] = []
        tokens = 0
        for text in texts:
            cost = estimated_tokens(text)
            if not batches or len(batches[-1]) >= self._batch_size or tokens + cost > BATCH_TOKENS:
                batches.append([])
                tokens = 0
            batches[-1].append(text)
            tokens += cost
        return batches

    def request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}  # floats: the API's default
        if self.asked_dimensions is not None:
            body["dimensions"] = self.asked_dimensions
        return body

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        data = json.dumps(self.request_body(texts), ensure_ascii=False).encode("utf-8")
        for attempt in range(self._max_attempts):
            try:
                payload = self._post(data)
                break
            except _Retryable as error:
                if attempt == self._max_attempts - 1:
                    raise self._failed(Unavailable(str(error), code="embedder_unavailable")) from None
                self._sleep(min(2.0, error.wait if error.wait is not None else 0.2 * 2**attempt))
            except Unavailable as error:
                raise self._failed(error) from None
        vectors = self._vectors(payload, len(texts))
        self._last_failure = None
        return vectors

    def _failed(self, error: Unavailable) -> Unavailable:
        self._last_failure = time.monotonic()
        return error

    def _post(self, data: bytes) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self._api_key() if callable(self._api_key) else self._api_key
        if key:
            headers["Authorization"] = f"Bearer {key}"
        call = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(call, timeout=self._timeout) as response:
                raw = response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as error:
            raise self._refusal(error) from None
        except TimeoutError:
            raise Unavailable(
                f"the embedding endpoint did not answer within {self._timeout:g} s", code="embedder_unavailable"
            ) from None
        except (OSError, http.client.HTTPException) as error:  # refused, reset, no route, DNS, cut mid-answer
            reason = getattr(error, "reason", None) or error
            if isinstance(reason, TimeoutError):
                raise Unavailable(
                    f"the embedding endpoint did not answer within {self._timeout:g} s", code="embedder_unavailable"
                ) from None
            raise _Retryable(f"the embedding endpoint is unreachable: {describe(reason)}") from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise Unavailable(f"the embedding endpoint answered more than {MAX_ANSWER_BYTES} bytes")
        try:
            return json.loads(raw)
        except ValueError:
            raise Unavailable("the embedding endpoint answered something other than JSON") from None

    def _refusal(self, error: urllib.error.HTTPError) -> Exception:
        status = error.code
        try:
            detail = error_message(error.read(MAX_ERROR_BYTES))
        except (OSError, http.client.HTTPException):
            detail = ""
        finally:
            error.close()
        said = f"the embedding endpoint answered {status}{': ' + detail if detail else ''}"
        if status in (408, 429) or status >= 500:
            wait = _retry_after(error.headers.get("Retry-After") if error.headers else None)
            return _Retryable(said, wait)
        if status in (401, 403):  # its words may quote part of the key: not repeated
            return EmbedderMisconfigured(
                f"the embedding endpoint refused the API key ({status}): check MEMORY_EMBEDDER_API_KEY"
            )
        if status == 404:
            return EmbedderMisconfigured(f"{said} (check MEMORY_EMBEDDER_MODEL {self.model!r} and MEMORY_EMBEDDER_URL)")
        if self.asked_dimensions is not None and ("dimension" in detail.lower() or "matryoshka" in detail.lower()):
            return EmbedderMisconfigured(f"{said} (unset MEMORY_EMBEDDER_DIMENSIONS for a model of one size)")
        return InvalidInput(said, code="embedding_refused")

    def _vectors(self, payload: Any, count: int) -> list[list[float]]:
        try:
            rows = sorted(payload["data"], key=lambda row: int(row.get("index", 0)))
            vectors = [[float(v) for v in row["embedding"]] for row in rows]
        except (TypeError, KeyError, ValueError, AttributeError):
            raise self._failed(Unavailable("the embedding endpoint answered without embeddings")) from None
        if len(vectors) != count:
            raise self._failed(Unavailable(f"the embedding endpoint answered {len(vectors)} vectors for {count} texts"))
        sizes = {len(v) for v in vectors}
        expected = self._dimension if self._dimension is not None else next(iter(sizes), None)
        if sizes - {expected}:
            size = next(iter(sorted(sizes - {expected})))
            setting = "MEMORY_EMBEDDER_DIMENSIONS" if self.asked_dimensions is not None else "the model's size so far"
            raise self._failed(
                EmbedderMisconfigured(
                    f"the embedding endpoint answered {size}-dimension vectors, not the {expected} of {setting}"
                )
            )
        self._dimension = expected
        return [_unit(v) for v in vectors]

    def health(self) -> str:
        """``failing`` while the last call failed less than a minute ago (no call just to check)."""
        if self._last_failure is not None and time.monotonic() - self._last_failure < _HEALTH_WINDOW_SECONDS:
            return "failing"
        return "ok"


class _Retryable(Exception):
    """A failure worth another attempt (throttled, the endpoint's own error, the connection)."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0 or abs(norm - 1.0) < 1e-6:
        return vector
    return [v / norm for v in vector]


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
