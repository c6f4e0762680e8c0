"""Search with a metadata filter matching 1% of 100,000 entries of one user, per mode, through MemoryService on a
real SQLite table with the exact vector index (the local and `table` backends), and POST memories/query.

The entries are written as items directly (as bench_search does), each with a vector, its words
and metadata ``{"tag": "t0".."t99", "n": i}``; the filter ``{"tag": "t7"}`` matches 1,000 of them. The query
word ``coffee`` is in 1/8 of the entries (12,500), 125 of which match the filter.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchlib import scaled

HERE = Path(__file__).resolve().parent
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

COUNT = scaled(100_000, 10_000) // 5_000 * 5_000  # written 5,000 at a time; 1% is enough for every check
DIMENSION = 128
TAGS = 100


def main() -> None:
    sys.path[:0] = [str(HERE)]
    import numpy as np
    from benchlib import report, timed

    from agentmem.embeddings.codec import MODEL_ATTR, VECTOR_ATTR
    from agentmem.embeddings.hashing import HashingEmbedder
    from agentmem.keys import Scope
    from agentmem.memory import records
    from agentmem.memory.filters import parse
    from agentmem.memory.service import MemoryService
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.vectors.exact import ExactVectorIndex

    embedder = HashingEmbedder(DIMENSION)
    scope = Scope("bench", "filters")
    words = ["memory", "note", "coffee", "meeting", "invoice", "travel", "garden", "music"]
    with tempfile.TemporaryDirectory() as folder:
        table = SqliteTable(Path(folder) / "filters.db")
        rng = np.random.default_rng(5)
        matrix = rng.standard_normal((COUNT, DIMENSION)).astype("<f4")
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        started = time.perf_counter()
        for start in range(0, COUNT, 5000):
            batch = []
            for i in range(start, start + 5000):
                tokens = ["memory", "note", words[(i // TAGS) % len(words)]]
                item = records.entry_item(
                    scope,
                    f"01FILTER{i:018d}",
                    session_id=None,
                    content={"role": "user", "parts": [{"text": " ".join(tokens) + f" {i}"}]},
                    author="user",
                    timestamp=f"2026-{1 + i % 12:02d}-01T00:00:00.000Z",
                    terms=Counter(tokens),
                    length=len(tokens),
                    metadata={"tag": f"t{i % TAGS}", "n": i},
                )
                item[VECTOR_ATTR] = matrix[i].tobytes()
                item[MODEL_ATTR] = embedder.model_id
                batch.append(item)
            table.batch_write(puts=batch)
        print(f"  {COUNT} entries x {DIMENSION} dims written in {time.perf_counter() - started:.0f} s", flush=True)
        service = MemoryService(table, embedder=embedder, vector_index=ExactVectorIndex(table))
        where = parse({"tag": "t7"})
        started = time.perf_counter()
        service.search(scope, "coffee", top_k=10, mode="semantic")
        print(f"  first semantic search (decodes the partition into the cache): {time.perf_counter() - started:.1f} s")
        runs = 7
        for mode in ("keyword", "semantic", "hybrid"):
            for label, filt in (("no filter", None), ("filter 1%", where)):
                calls = [
                    lambda m=mode, f=filt: service.search(scope, "coffee", top_k=10, mode=m, where=f)  # type: ignore[misc]
                    for _ in range(runs)
                ]
                got = service.search(scope, "coffee", top_k=10, mode=mode, where=filt).entries
                assert len(got) == 10
                assert filt is None or all(e.metadata["tag"] == "t7" for e in got)
                report(f"search {mode:<8} top_k 10, {label}", timed(calls))

        def twenty_matches() -> int:
            """Pages of the 1% filter, followed by their cursors, until 20 matches (a page reads 1,000 entries
            at most, so it may hold fewer)."""
            found, cursor = 0, None
            while found < 20:
                page = service.query(scope, where, limit=20 - found, cursor=cursor)
                found += len(page.entries)
                cursor = page.next_cursor
                if cursor is None:
                    break
            return found

        assert twenty_matches() == min(20, COUNT // TAGS)
        report("POST memories/query 20 matches of a 1% filter", timed([twenty_matches] * runs))
        exact = service.vector_index
        assert exact is not None
        _opensearch(scope, matrix, embedder.model_id, exact)  # the exact index answers from the table
        table.close()


def _opensearch(scope: object, matrix: object, model: str, exact: object) -> None:
    """The same vectors and metadata in the OpenSearch node: the filter pushed into the k-NN query."""
    import uuid

    import numpy as np
    from benchlib import report, timed

    from agentmem.memory.filters import both, live, parse
    from agentmem.vectors.opensearch import OpenSearchVectorIndex
    from agentmem.vectors.port import VectorRecord
    from tests.opensearch_node import running

    assert isinstance(matrix, np.ndarray)
    with running() as node:
        index = OpenSearchVectorIndex(
            node.url, index=f"bench-filters-{uuid.uuid4().hex[:8]}", engine="lucene", timeout=60
        )
        index.create_index(DIMENSION)
        started = time.perf_counter()
        for start in range(0, COUNT, 5000):
            index.upsert(
                [
                    VectorRecord(
                        scope,  # type: ignore[arg-type]
                        f"01FILTER{i:018d}",
                        matrix[i].tolist(),
                        model,
                        author="user",
                        timestamp="2026-06-01T00:00:00.000Z",
                        metadata={"tag": f"t{i % TAGS}", "n": i},
                    )
                    for i in range(start, start + 5000)
                ]
            )
        print(f"  OpenSearch: bulk upsert of {COUNT} vectors with metadata: {time.perf_counter() - started:.0f} s")
        rng = np.random.default_rng(9)
        queries = rng.standard_normal((30, DIMENSION)).astype("<f4")
        where = both(parse({"tag": "t7"}), live("2026-06-01T00:00:00.000Z"))
        recalls = []
        for query in queries:
            truth = {h.entry_id for h in exact.search([scope], query, 10, model, where)}  # type: ignore[attr-defined]
            found = {h.entry_id for h in index.search([scope], query.tolist(), 10, model, where)}  # type: ignore[list-item]
            recalls.append(len(truth & found) / len(truth))
        print(f"  OpenSearch k-NN with the 1% filter, recall@10 against exact: {sum(recalls) / len(recalls):.3f}")
        for label, condition in (("no filter", None), ("filter 1%", where)):
            calls = [
                lambda q=q, c=condition: index.search([scope], q.tolist(), 10, model, c)  # type: ignore[list-item,misc]
                for q in queries
            ]
            report(f"OpenSearch k-NN top_k 10, {label}", timed(calls))
        index.client.indices.delete(index=index.index)


if __name__ == "__main__":
    sys.path[:0] = [str(HERE.parent), str(HERE.parent / "layers" / "core" / "python")]
    main()
