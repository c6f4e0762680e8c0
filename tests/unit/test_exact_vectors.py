"""ExactVectorIndex over both Table adapters: ranking, scope isolation, model separation, the decoded-matrix cache."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import Scope, UserRef
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.stores.table import Table
from agentmem.vectors.exact import ExactVectorIndex
from agentmem.vectors.port import VectorIndex


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry.model_validate(
        {"content": {"role": "user", "parts": [{"text": text}]}, "timestamp": datetime(2026, 6, 1, tzinfo=UTC)}
    )


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(128)


@pytest.fixture
def index(table: Table) -> ExactVectorIndex:
    return ExactVectorIndex(table)


@pytest.fixture
def service(table: Table, embedder: HashingEmbedder, index: ExactVectorIndex) -> MemoryService:
    return MemoryService(table, embedder=embedder, vector_index=index)


def _search(index: ExactVectorIndex, embedder: HashingEmbedder, scope: Scope, text: str, k: int = 10) -> list[str]:
    hits = index.search(scope.visible_scopes(), embedder.embed([text])[0], k, embedder.model_id)
    return [h.entry_id for h in hits]


def test_nearest_entry_ranks_first_with_score_in_unit_range(
    service: MemoryService, index: ExactVectorIndex, embedder: HashingEmbedder
) -> None:
    # Given a user with three memories
    scope = Scope("app", "alice")
    ids = [service.add_entry(scope, _entry(t)).id for t in ("hiking in the alps", "tax return", "piano lessons")]
    # When the index is searched with the text of the second
    hits = index.search([scope], embedder.embed(["tax return"])[0], 3, embedder.model_id)
    # Then it comes first with cosine 1.0, and every score is within [0, 1]
    assert hits[0].entry_id == ids[1]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert isinstance(index, VectorIndex)


def test_search_never_sees_another_user_or_app(
    service: MemoryService, index: ExactVectorIndex, embedder: HashingEmbedder
) -> None:
    # Given the same text stored by alice, by bob and by alice in another app
    service.add_entry(Scope("app", "bob"), _entry("secret garden"))
    service.add_entry(Scope("other-app", "alice"), _entry("secret garden"))
    mine = service.add_entry(Scope("app", "alice"), _entry("secret garden"))
    # When alice searches
    found = _search(index, embedder, Scope("app", "alice"), "secret garden")
    # Then only her own entry is ranked
    assert found == [mine.id]


def test_project_scope_sees_global_and_its_project_only(
    service: MemoryService, index: ExactVectorIndex, embedder: HashingEmbedder
) -> None:
    user = UserRef("app", "alice")
    in_global = service.add_entry(user.scope(None), _entry("blue car"))
    in_project = service.add_entry(user.scope("p1"), _entry("blue car"))
    service.add_entry(user.scope("p2"), _entry("blue car"))
    assert set(_search(index, embedder, user.scope("p1"), "blue car")) == {in_global.id, in_project.id}
    assert _search(index, embedder, user.scope(None), "blue car") == [in_global.id]


def test_vectors_of_another_model_are_never_compared(
    table: Table, index: ExactVectorIndex, embedder: HashingEmbedder
) -> None:
    # Given entries embedded by a 128-dim model and by a 64-dim model
    scope = Scope("app", "alice")
    old = MemoryService(table, embedder=HashingEmbedder(64), vector_index=index).add_entry(scope, _entry("old text"))
    new = MemoryService(table, embedder=embedder, vector_index=index).add_entry(scope, _entry("new text"))
    # When searching with the 128-dim model
    found = _search(index, embedder, scope, "old text")
    # Then only the entry of that model is ranked, and the other model is reported
    assert found == [new.id]
    assert old.id not in found
    assert index.other_models([scope], embedder.model_id) == ["hashing-v1-64"]


def test_cache_follows_writes_and_deletes(service: MemoryService, table: Table, embedder: HashingEmbedder) -> None:
    # Given a second index instance (another process's cache) that has searched once
    scope = Scope("app", "alice")
    first = service.add_entry(scope, _entry("apple pie recipe"))
    other_process = ExactVectorIndex(table)
    assert _search(other_process, embedder, scope, "apple pie") == [first.id]
    # When the first process adds and deletes entries
    second = service.add_entry(scope, _entry("apple pie with cream"))
    assert set(_search(other_process, embedder, scope, "apple pie")) == {first.id, second.id}
    service.delete_entry(scope.user_ref, first.id)
    # Then the other process sees each change on its next search
    assert _search(other_process, embedder, scope, "apple pie") == [second.id]


def test_cache_is_not_fooled_when_a_project_is_emptied_and_refilled(
    service: MemoryService, table: Table, embedder: HashingEmbedder
) -> None:
    # Given a cached project partition (its stats item is deleted with the project, so its version restarts)
    user = UserRef("app", "alice")
    service.add_entry(user.scope("p"), _entry("red bicycle"))
    other_process = ExactVectorIndex(table)
    assert len(_search(other_process, embedder, user.scope("p"), "red bicycle")) == 1
    service.delete_project(user, "p")
    # When the project is refilled to the same version
    refilled = service.add_entry(user.scope("p"), _entry("red bicycle"))
    # Then the new entry is found, not the stale cached one
    assert _search(other_process, embedder, user.scope("p"), "red bicycle") == [refilled.id]


def test_count_and_delete_user(service: MemoryService, index: ExactVectorIndex) -> None:
    user = UserRef("app", "alice")
    service.add_entry(user.scope(None), _entry("one"))
    service.add_entry(user.scope("p"), _entry("two"))
    service.add_entry(Scope("app", "bob"), _entry("three"))
    assert index.count_user(user) == 2
    assert index.delete_user(user) == 2
    assert index.count_user(user) == 0
    assert index.count_user(UserRef("app", "bob")) == 1


def test_same_process_cache_is_patched_by_writes_and_deletes(
    service: MemoryService, index: ExactVectorIndex, embedder: HashingEmbedder
) -> None:
    # Given a cached partition of this process
    scope = Scope("app", "alice")
    first = service.add_entry(scope, _entry("walnut bread"))
    assert _search(index, embedder, scope, "walnut bread") == [first.id]
    # When a session is added, replaced, and an entry deleted by this process's service
    service.add_session(scope, "s1", [_entry("walnut cake")])
    [old] = _search(index, embedder, scope, "walnut cake", k=1)
    service.add_session(scope, "s1", [_entry("walnut cookies")])
    after_replace = _search(index, embedder, scope, "walnut")
    service.delete_entry(scope.user_ref, first.id)
    after_delete = _search(index, embedder, scope, "walnut")
    # Then every search sees exactly the live entries
    assert old not in after_replace
    assert len(after_replace) == 2
    assert first.id in after_replace
    assert len(after_delete) == 1
    assert first.id not in after_delete


def test_reembedded_vectors_reach_other_processes(table: Table, embedder: HashingEmbedder) -> None:
    from agentmem.vectors.indexing import reindex

    class Down(HashingEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            raise ConnectionError("down")

    # Given an entry stored pending, and a server process that has already cached the partition
    scope = Scope("app", "alice")
    stored = MemoryService(table, embedder=Down(128)).add_entry(scope, _entry("lemon tart"))
    server = ExactVectorIndex(table)
    assert _search(server, embedder, scope, "lemon tart") == []
    # When another process (the reindex command) embeds it
    reindex(table, ExactVectorIndex(table), embedder, user=scope.user_ref)
    # Then the server's next search finds it
    assert _search(server, embedder, scope, "lemon tart") == [stored.id]
