"""The Embedder port: text in, unit-length vectors out, with the id of the model that made them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    dimension: int

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
