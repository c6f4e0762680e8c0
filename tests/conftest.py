"""Fixtures shared by every tier: the two Table adapters and a client for the API handler."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable, Iterator
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


_MOTO_DYNAMODB_LOCK = threading.RLock()


def _serialise_moto_dynamodb() -> None:
    """Make moto apply each DynamoDB request atomically, as DynamoDB does.

    moto's in-memory backend has no locking, so two threads' UpdateItem ADD or conditional PutItem can
    interleave inside the emulator and lose a write that real DynamoDB never loses. Serialising requests
    restores DynamoDB's per-request atomicity; our code's concurrency is still exercised by real threads.
    """
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_serialised", False):
        return
    original = DynamoHandler.call_action

    def call_action(self: DynamoHandler) -> object:
        with _MOTO_DYNAMODB_LOCK:
            return original(self)

    call_action._serialised = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
    _back_up_each_item_a_transaction_writes()


class _ItemBackups:
    """Stands in for the ``copy`` module inside moto's DynamoDB models, and backs transactions up by item.

    moto's ``transact_write_items`` backs up for a rollback with a ``copy.deepcopy`` of the whole table
    *per item of the transaction*: a 25-item transaction on a 20,000-item table took seconds and
    gigabytes, and the suite's workers were killed for memory. Here the transaction saves only what it
    can change, the items under its keys (and the table's stream length), and a failed transaction puts
    exactly those back: the same end state as moto's rollback. The whole-table copy is skipped (moto's
    own rollback then puts back the live table, a no-op). Everywhere else this is ``copy.deepcopy``.
    """

    def __init__(self, table_class: type) -> None:
        self._table_class = table_class
        self._local = threading.local()

    def __getattr__(self, name: str) -> object:
        return getattr(copy, name)

    def deepcopy(self, value: object, memo: dict[int, object] | None = None) -> object:
        if getattr(self._local, "in_transaction", False) and isinstance(value, self._table_class):
            return value
        return copy.deepcopy(value, memo)

    def transaction(self, original: Callable[..., None]) -> Callable[..., None]:
        def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
            saved = [self._save(backend, entry) for entry in transact_items]
            self._local.in_transaction = True
            try:
                original(backend, transact_items)
            except Exception:
                for table, hash_key, range_key, item, stream_length in reversed([s for s in saved if s]):
                    items = table.items[hash_key] if table.range_key_attr else table.items
                    slot = range_key if table.range_key_attr else hash_key
                    if item is None:
                        items.pop(slot, None)
                    else:
                        items[slot] = item
                    if table.stream_shard is not None:
                        del table.stream_shard.items[stream_length:]
                raise
            finally:
                self._local.in_transaction = False

        transact_write_items._item_backups = True  # type: ignore[attr-defined]
        return transact_write_items

    @staticmethod
    def _save(backend: Any, entry: dict[str, Any]) -> tuple[Any, Any, Any, Any, int] | None:
        """The table, key and a copy of the item one op of a transaction may change (None: none)."""
        op = next(iter(entry.values()), None)
        if not isinstance(op, dict):
            return None  # a malformed op: moto refuses the transaction before writing anything
        table = backend.tables.get(op.get("TableName"))
        if table is None:
            return None
        attributes = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        key = op.get("Key") or {name: op.get("Item", {}).get(name) for name in attributes}
        if any(key.get(name) is None for name in attributes):
            return None  # a malformed op: moto refuses the transaction before writing anything
        hash_key, range_key = backend.get_keys_value(table, key)
        current = table.get_item(hash_key, range_key)
        stream_length = 0 if table.stream_shard is None else len(table.stream_shard.items)
        return table, hash_key, range_key, copy.deepcopy(current), stream_length


def _back_up_each_item_a_transaction_writes() -> None:
    from moto.dynamodb import models

    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_item_backups", False):
        return
    stand_in = _ItemBackups(models.Table)
    models.copy = stand_in  # type: ignore[assignment]
    backend.transact_write_items = stand_in.transaction(backend.transact_write_items)  # type: ignore[method-assign]


@pytest.fixture
def dynamo_table() -> Iterator[DynamoTable]:
    from moto import mock_aws

    _serialise_moto_dynamodb()
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
    # An erasure a test started in the background must end before the table is closed under it.
    runner = built.__dict__.get("deletion_runner")
    if runner is not None and hasattr(runner, "wait"):
        assert runner.wait(60), "a background deletion did not finish"


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
