"""Metering rules: which responses count as stored items, which paths belong to an app, daily counters."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from agentmem.api.tenancy import app_of_path, items_stored
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.tenancy.metering import read_usage, record_usage


@pytest.mark.parametrize(
    ("method", "status", "body", "expected"),
    [
        ("POST", 201, {"id": "e1", "content": {}}, 1),  # POST {scope}/memories
        ("PUT", 200, {"session_id": "s", "stored": 3, "skipped": 1}, 3),  # PUT session
        ("POST", 200, {"stored": 4}, 4),  # POST graph/episodes
        ("POST", 200, {"entities": [{}, {}]}, 2),  # POST graph/entities
        ("POST", 200, {"observations": [{}]}, 1),  # POST graph/entities/{name}/observations
        ("POST", 200, {"relations": [{}, {}, {}]}, 3),  # POST graph/relations
        ("POST", 200, {"invalidated": {}, "created": {}}, 1),  # supersede
        ("POST", 200, {"stored": True, "entity": "x", "facts_added": 2}, 2),  # tools/remember
        ("POST", 200, {"related": True, "source": "a", "relation": "r", "target": "b"}, 1),  # tools/relate
        ("POST", 200, {"entries": [{}, {}]}, 0),  # search stores nothing
        ("POST", 200, {"deleted": 3}, 0),  # delete by query
        ("POST", 200, {"id": "o1"}, 0),  # invalidate returns the observation, 200 not 201
        ("GET", 200, {"entities": [{}]}, 0),  # reads never count
        ("POST", 422, {"error": {}}, 0),  # refused writes never count
        ("DELETE", 204, None, 0),
    ],
)
def test_items_stored_reads_the_write_response(method: str, status: int, body: object, expected: int) -> None:
    assert items_stored(method, status, json.dumps(body) if body is not None else "") == expected


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
