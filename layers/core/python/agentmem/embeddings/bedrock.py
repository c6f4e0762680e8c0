"""Amazon Titan Text Embeddings v2 through ``bedrock-runtime`` (boto3 imported lazily, client built on first use).

Titan v2 embeds one text per ``InvokeModel`` call (a batch is sent as concurrent calls, 8 at a time by
default, so a 500-entry session stays well inside API Gateway's 29 s): the request is ``{"inputText", "dimensions",
"normalize"}`` and the response ``{"embedding": [...], "inputTextTokenCount": n}`` (plus
``embeddingsByType`` when ``embeddingTypes`` is asked for). Throttling and transient errors are retried
with exponential backoff; anything still failing raises :class:`~agentmem.errors.Unavailable`, which
the memory service turns into "indexing pending" on writes and a keyword fallback on searches.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from agentmem.errors import InvalidInput, Unavailable
from agentmem.search.tokenize import is_cjk

TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
MAX_INPUT_CHARS = 50_000
MAX_INPUT_TOKENS = 8_192
"""Titan v2's limits: 50,000 characters and 8,192 tokens, whichever comes first. Its tokenizer is not
available here, so a text is cut to an estimate that stays under the token limit (:func:`first_tokens`),
and when Titan still counts too many it is cut again by the count Titan reports."""
_CHARS_PER_TOKEN = {"cjk": 1.0, "other": 3.0}
_RETRYABLE = {
    "ThrottlingException",
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "InternalServerException",
    "ModelTimeoutException",
}
_HEALTH_WINDOW_SECONDS = 60.0
_TOO_MANY_TOKENS = re.compile(r"(?i)too many input tokens.*?(?:token count|count)\D*(\d+)")


def first_tokens(text: str) -> str:
    """The beginning of ``text`` that Titan reads in at most :data:`MAX_INPUT_TOKENS` tokens by a cautious
    estimate (a CJK character a token, three other characters a token) and at most 50,000 characters."""
    if len(text) <= MAX_INPUT_TOKENS // 2:  # short: under the limit even at two tokens a character
        return text
    budget = float(MAX_INPUT_TOKENS)
    for index, char in enumerate(text[:MAX_INPUT_CHARS]):
        budget -= 1.0 / _CHARS_PER_TOKEN["cjk" if is_cjk(char) else "other"]
        if budget < 0:
            return text[:index]
    return text[:MAX_INPUT_CHARS]


def estimated_tokens(text: str) -> int:
    """The Titan v2 tokens ``text`` costs by the cautious estimate :func:`first_tokens` cuts by (the usage
    meter counts them: Titan's own count is not available before the call, nor on another embedder)."""
    text = text[:MAX_INPUT_CHARS]
    cjk = 0 if text.isascii() else sum(1 for char in text if is_cjk(char))
    return min(MAX_INPUT_TOKENS, cjk + -(-(len(text) - cjk) // 3))


class BedrockEmbedder:
    def __init__(
        self,
        *,
        model: str = TITAN_V2,
        dimension: int = 1024,
        normalize: bool = True,
        region_name: str | None = None,
        client: Any = None,
        max_attempts: int = 5,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int = 8,
    ) -> None:
        if dimension not in TITAN_V2_DIMENSIONS:
            raise InvalidInput(f"Titan v2 dimensions are {TITAN_V2_DIMENSIONS}, not {dimension}")
        self.model = model
        self.dimension = dimension
        self.normalize = normalize
        self.model_id = f"bedrock:{model}:{dimension}"
        self._region = region_name
        self._client = client
        self._max_attempts = max_attempts
        self._sleep = sleep
        self._concurrency = max(1, concurrency)
        self._last_failure: float | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "bedrock-runtime",
                region_name=self._region,
                config=Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=10, connect_timeout=3),
            )
        return self._client

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._concurrency == 1 or len(texts) <= 1:
            return [self._embed_one(text) for text in texts]
        from concurrent.futures import ThreadPoolExecutor

        client = self.client  # build it once, before the threads share it (boto3 clients are thread-safe)
        del client
        with ThreadPoolExecutor(max_workers=min(self._concurrency, len(texts))) as pool:
            return list(pool.map(self._embed_one, texts))

    def _embed_one(self, text: str) -> list[float]:
        text = first_tokens(text)
        from botocore.exceptions import BotoCoreError, ClientError

        for attempt in range(self._max_attempts):
            body = json.dumps({"inputText": text or " ", "dimensions": self.dimension, "normalize": self.normalize})
            try:
                response = self.client.invoke_model(
                    modelId=self.model, body=body, contentType="application/json", accept="application/json"
                )
                payload = json.loads(response["body"].read())
                vector = [float(v) for v in payload["embedding"]]
                break
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                message = str(error.response.get("Error", {}).get("Message", ""))
                counted = _TOO_MANY_TOKENS.search(message)
                if code == "ValidationException" and counted and attempt < self._max_attempts - 1:
                    # Titan counted more tokens than our estimate: cut by its own count, with a margin
                    text = text[: len(text) * MAX_INPUT_TOKENS * 9 // (10 * max(int(counted[1]), 1))]
                    continue
                if code == "ValidationException":
                    raise InvalidInput(
                        f"Bedrock refused the text: {message[:200] or code}", code="embedding_refused"
                    ) from None
                if code not in _RETRYABLE or attempt == self._max_attempts - 1:
                    self._last_failure = time.monotonic()
                    raise Unavailable(
                        f"Bedrock embedding failed: {code or 'error'}", code="embedder_unavailable"
                    ) from None
            except (BotoCoreError, KeyError, ValueError) as error:
                if attempt == self._max_attempts - 1:
                    self._last_failure = time.monotonic()
                    raise Unavailable(
                        f"Bedrock embedding failed: {type(error).__name__}", code="embedder_unavailable"
                    ) from None
            self._sleep(min(2.0, 0.1 * 2**attempt))
        if len(vector) != self.dimension:
            raise Unavailable(f"Bedrock returned {len(vector)} dimensions, expected {self.dimension}")
        if not self.normalize:
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vector = [v / norm for v in vector]
        self._last_failure = None
        return vector

    def health(self) -> str:
        """``failing`` while the last call failed less than a minute ago (no paid call just to check)."""
        if self._last_failure is not None and time.monotonic() - self._last_failure < _HEALTH_WINDOW_SECONDS:
            return "failing"
        return "ok"
