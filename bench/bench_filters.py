"""Search with a metadata filter matching 1% of 100,000 entries of one user, per mode, through MemoryService on a
real SQLite table with the exact vector index (the local and `table` backends), and POST memories/query.

The entries are written as items directly (as bench_search does), each with a vector, postings of its words
and metadata ``{"tag": "t0".."t99", "n": i}``; the filter ``{"tag": "t7"}`` matches 1,000 of them. The query
word ``coffee`` is in 1/8 of the entries (12,500), 125 of which match the filter.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

COUNT = 100_000
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
    from agentmem.search.inverted_index import InvertedIndex
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.vectors.exact import ExactVectorIndex

    embedder = HashingEmbedder(DIMENSION)
    scope = Scope("bench", "filters")
    words = ["memory", "note", "coffee", "meeting", "invoice", "travel", "garden", "music"]
    with tempfile.TemporaryDirectory() as folder:
        table = SqliteTable(Path(folder) / "filters.db")
        index = InvertedIndex(table, records.INDEX_NAMESPACE)
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
                    tokens=tokens,
                    metadata={"tag": f"t{i % TAGS}", "n": i},
                )
                item[VECTOR_ATTR] = matrix[i].tobytes()
                item[MODEL_ATTR] = embedder.model_id
                batch.append(item)
                batch.extend(index.postings(scope.partition, item["id"], tokens))
            table.batch_write(puts=batch)
        index.record(scope.partition, docs=COUNT, length=3 * COUNT)
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
        page = service.query(scope, where, limit=20)
        assert len(page.entries) == 20
        report("POST memories/query limit 20, filter 1%", timed([lambda: service.query(scope, where, limit=20)] * runs))
        table.close()


if __name__ == "__main__":
    sys.path[:0] = [str(HERE.parent), str(HERE.parent / "layers" / "core" / "python")]
    main()
