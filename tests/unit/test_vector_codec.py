"""Vectors on entry items: half precision (tagged), and the float32 of entries written before still read."""

from __future__ import annotations

import math
import random
from array import array

from agentmem.embeddings.codec import HALF, decode_vector, encode_vector, vector_array


def _unit(dimension: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    vector = [rng.gauss(0, 1) for _ in range(dimension)]
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def test_a_vector_is_stored_in_half_the_bytes_and_cosines_barely_move() -> None:
    a, b = _unit(1024, 1), _unit(1024, 2)
    stored_a, stored_b = encode_vector(a), encode_vector(b)
    assert stored_a[:1] == HALF
    assert len(stored_a) == 1 + 2 * 1024  # Titan v2's 1,024 dimensions: 2 KiB, not 4
    exact = sum(x * y for x, y in zip(a, b, strict=True))
    read_a, read_b = decode_vector(stored_a), decode_vector(stored_b)
    assert abs(sum(x * y for x, y in zip(read_a, read_b, strict=True)) - exact) < 1e-4
    assert abs(sum(x * x for x in read_a) - 1.0) < 1e-3
    assert list(vector_array(stored_a)) == read_a


def test_a_float32_vector_written_before_is_read_as_it_was() -> None:
    vector = _unit(384, 3)
    legacy = array("f", vector).tobytes()
    assert len(legacy) % 2 == 0
    assert decode_vector(legacy) == array("f", vector).tolist()
    assert list(vector_array(legacy)) == array("f", vector).tolist()
