"""What erasure relies on is on the VectorIndex port: whether an index is a copy outside the table."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agentmem.container import Container
from agentmem.keys import Scope, UserRef
from agentmem.settings import Settings
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.vectors.exact import ExactVectorIndex
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from agentmem.vectors.port import VectorHit, VectorIndex, VectorRecord
from tests.erasure_support import InMemoryVectorIndex


class ForgetsDerived:
    """An adapter with every method of the port but no ``derived``: erasure could not tell what it is."""

    name = "forgetful"
    visibility_seconds = 0

    def upsert(self, records: Sequence[VectorRecord]) -> None: ...

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None: ...

    def search(self, scopes: Sequence[Scope], vector: Sequence[float], top_k: int, model_id: str) -> list[VectorHit]:
        return []

    def other_models(self, scopes: Sequence[Scope], model_id: str) -> list[str]:
        return []

    def delete_user(self, user: UserRef) -> int:
        return 0

    def count_user(self, user: UserRef) -> int:
        return 0

    def health(self) -> str:
        return "ok"


def test_an_adapter_without_derived_does_not_implement_the_port() -> None:
    assert not isinstance(ForgetsDerived(), VectorIndex)


def test_every_adapter_and_the_test_double_implement_the_port(sqlite_table: SqliteTable) -> None:
    adapters = [ExactVectorIndex(sqlite_table), OpenSearchVectorIndex("http://127.0.0.1:1"), InMemoryVectorIndex()]
    assert all(isinstance(adapter, VectorIndex) for adapter in adapters)
    assert [adapter.derived for adapter in adapters] == [False, True, True]


@pytest.mark.parametrize(("configured", "external"), [("exact", False), ("opensearch", True)])
def test_erasure_empties_exactly_the_external_index(sqlite_table: SqliteTable, configured: str, external: bool) -> None:
    # Given a container configured with the exact index (vectors on the entries) or with OpenSearch
    settings = Settings(
        embedder="hashing",
        vector_index=configured,  # type: ignore[arg-type]
        opensearch_endpoint="http://127.0.0.1:1" if configured == "opensearch" else None,
    )
    container = Container(settings, table=sqlite_table)
    # Then the deletion service is handed the index only when its vectors live outside the table
    assert container.external_vector_index is (container.vector_index if external else None)
    assert container.deletion._vectors is container.external_vector_index


def test_serverless_says_its_deletes_show_late_and_a_refreshing_engine_says_at_once() -> None:
    serverless = OpenSearchVectorIndex("https://abc.us-east-1.aoss.amazonaws.com", service="aoss", engine="faiss")
    managed = OpenSearchVectorIndex("https://search-x.us-east-1.es.amazonaws.com", service="es", engine="faiss")
    assert (serverless.visibility_seconds, managed.visibility_seconds) == (60, 0)
