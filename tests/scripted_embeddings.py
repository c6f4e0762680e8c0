"""A scripted OpenAI-compatible embeddings server for tests: real HTTP on 127.0.0.1, no model.

    with ScriptedEmbeddingsServer() as server:
        embedder = OpenAICompatibleEmbedder(server.url, server.model, api_key="sk-test")
        ...
        assert server.requests[0]["input"] == ["first text", "second text"]
        assert server.headers[0]["authorization"] == "Bearer sk-test"

It answers ``POST /v1/embeddings`` only (tests/scripted_model.py's server, on another path). The vectors are
fixed for each input: the hashing embedder's (words and word pieces: a test can assert rankings), of
``dimension`` floats, or of the request's ``dimensions`` when the server is built ``takes_dimensions``; a
model other than ``model`` is a 404, as Ollama and OpenAI answer. As
there, an :data:`~tests.scripted_model.Answerer` scripts each request: :data:`EMBED` answers with the
vectors, a :class:`~tests.scripted_model.ScriptedFailure` with a status and body (401, 429, 500, a body that
is not embeddings), a :class:`~tests.scripted_model.ScriptedDelay` waits first (a slow endpoint).
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

from agentmem.embeddings.hashing import HashingEmbedder
from tests.scripted_model import Answerer, ScriptedModelServer

EMBEDDINGS_PATH = "/v1/embeddings"
EMBED = "embed"
"""The reply that answers a request with its inputs' vectors."""


def always_embed(request: dict[str, Any]) -> str:
    return EMBED


class ScriptedEmbeddingsServer(ScriptedModelServer):
    path = EMBEDDINGS_PATH

    def __init__(
        self,
        answer: Answerer = always_embed,
        *,
        model: str = "scripted-embedder",
        dimension: int = 64,
        takes_dimensions: bool = False,
    ) -> None:
        super().__init__(answer, model=model)
        self.dimension = dimension
        self.takes_dimensions = takes_dimensions

    def __enter__(self) -> ScriptedEmbeddingsServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop(check=kind is None)

    @property
    def inputs(self) -> list[list[str]]:
        """Each request's ``input``, in order."""
        return [list(request["input"]) for request in self.requests]

    def vectors(self, texts: list[str], dimension: int | None = None) -> list[list[float]]:
        """What the server answers for ``texts`` (in a request asking for ``dimension``)."""
        size = dimension if self.takes_dimensions and dimension else self.dimension
        return HashingEmbedder(size).embed(texts)

    def _reply(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        if request.get("model") != self.model:  # as Ollama and OpenAI answer a model they do not serve
            with self._lock:
                self.requests.append(request)
                self.headers.append(headers)
            message = f"model {request.get('model')!r} not found, try pulling it first"
            return 404, json.dumps({"error": {"message": message, "code": "model_not_found"}}).encode()
        return super()._reply(request, headers)

    def _completion(self, request: dict[str, Any], content: str) -> dict[str, Any]:
        if content != EMBED:
            raise AssertionError(f"the scripted embeddings server answers EMBED or a failure, not {content!r}")
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        vectors = self.vectors(texts, request.get("dimensions"))
        return {
            "object": "list",
            # Listed last to first, as an endpoint may: the index says whose vector each is.
            "data": [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in reversed(range(len(texts)))],
            "model": request.get("model", self.model),
            "usage": {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0},
        }
