"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.tenancy import TenantService


@pytest.fixture
def tenants(table: Table) -> Iterator[TenantService]:
    """The API with MEMORY_AUTH=required over the parametrised table (SQLite and DynamoDB)."""
    container = Container(Settings(auth="required"), table=table)
    set_container(container)
    yield container.tenants
    set_container(None)
