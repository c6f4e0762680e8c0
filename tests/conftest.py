"""Fixtures shared by every tier: the two Table adapters and a client for the API handler."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Table
from tests.moto_support import serialise_moto_dynamodb
from tests.opensearch_node import OpenSearchNode
from tests.support import ApiClient

if TYPE_CHECKING:
    from tests.synthesis import Synthesized

REPO_ROOT = Path(__file__).resolve().parent.parent


OPENSEARCH_GROUP = "opensearch"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the group marks into node-id suffixes
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the OpenSearch node runs on one xdist worker (`--dist loadgroup`): one JVM."""
    for item in items:
        if "opensearch_node" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(OPENSEARCH_GROUP))


@pytest.fixture(scope="session")
def opensearch_node() -> Iterator[OpenSearchNode]:
    """A real OpenSearch 2.19.1 node with the k-NN plugin (Lucene engine) on free ports; ``.url`` is its
    HTTP endpoint. Needs Java 17 and Maven (a missing one fails the test, it is never skipped).

    Safe per xdist worker (own ports, own temporary home; tests use their own index names): with pytest
    9.2 and pytest-xdist 3.8 `--dist loadgroup` ignores xdist_group marks (pytest-xdist issue 1386), so
    each worker that runs an OpenSearch test starts its own node; when grouping works, one worker does."""
    from tests import opensearch_node

    try:
        node = opensearch_node.start()
    except opensearch_node.NodeError as error:
        pytest.fail(str(error), pytrace=False)
    yield node
    node.stop()


@pytest.fixture
def sqlite_table(tmp_path: Path) -> Iterator[SqliteTable]:
    table = SqliteTable(tmp_path / "memory.db")
    yield table
    table.close()


@pytest.fixture
def dynamo_table() -> Iterator[DynamoTable]:
    from moto import mock_aws

    serialise_moto_dynamodb()
    with mock_aws():
        table = DynamoTable("agent-memory-test", region_name="us-east-1")
        table.create()
        yield table


@pytest.fixture(params=["sqlite", "dynamodb"])
def table(request: pytest.FixtureRequest) -> Table:
    """Each test using this runs once per adapter: the conformance suite of the Table port."""
    fixture = "sqlite_table" if request.param == "sqlite" else "dynamo_table"
    return request.getfixturevalue(fixture)  # type: ignore[no-any-return]


@pytest.fixture
def container(table: Table) -> Iterator[Container]:
    built = Container(Settings(deletion_drain_seconds=0), table=table)
    set_container(built)
    yield built
    set_container(None)
    # What a test started in the background (an erasure, a snapshot, extraction) ends before the table closes.
    assert built.close(60), "background work did not finish"


@pytest.fixture
def api(container: Container) -> ApiClient:
    """Drive functions/api/handler.py with API Gateway REST events, against both tables."""
    return ApiClient()


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """Both stacks synthesized once per session, for the infra and cloud tiers (tests/synthesis.py)."""
    from tests.synthesis import synthesize

    return synthesize(tmp_path_factory.mktemp("cdk.out"))


# The cloud rehearsal's report (tests/cloud): each AWS call per role and the grants no call used, carried
# in the test reports' user_properties (so it reaches the controller under xdist) and printed at the end.
_REHEARSAL_REPORT: list[tuple[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _REHEARSAL_REPORT.extend(
            (str(name), str(value)) for name, value in report.user_properties if str(name).startswith("rehearsal:")
        )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _REHEARSAL_REPORT:
        terminalreporter.section("cloud rehearsal: AWS calls per role, and the grants no call used")
        for name, value in _REHEARSAL_REPORT:
            terminalreporter.write_line(f"{name.removeprefix('rehearsal:')}: {value}")
