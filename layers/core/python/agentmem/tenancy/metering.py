"""Usage counters per app per day: requests, items stored, embeddings computed.

One item per app and UTC day (``T#<app>`` / ``USAGE#<date>``), incremented atomically; counters are
not personal data (no user id), so user erasure leaves them.

Counts come from the code that does the work: the services call :func:`count` where they store
entries, facts, relations and episodes and where they call the embedder; the API (every route and MCP
tool) and the stream indexer run each request or record inside :func:`counting` and add what was
counted to the app's day (:func:`record_meter`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, timedelta

from agentmem.clock import utc_now
from agentmem.keys import tenant_partition
from agentmem.stores.table import Item, Table

USAGE_SK_PREFIX = "USAGE#"
COUNTERS = ("requests", "items_stored", "embeddings")


@dataclass(frozen=True, slots=True)
class UsageDay:
    date: str
    requests: int = 0
    items_stored: int = 0
    embeddings: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "date": self.date,
            "requests": self.requests,
            "items_stored": self.items_stored,
            "embeddings": self.embeddings,
        }


@dataclass
class Meter:
    """What one request (or stream record) stored and embedded."""

    items_stored: int = 0
    embeddings: int = 0


_meter: ContextVar[Meter | None] = ContextVar("usage_meter", default=None)


def count(*, items_stored: int = 0, embeddings: int = 0) -> None:
    """Count work done for the current request (nothing outside :func:`metered`)."""
    meter = _meter.get()
    if meter is not None:
        meter.items_stored += items_stored
        meter.embeddings += embeddings


@contextlib.contextmanager
def counting() -> Iterator[Meter]:
    """Count the work done inside (what :func:`count` is told), for the caller to record."""
    meter = Meter()
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)


def record_meter(table: Table, app: str, meter: Meter) -> None:
    """Add what a request or record stored and embedded to ``app``'s usage of today."""
    if meter.items_stored or meter.embeddings:
        record_usage(table, app, items_stored=meter.items_stored, embeddings=meter.embeddings)


def _today() -> date:
    return utc_now().date()


def record_usage(
    table: Table,
    app: str,
    *,
    requests: int = 0,
    items_stored: int = 0,
    embeddings: int = 0,
    day: date | None = None,
) -> UsageDay:
    """Add to the app's counters of ``day`` (today, UTC) and return the new totals of that day."""
    deltas = {
        name: value
        for name, value in (("requests", requests), ("items_stored", items_stored), ("embeddings", embeddings))
        if value
    }
    when = (day or _today()).isoformat()
    if not deltas:
        item = table.get(tenant_partition(app), USAGE_SK_PREFIX + when) or {}
    else:
        item = table.increment(tenant_partition(app), USAGE_SK_PREFIX + when, deltas)
    return _usage_from(when, item)


def read_usage(table: Table, app: str, *, days: int = 31, today: date | None = None) -> list[UsageDay]:
    """The app's usage of the last ``days`` days that saw any, newest first."""
    end = today or _today()
    start = end - timedelta(days=days - 1)
    page = table.query(tenant_partition(app), USAGE_SK_PREFIX, descending=True, limit=days + 1)
    result = []
    for item in page.items:
        when = str(item["sk"])[len(USAGE_SK_PREFIX) :]
        if start.isoformat() <= when <= end.isoformat():
            result.append(_usage_from(when, item))
    return result


def _usage_from(when: str, item: Item) -> UsageDay:
    return UsageDay(when, *(int(item.get(name) or 0) for name in COUNTERS))
