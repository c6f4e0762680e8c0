"""ANN against exact: recall@10 of OpenSearch k-NN (Lucene HNSW, efficient filtering) against the exact index
on the same 10,000 vectors of 384 dimensions (20 users; 100 global and 5 projects of 80 each per user),
filtered to one user (all their scopes) and to one project, and the latency of the filtered k-NN query.

Starts its own node with the tests' launcher (tests/opensearch_node.py); needs Java 17 and Maven. The
vectors and queries are random unit vectors (no clusters), the hardest case for a graph index.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

from benchlib import report, scaled

USERS = scaled(20, 2)
GLOBAL_PER_USER = 100
PROJECTS = 5
PER_PROJECT = 80
DIMENSION = 384
QUERIES = scaled(100, 5)
TOP_K = 10


def main() -> None:
    import numpy as np

    from agentmem.embeddings.codec import MODEL_ATTR, VECTOR_ATTR
    from agentmem.keys import Scope
    from agentmem.memory import records
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.vectors.exact import ExactVectorIndex
    from agentmem.vectors.opensearch import OpenSearchVectorIndex
    from agentmem.vectors.port import VectorRecord
    from tests.opensearch_node import running

    model = "bench-random-384"
    rng = np.random.default_rng(23)
    layout = [
        (Scope("bench", f"user-{u:02d}", project), count)
        for u in range(USERS)
        for project, count in [(None, GLOBAL_PER_USER)] + [(f"p{p}", PER_PROJECT) for p in range(PROJECTS)]
    ]
    total = sum(count for _, count in layout)
    matrix = rng.standard_normal((total, DIMENSION)).astype("<f4")
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    started = time.perf_counter()
    with running() as node, tempfile.TemporaryDirectory() as folder:
        with_build = time.perf_counter() - started
        print(f"OpenSearch node green in {node.started_in:.1f} s ({with_build:.1f} s with the build check)")
        table = SqliteTable(Path(folder) / "ann.db")
        index = OpenSearchVectorIndex(node.url, index=f"bench-{uuid.uuid4().hex[:8]}", engine="lucene", timeout=30)
        index.create_index(DIMENSION)
        row = 0
        upserts: list[VectorRecord] = []
        for scope, count in layout:
            items = []
            for _ in range(count):
                entry_id = f"01ANN{row:021d}"
                item = records.entry_item(
                    scope,
                    entry_id,
                    session_id=None,
                    content={"role": "user", "parts": [{"text": f"vector {row}"}]},
                    author="user",
                    timestamp="2026-06-01T00:00:00Z",
                    terms={"vector": 1},
                    length=1,
                )
                item[VECTOR_ATTR] = matrix[row].tobytes()
                item[MODEL_ATTR] = model
                items.append(item)
                upserts.append(VectorRecord(scope, entry_id, matrix[row].tolist(), model))
                row += 1
            table.batch_write(puts=items)
        loading = time.perf_counter()
        index.upsert(upserts)
        print(f"bulk upsert of {total} vectors ({DIMENSION} dims) into the node: {time.perf_counter() - loading:.1f} s")
        exact = ExactVectorIndex(table)

        users = [f"user-{u:02d}" for u in range(USERS)]
        filters = {
            "one user (6 scopes, 500 vectors)": lambda i: [
                Scope("bench", users[i % USERS], p) for p in [None, *(f"p{k}" for k in range(PROJECTS))]
            ],
            "one project (80 vectors)": lambda i: [Scope("bench", users[i % USERS], f"p{i % PROJECTS}")],
        }
        queries = rng.standard_normal((QUERIES, DIMENSION)).astype("<f4")
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        for label, scopes_of in filters.items():
            recalls, samples = [], []
            for i, query in enumerate(queries):
                scopes = scopes_of(i)
                truth = {h.entry_id for h in exact.search(scopes, query, TOP_K, model)}
                begun = time.perf_counter()
                found = index.search(scopes, query.tolist(), TOP_K, model)
                samples.append((time.perf_counter() - begun) * 1000)
                recalls.append(len(truth & {h.entry_id for h in found}) / len(truth))
            print(f"recall@{TOP_K} k-NN vs exact, {label:<34} {sum(recalls) / len(recalls):.3f}  (n={len(recalls)})")
            report(f"filtered k-NN query, {label}", samples)
        index.client.indices.delete(index=index.index)
        table.close()
