"""Vectors as they are stored on entry items: little-endian float32 bytes (no floats in the table)."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

VECTOR_ATTR = "vector"
MODEL_ATTR = "model"
PENDING_ATTR = "vector_pending"
"""Set on an entry stored while the embedder was unreachable; `agentmem reindex` (or the indexer) embeds it later."""


def encode_vector(vector: Sequence[float]) -> bytes:
    packed = array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def decode_vector(data: bytes) -> list[float]:
    packed = array("f")
    packed.frombytes(data)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tolist()
