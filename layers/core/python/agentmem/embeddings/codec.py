"""Vectors as they are stored on entry items (no floats in the table): bytes.

A vector is written in half precision: the byte :data:`HALF` and then little-endian float16s. A unit
vector's components lose about 5e-4 of their value, a cosine moves by about 1e-5, and the entry is
half the bytes: Titan v2's 1,024 dimensions are 2 KiB instead of 4, two write units fewer for each entry
stored, and half the read units for each process that loads a partition (docs/deploy.md). Vectors
written before are little-endian float32 without a tag (their length is a multiple of 4; a tagged one
is odd): both are read.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from typing import Any

VECTOR_ATTR = "vector"
MODEL_ATTR = "model"
PENDING_ATTR = "vector_pending"
"""Set on an entry stored while the embedder was unreachable; `agentmem reindex` (or the indexer) embeds it later."""
HALF = b"\x02"


def encode_vector(vector: Sequence[float]) -> bytes:
    return HALF + struct.pack(f"<{len(vector)}e", *vector)


def _is_half(data: bytes) -> bool:
    return len(data) % 2 == 1 and data[:1] == HALF


def decode_vector(data: bytes) -> list[float]:
    if _is_half(data):
        return list(struct.unpack(f"<{(len(data) - 1) // 2}e", data[1:]))
    packed = array("f")
    packed.frombytes(data)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tolist()


def vector_array(data: bytes) -> Any:
    """The vector as a numpy float32 array (numpy imported on first use)."""
    import numpy as np

    if _is_half(data):
        return np.frombuffer(data, dtype="<f2", offset=1).astype(np.float32)
    return np.frombuffer(data, dtype="<f4")
