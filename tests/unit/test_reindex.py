"""reindex over both tables: every scope is found through the registry scan, pending entries get vectors."""

from __future__ import annotations

from agentmem.embeddings.codec import PENDING_ATTR, VECTOR_ATTR
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import Scope, UserRef, scope_of_partition
from agentmem.memory import records
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.stores.table import Table, query_all
from agentmem.vectors.exact import ExactVectorIndex
from agentmem.vectors.indexing import all_scopes, reindex


class DownEmbedder(HashingEmbedder):
    def embed(self, texts):  # type: ignore[no-untyped-def]
        raise ConnectionError("unreachable")


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry.model_validate({"content": {"parts": [{"text": text}]}})


def test_reindex_everything_embeds_pending_entries_of_every_scope(table: Table) -> None:
    # Given entries of two users in three scopes, written while the embedder was down
    down = MemoryService(table, embedder=DownEmbedder(32))
    scopes = [Scope("a", "alice"), Scope("a", "alice", "p#1"), Scope("b", "bob")]
    for scope in scopes:
        assert down.add_entry(scope, _entry(f"note in {scope.project_id}")).indexing == "pending"
    # When everything is reindexed with a working embedder
    embedder = HashingEmbedder(32)
    report = reindex(table, ExactVectorIndex(table), embedder)
    # Then every scope was visited and every entry now has its vector, no longer pending
    assert set(all_scopes(table)) == set(scopes)
    assert report.scopes == 3
    assert report.embedded == 3
    for scope in scopes:
        [item] = query_all(table, scope.partition, records.ENTRY)
        assert isinstance(item[VECTOR_ATTR], bytes)
        assert PENDING_ATTR not in item
    # And a second run re-embeds nothing (vectors are stored, never recomputed)
    assert reindex(table, ExactVectorIndex(table), embedder, user=UserRef("a", "alice")).embedded == 0


def test_scope_of_partition_inverts_the_key_encoding() -> None:
    for scope in (Scope("a#b", "u%1", None), Scope("app", "user", "p#%x")):
        assert scope_of_partition(scope.partition) == scope
    assert scope_of_partition(UserRef("a", "b").partition) is None
