"""Erasure's vector count on a real node that has not refreshed yet (found by tests/cloud on the prod stack).

OpenSearch Serverless has no refresh parameter: a delete is searchable only after the collection
refreshes. The erasure workflow's Verify sends it back to Sweep while the deleted vectors still show, and
each sweep listed and "deleted" them again: the receipt said 8 or 16 vectors for a user who had 4.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import UserRef
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from agentmem.vectors.port import VectorRecord
from tests.opensearch_node import OpenSearchNode

EMBEDDER = HashingEmbedder(16)
ANA = UserRef("shop", "ana")


@pytest.fixture
def unrefreshed(opensearch_node: OpenSearchNode) -> Iterator[OpenSearchVectorIndex]:
    """An index that refreshes only when asked (as a Serverless collection that has not refreshed yet)."""
    name = f"vectors-{uuid.uuid4().hex[:12]}"
    writer = OpenSearchVectorIndex(opensearch_node.url, index=name, engine="lucene", refresh=True)
    writer.create_index(EMBEDDER.dimension)
    writer.client.indices.put_settings(index=name, body={"index": {"refresh_interval": "-1"}})
    writer.upsert([VectorRecord(ANA.scope(None), f"e{i}", EMBEDDER.embed([f"t{i}"])[0], "m") for i in range(3)])
    yield OpenSearchVectorIndex(opensearch_node.url, index=name, engine="lucene", refresh=False)
    writer.client.indices.delete(index=name)


def test_a_second_sweep_before_the_refresh_deletes_and_counts_nothing(unrefreshed: OpenSearchVectorIndex) -> None:
    # Given a user's 3 vectors, deleted once (the deletes not yet visible to search)
    assert unrefreshed.delete_user(ANA) == 3
    # When the workflow sweeps again before the index refreshes / Then nothing more is counted as deleted
    assert unrefreshed.delete_user(ANA) == 0
    unrefreshed.client.indices.refresh(index=unrefreshed.index)
    assert unrefreshed.count_user(ANA) == 0
