"""Fixtures shared by the integration tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.tenancy import TenantService
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from tests.opensearch_node import TEST_DIMENSION, OpenSearchNode, on_node
from tests.support import ApiClient


@pytest.fixture
def tenants(table: Table) -> Iterator[TenantService]:
    """The API with MEMORY_AUTH=required over the parametrised table (SQLite and DynamoDB), embedding with
    the hashing model (so that usage counts embeddings)."""
    container = Container(Settings(auth="required", embedder="hashing"), table=table)
    set_container(container)
    yield container.tenants
    set_container(None)


@pytest.fixture
def index(opensearch_node: OpenSearchNode) -> Iterator[OpenSearchVectorIndex]:
    """A fresh index per test on the session's node, created as `agentmem create-index` does."""
    created = OpenSearchVectorIndex(opensearch_node.url, index=f"vectors-{uuid.uuid4().hex[:12]}", engine="lucene")
    assert created.create_index(TEST_DIMENSION) is True
    yield created
    created.client.indices.delete(index=created.index)


@pytest.fixture
def api_on_table(table: Table) -> Iterator[ApiClient]:
    """The API handler over the parametrised table with its own index, embedding with the hashing model."""
    set_container(Container(Settings(embedder="hashing"), table=table))
    yield ApiClient()
    set_container(None)


@pytest.fixture
def api_on_opensearch(table: Table, index: OpenSearchVectorIndex) -> Iterator[ApiClient]:
    """The API handler with the hashing embedder and the node's index, as a deployment with OpenSearch."""
    set_container(Container(Settings(**on_node(index.endpoint, TEST_DIMENSION, index.index)), table=table))
    yield ApiClient()
    set_container(None)
