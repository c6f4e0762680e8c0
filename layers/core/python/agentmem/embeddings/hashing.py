"""A deterministic, dependency-free embedder for tests: feature hashing of words and character trigrams.

It understands no meaning, only shared words and word pieces, but it is stable across processes and
machines (blake2b, not Python's salted ``hash``), so tests can assert rankings.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from agentmem.search.tokenize import tokenize


class HashingEmbedder:
    def __init__(self, dimension: int = 384) -> None:
        if dimension < 8:
            raise ValueError("dimension must be at least 8")
        self.dimension = dimension
        self.model_id = f"hashing-v1-{dimension}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        features: list[tuple[str, float]] = []
        for token in tokenize(text, min_length=1):
            features.append(("w:" + token, 1.0))
            padded = f"<{token}>"
            features.extend(("c:" + padded[i : i + 3], 0.5) for i in range(max(1, len(padded) - 2)))
        return features

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for text in texts:
            vector = [0.0] * self.dimension
            for feature, weight in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                slot = int.from_bytes(digest[:4], "little") % self.dimension
                vector[slot] += weight if digest[4] & 1 else -weight
            norm = math.sqrt(sum(v * v for v in vector))
            if norm == 0.0:
                vector[0] = 1.0  # a text with no words still gets a unit vector
                norm = 1.0
            vectors.append([v / norm for v in vector])
        return vectors

    def health(self) -> str:
        return "ok"
