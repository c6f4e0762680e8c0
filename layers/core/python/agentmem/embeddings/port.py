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
