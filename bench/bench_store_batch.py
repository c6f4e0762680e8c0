"""A store batch's table calls, read units and time on both tables (issue 44): 120 items, one a namespace, and
batches of 100 operations as a client sends them (the same search or listing a hundred times, a hundred
different ones, a hundred gets, a hundred ranked searches). Through the API handler in this process, on a
SQLite file and on DynamoDB emulated by moto (in process: a call costs moto's time, tens of milliseconds, more
than DynamoDB's few). Calls and read units are counted where the adapters charge them (agentmem/capacity.py).

The ablation runs the same batches with the operations not sharing what the batch read (each reads again), so
the row "shared" against "not shared" is what the batch's shared reads save; the paging of keys is in both.
Run: ``python bench/run.py store_batch``."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from benchlib import emulated_aws, scaled

ITEMS = scaled(120, 12)
OPS = scaled(100, 10)
BATCH = "/v1/apps/bench/store/batch"


def _cases() -> dict[str, list[dict[str, Any]]]:
    def search(prefix: list[str], **extra: Any) -> dict[str, Any]:
        return {"op": "search", "user": "ana", "namespace_prefix": prefix, "limit": 10, **extra}

    return {
        f"the same search x{OPS}": [search(["notes"])] * OPS,
        f"the same listing x{OPS}": [{"op": "list_namespaces", "user": "ana", "prefix": ["notes"]}] * OPS,
        f"{OPS} searches of a namespace each": [search(["notes", f"n{i:03}"]) for i in range(OPS)],
        f"{OPS} listings of a namespace each": [
            {"op": "list_namespaces", "user": "ana", "prefix": ["notes", f"n{i:03}"]} for i in range(OPS)
        ],
        f"{OPS} gets": [
            {"op": "get", "user": "ana", "namespace": ["notes", f"n{i:03}"], "key": "k"} for i in range(OPS)
        ],
        f"{OPS} ranked searches": [search(["notes"], query=f"note {i} cats") for i in range(OPS)],
    }


@contextlib.contextmanager
def _tables() -> Iterator[tuple[str, Any]]:
    from agentmem.stores.sqlite_table import SqliteTable

    with tempfile.TemporaryDirectory() as folder:
        yield "sqlite", SqliteTable(os.path.join(folder, "bench.db"))


@contextlib.contextmanager
def _dynamodb() -> Iterator[tuple[str, Any]]:
    from moto import mock_aws

    from agentmem.stores.dynamo_table import DynamoTable
    from tests.moto_support import serialise_moto_dynamodb

    emulated_aws()
    serialise_moto_dynamodb()
    with mock_aws():
        table = DynamoTable("bench-store-batch", region_name="us-east-1")
        table.create()
        yield "dynamodb", table


@contextlib.contextmanager
def _not_shared() -> Iterator[None]:
    """Each operation reads again what the batch already read (the ablation)."""
    from agentmem.store import service

    shared = service._BatchReads

    class NotShared(shared):  # type: ignore[misc, valid-type]
        def rows(self, keys: Any) -> Any:
            self._rows.clear()
            return super().rows(keys)

        def query(self, pk: str, prefix: str, *, limit: int, start_after: str | None) -> Any:
            self._pages.clear()
            return super().query(pk, prefix, limit=limit, start_after=start_after)

    service._BatchReads = NotShared  # type: ignore[misc]
    try:
        yield
    finally:
        service._BatchReads = shared  # type: ignore[misc]


def _measure(label: str, table: Any) -> list[dict[str, Any]]:
    from agentmem import capacity
    from agentmem.container import Container, set_container
    from agentmem.models.store import StoreBatchRequest
    from agentmem.settings import Settings
    from tests.support import ApiClient

    container = Container(Settings(deletion_drain_seconds=0, embedder="hashing"), table=table)
    set_container(container)
    rows = []
    try:
        api = ApiClient()
        puts = [
            {"op": "put", "user": "ana", "namespace": ["notes", f"n{i:03}"], "key": "k", "value": {"text": f"note {i}"}}
            for i in range(ITEMS)
        ]
        for start in range(0, ITEMS, 40):
            assert api.post(BATCH, {"ops": puts[start : start + 40]}).status == 200
        for sharing in ("shared", "not shared"):
            for name, ops in _cases().items():
                parsed = StoreBatchRequest.model_validate({"ops": ops}).ops
                with contextlib.ExitStack() as stack:
                    if sharing == "not shared":
                        stack.enter_context(_not_shared())
                    with capacity.measuring() as read:
                        started = time.perf_counter()
                        try:
                            container.store.batch("bench", parsed)
                            answer = "answered"
                        except Exception as error:  # the batch refused: its code
                            answer = getattr(error, "code", type(error).__name__)
                        seconds = time.perf_counter() - started
                rows.append(
                    {
                        "table": label,
                        "reads": sharing,
                        "batch": name,
                        "answer": answer,
                        "calls": sum(read.calls.values()),
                        "read_units": round(read.read_units, 1),
                        "seconds": round(seconds, 2),
                    }
                )
    finally:
        set_container(None)
    return rows


def main() -> None:
    from agentmem.store.service import BATCH_CALL_BUDGET, BATCH_READ_BUDGET

    print(
        f"{ITEMS} items, one a namespace; a batch may make {BATCH_CALL_BUDGET} calls and read {BATCH_READ_BUDGET} units"
    )
    print(f"{'table':9} {'reads':11} {'batch':34} {'answer':22} {'calls':>6} {'units':>7} {'seconds':>8}")
    for tables in (_tables, _dynamodb):
        with tables() as (label, table):
            for row in _measure(label, table):
                print(
                    f"{row['table']:9} {row['reads']:11} {row['batch']:34} {row['answer']:22} {row['calls']:>6} "
                    f"{row['read_units']:>7} {row['seconds']:>8}",
                    flush=True,
                )
