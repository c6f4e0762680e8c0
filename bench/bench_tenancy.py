"""Tenancy and cost figures: what the key check and metering add, and DynamoDB capacity per request.

Prints (1) the in-process latency of the handler with MEMORY_AUTH=none vs required (key lookup +
metering), and (2) the DynamoDB request units one write and one search consume, counted on the real
service code over a counting wrapper of the SQLite table (sizes approximated as DynamoDB bills them:
writes per started KB, strongly consistent reads per started 4 KB), turned into dollars per 1,000
requests with the us-east-1 on-demand prices that docs/deploy.md uses.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlib import scaled

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")

WRU_PRICE = 0.625 / 1_000_000
RRU_PRICE = 0.125 / 1_000_000
WORDS = (
    "prefers dark mode coffee tea mornings meeting project deadline python rust travel berlin lisbon "
    "vegetarian allergy peanuts budget quarterly report design review holiday birthday sister piano"
).split()


def _size(item: Mapping[str, Any]) -> int:
    total = 0
    for name, value in item.items():
        if isinstance(value, bytes):
            total += len(name) + len(value)
        else:
            total += len(name) + len(json.dumps(value, ensure_ascii=False, default=str).encode())
    return total


class CountingTable:
    """Delegates to a real Table and adds up the request units DynamoDB would bill."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches_in_order = inner.batches_in_order
        self.wru = 0.0
        self.rru = 0.0

    def reset(self) -> None:
        self.wru = self.rru = 0.0

    def _w(self, item: Mapping[str, Any] | None, factor: float = 1.0) -> None:
        self.wru += factor * max(1, math.ceil(_size(item or {}) / 1024))

    def _r(self, nbytes: int) -> None:
        self.rru += max(1, math.ceil(nbytes / 4096))

    def get(self, pk: str, sk: str) -> Any:
        item = self.inner.get(pk, sk)
        self._r(_size(item or {}))
        return item

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> Any:
        items = self.inner.batch_get(keys)
        for item in items:
            self._r(_size(item))
        return items

    def put(self, item: Any, condition: Any = None) -> None:
        self._w(item)
        self.inner.put(item, condition)

    def delete(self, pk: str, sk: str, condition: Any = None) -> None:
        self._w(None)
        self.inner.delete(pk, sk, condition)

    def query(self, pk: str, prefix: str = "", **kw: Any) -> Any:
        page = self.inner.query(pk, prefix, **kw)
        self._r(sum(_size(i) for i in page.items))
        return page

    def batch_write(self, puts: Sequence[Any] = (), deletes: Sequence[Any] = ()) -> None:
        for item in puts:
            self._w(item)
        for _ in deletes:
            self._w(None)
        self.inner.batch_write(puts, deletes)

    def transact_write(self, ops: Sequence[Any]) -> None:
        for op in ops:
            self._w(getattr(op, "item", None), factor=2.0)
        self.inner.transact_write(ops)

    def transact_write_each(self, batches: Sequence[Sequence[Any]]) -> list[Any]:
        for ops in batches:
            for op in ops:
                self._w(getattr(op, "item", None), factor=2.0)
        return self.inner.transact_write_each(batches)  # type: ignore[no-any-return]

    def increment(self, pk: str, sk: str, deltas: Mapping[str, int], condition: Any = None, **options: Any) -> Any:
        item = self.inner.increment(pk, sk, deltas, condition, **options)
        self._w(item)
        return item

    def ping(self) -> None:
        self.inner.ping()


def _sentence(rng: random.Random, words: int = 25) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _entry(text: str) -> dict[str, Any]:
    return {"entry": {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}}


def _timed(calls: Iterator[Any], n: int) -> float:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        next(calls)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    from agentmem.container import Container, set_container
    from agentmem.local.events import LocalContext, rest_event
    from agentmem.settings import Settings
    from agentmem.stores.sqlite_table import SqliteTable
    from functions.api.handler import handler

    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        table = CountingTable(SqliteTable(Path(tmp) / "bench.db"))
        headers: dict[str, str] = {}

        def call(method: str, path: str, body: Any = None) -> dict[str, Any]:
            event = rest_event(method, path, headers=headers, body=json.dumps(body) if body is not None else None)
            return handler(event, LocalContext())

        def reads() -> Iterator[Any]:
            while True:
                yield call("GET", "/v1/apps/bench/users/u/memories")

        print(f"tenancy: handler latency, in process, SQLite (median of {scaled(300, 5)} GET /memories)")
        set_container(Container(Settings(auth="none"), table=table))  # type: ignore[arg-type]
        call("POST", "/v1/apps/bench/users/u/memories", _entry("warm up"))
        none_ms = _timed(reads(), scaled(300, 5))
        container = Container(Settings(auth="required"), table=table)  # type: ignore[arg-type]
        set_container(container)
        headers["x-api-key"] = container.tenants.create_key("bench").secret
        required_ms = _timed(reads(), scaled(300, 5))
        print(f"  MEMORY_AUTH=none      {none_ms:6.2f} ms  (metering only)")
        print(f"  MEMORY_AUTH=required  {required_ms:6.2f} ms  (+ key lookup: 2 GetItem)")

        print("DynamoDB request units per request (25-word entries, keyword search, auth + metering included)")
        for scope_size in (scaled(100, 10), scaled(1000, 20)):
            user = f"/v1/apps/bench/users/s{scope_size}/memories"
            for _ in range(scope_size):
                call("POST", user, _entry(_sentence(rng)))
            table.reset()
            for _ in range(20):
                assert call("POST", user, _entry(_sentence(rng)))["statusCode"] == 201
            write_wru, write_rru = table.wru / 20, table.rru / 20
            table.reset()
            for _ in range(20):
                body = {"query": " ".join(rng.sample(WORDS, 3)), "top_k": 10}
                assert call("POST", user + "/search", body)["statusCode"] == 200
            search_wru, search_rru = table.wru / 20, table.rru / 20
            write_cost = 1000 * (write_wru * WRU_PRICE + write_rru * RRU_PRICE)
            search_cost = 1000 * (search_wru * WRU_PRICE + search_rru * RRU_PRICE)
            print(
                f"  scope of {scope_size:5d} entries: write {write_wru:5.1f} WRU + {write_rru:5.1f} RRU "
                f"= ${write_cost:.4f}/1,000; search {search_wru:4.1f} WRU + {search_rru:6.1f} RRU "
                f"= ${search_cost:.4f}/1,000"
            )
        set_container(None)
        table.inner.close()


if __name__ == "__main__":
    main()
