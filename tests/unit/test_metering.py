"""Metering: work counted where it is done, which paths belong to an app, daily counters."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from agentmem.api.tenancy import app_of_path
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.tenancy.metering import Meter, count, counting, read_usage, record_meter, record_usage


def test_work_is_counted_inside_counting_only() -> None:
    count(items_stored=5, embeddings=5)  # outside a request: counted nowhere
    with counting() as meter:
        count(items_stored=2)
        count(embeddings=3)
        with counting() as inner:  # a nested count is its own
            count(items_stored=1)
    assert (meter.items_stored, meter.embeddings) == (2, 3)
    assert (inner.items_stored, inner.embeddings) == (1, 0)


def test_a_meter_is_added_to_the_apps_day(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "meter.db")
    with counting() as meter:
        count(items_stored=2, embeddings=7)
    record_meter(table, "A", meter)
    record_meter(table, "A", Meter())  # nothing counted: nothing written
    [today] = read_usage(table, "A")
    assert (today.requests, today.items_stored, today.embeddings) == (0, 2, 7)


def test_app_of_path_decodes_the_segment_and_ignores_other_paths() -> None:
    assert app_of_path("/v1/apps/a%2Fb/users/u/memories") == "a/b"
    assert app_of_path("/v1/apps/acme/usage") == "acme"
    assert app_of_path("/v1/apps/acme") == "acme"
    assert app_of_path("/v1/health") is None
    assert app_of_path("/v1/applications/x") is None
    assert app_of_path("/v1/apps/%FF/usage") is None  # invalid UTF-8: the route answers 400


def test_daily_counters_add_up_per_app_and_day(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "m.db")
    try:
        # Given usage on two days for A and one for B
        record_usage(table, "A", requests=2, items_stored=5, day=date(2026, 6, 1))
        record_usage(table, "A", requests=1, embeddings=7, day=date(2026, 6, 1))
        record_usage(table, "A", requests=4, day=date(2026, 6, 3))
        record_usage(table, "B", requests=9, day=date(2026, 6, 3))
        # When A's usage is read on June 3rd / Then newest first, each day's totals, nothing of B
        days = read_usage(table, "A", today=date(2026, 6, 3))
        assert [d.to_json() for d in days] == [
            {"date": "2026-06-03", "requests": 4, "items_stored": 0, "embeddings": 0},
            {"date": "2026-06-01", "requests": 3, "items_stored": 5, "embeddings": 7},
        ]
        # And a window of 2 days leaves June 1st out
        assert [d.date for d in read_usage(table, "A", days=2, today=date(2026, 6, 3))] == ["2026-06-03"]
    finally:
        table.close()
