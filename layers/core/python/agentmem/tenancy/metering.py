"""Usage counters per app per day: requests, items stored, embeddings computed, and what AWS bills for
them: DynamoDB request units, Lambda duration and Titan tokens, which the usage route prices
(:mod:`agentmem.costs`).

One item per app and UTC day (``T#<app>`` / ``USAGE#<date>``), incremented atomically; counters are
not personal data (no user id), so user erasure leaves them.

Counts come from the code that does the work: the services call :func:`count` where they store
entries, facts, relations and episodes, and :func:`count_embedded` where they call the embedder; the
table adapters charge the request units of each call (:mod:`agentmem.capacity`). The API (every route
and MCP tool) and the stream indexer run each request or record inside :func:`counting`, which also
times it, and add what was counted to the app's day (:func:`record_meter`).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from datetime import date, timedelta

from agentmem import capacity, costs
from agentmem.clock import utc_now
from agentmem.keys import tenant_partition
from agentmem.settings import API_MEMORY_MB
from agentmem.stores.table import Item, Table

USAGE_SK_PREFIX = "USAGE#"
COUNTERS = (
    "requests",
    "items_stored",
    "embeddings",
    "read_units",
    "write_units",
    "compute_gb_ms",
    "embedding_tokens",
    "model_calls",
    "model_input_tokens",
    "model_output_tokens",
)
METER_WRITES = 2
"""Write units the meter itself costs a request: its request count and, after it, what it consumed."""
USAGE_SHARDS = 4
"""What a request consumed is added to one of this many items of its app's day, at random (``USAGE#<date>#<n>``),
not to the day's own item: DynamoDB throttles writes to one item past 1,000 a second, and one busy tenant's
throttling would be everyone's alarm. The day's own item keeps the count of requests, which the daily quota reads
back as each request begins; the usage route adds the shards up."""


@dataclass(frozen=True, slots=True)
class UsageDay:
    date: str
    requests: int = 0
    items_stored: int = 0
    embeddings: int = 0
    read_units: int = 0
    write_units: int = 0
    compute_gb_ms: int = 0
    embedding_tokens: int = 0
    model_calls: int = 0
    """Calls to the extraction model (docs/extraction.md), and the tokens they read and wrote."""
    model_input_tokens: int = 0
    model_output_tokens: int = 0

    def to_json(self, model: costs.TokenPrices | None = None) -> dict[str, object]:
        """The day's counters and their estimated cost, the extraction model's tokens at ``model``'s prices
        (:func:`agentmem.costs.chat_model_prices` of the model configured; unpriced without)."""
        counted = asdict(self)
        metered = costs.Metered(**{k: v for k, v in counted.items() if k in costs.Metered.__dataclass_fields__})
        return {**counted, "estimated_cost_usd": costs.estimate(metered, model)}


@dataclass
class Meter:
    """What one request (or stream record) stored, embedded and consumed."""

    items_stored: int = 0
    embeddings: int = 0
    embedding_tokens: int = 0
    read_units: int = 0
    write_units: int = 0
    compute_gb_ms: int = 0

    def add(self, other: Meter) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


_meter: ContextVar[Meter | None] = ContextVar("usage_meter", default=None)


def count(*, items_stored: int = 0, embeddings: int = 0, embedding_tokens: int = 0) -> None:
    """Count work done for the current request (nothing outside :func:`counting`)."""
    meter = _meter.get()
    if meter is not None:
        meter.items_stored += items_stored
        meter.embeddings += embeddings
        meter.embedding_tokens += embedding_tokens


def count_embedded(texts: Sequence[str]) -> None:
    """Count the embedding of ``texts``: one embedding each, and the Titan v2 tokens they cost."""
    from agentmem.embeddings.bedrock import estimated_tokens

    count(embeddings=len(texts), embedding_tokens=sum(estimated_tokens(text) for text in texts))


def memory_mb() -> int:
    """The Lambda function's memory (Lambda sets it in the environment); elsewhere the API function's."""
    value = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
    return int(value) if value.isdigit() else API_MEMORY_MB


@contextlib.contextmanager
def counting() -> Iterator[Meter]:
    """Count the work done inside (what :func:`count` is told, the table's request units, the time it
    took at the function's memory), for the caller to record."""
    meter = Meter()
    token = _meter.set(meter)
    started = time.perf_counter()
    try:
        with capacity.measuring() as consumed:
            yield meter
    finally:
        _meter.reset(token)
        elapsed_ms = math.ceil((time.perf_counter() - started) * 1000)
        meter.compute_gb_ms += elapsed_ms * memory_mb() // 1024
        meter.read_units += math.ceil(consumed.read_units)
        meter.write_units += math.ceil(consumed.write_units)


def record_meter(table: Table, app: str, meter: Meter) -> None:
    """Add what a request or record stored, embedded and consumed to ``app``'s usage of today (the write
    units of this record and of the request count included), in one of the day's shards."""
    record_usage(
        table,
        app,
        shard=random.randrange(1, USAGE_SHARDS + 1),
        items_stored=meter.items_stored,
        embeddings=meter.embeddings,
        embedding_tokens=meter.embedding_tokens,
        read_units=meter.read_units,
        write_units=meter.write_units + METER_WRITES,
        compute_gb_ms=meter.compute_gb_ms,
    )


def _today() -> date:
    return utc_now().date()


def record_usage(table: Table, app: str, *, day: date | None = None, shard: int = 0, **counted: int) -> UsageDay:
    """Add ``counted`` (by :data:`COUNTERS` name) to the app's counters of ``day`` (today, UTC) and return
    the new totals of that item: the day's own (``shard`` 0), or one of its :data:`USAGE_SHARDS`."""
    unknown = set(counted) - set(COUNTERS)
    if unknown:
        raise ValueError(f"not a usage counter: {sorted(unknown)}")
    deltas = {name: value for name, value in counted.items() if value}
    when = (day or _today()).isoformat()
    sk = USAGE_SK_PREFIX + when + (f"#{shard}" if shard else "")
    item = table.increment(tenant_partition(app), sk, deltas) if deltas else table.get(tenant_partition(app), sk)
    return _usage_from(when, item or {})


def read_usage(table: Table, app: str, *, days: int = 31, today: date | None = None) -> list[UsageDay]:
    """The app's usage of the last ``days`` days that saw any, newest first (each day's items added up)."""
    end = today or _today()
    start = end - timedelta(days=days - 1)
    page = table.query(tenant_partition(app), USAGE_SK_PREFIX, descending=True, limit=(days + 1) * (USAGE_SHARDS + 1))
    totals: dict[str, list[int]] = {}
    for item in page.items:
        when = str(item["sk"])[len(USAGE_SK_PREFIX) :][:10]
        if start.isoformat() <= when <= end.isoformat():
            counts = totals.setdefault(when, [0] * len(COUNTERS))
            for i, name in enumerate(COUNTERS):
                counts[i] += int(item.get(name) or 0)
    return [UsageDay(when, *counts) for when, counts in sorted(totals.items(), reverse=True)]


def _usage_from(when: str, item: Item) -> UsageDay:
    return UsageDay(when, *(int(item.get(name) or 0) for name in COUNTERS))
