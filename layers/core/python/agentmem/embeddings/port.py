"""The Embedder port: text in, unit-length vectors out, with the id of the model that made them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agentmem.errors import Unavailable


@runtime_checkable
class Embedder(Protocol):
    @property
    def model_id(self) -> str:
        """What made the vectors: stored beside each one; a search compares only vectors of its own model."""
        ...

    @property
    def dimension(self) -> int:
        """The vectors' size."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector of ``dimension`` floats per text, L2-normalised, in input order."""
        ...


def embed_query(embedder: Embedder, text: str) -> list[float]:
    """Embed a search query: models with a query form (E5's ``query:`` prefix) expose ``embed_query``."""
    query_form = getattr(embedder, "embed_query", None)
    if callable(query_form):
        return list(query_form(text))
    return embedder.embed([text])[0]


def embedder_health(embedder: Embedder) -> str:
    check = getattr(embedder, "health", None)
    return str(check()) if callable(check) else "ok"


class EmbedderMisconfigured(Unavailable):
    """The embedding endpoint answers, but not as configured (its key refused, no such model, vectors of
    another size): retrying will not help until the operator fixes the settings the message names. Writes
    are stored pending and searches answer with keyword results, saying this message."""

    code = "embedder_misconfigured"
