"""Small helpers shared by the benchmarks."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def timed(calls: list[Callable[[], object]]) -> list[float]:
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def report(label: str, samples_ms: list[float]) -> None:
    p50, p95 = percentiles(samples_ms)
    print(f"{label:<58} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   (n={len(samples_ms)})", flush=True)


def vocabulary(size: int = 3000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ra", "su", "to", "vi", "ze", "po", "an", "el", "or", "ti", "ba", "qu"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


_ZIPF_OFFSET = 100  # the head of a Zipf distribution is stopwords, which the tokenizer drops


def _zipf_weights(size: int) -> list[float]:
    return [1 / (rank + _ZIPF_OFFSET) for rank in range(1, size + 1)]


def sentence(rng: random.Random, words: list[str], length: tuple[int, int] = (8, 20)) -> str:
    """Words drawn by a Zipf law over content words: a few are common, most are rare, as in real notes."""
    weights = _zipf_weights(len(words))
    return " ".join(rng.choices(words, weights=weights, k=rng.randint(*length)))
