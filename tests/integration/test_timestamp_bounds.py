"""Filter timestamps outside what UTC can hold are bad input, and early years compare right (issue 17,
point 5), through the real handler on SQLite and DynamoDB (moto)."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem.clock import format_timestamp
from tests.support import ApiClient, count_items, scope_path, text_entry

SCOPE = scope_path("app", "alice")
OVERFLOWING = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"]


@pytest.mark.parametrize("moment", OVERFLOWING)
def test_a_filter_timestamp_outside_utc_is_invalid_filter_on_every_route(
    api: ApiClient, container: Any, moment: str
) -> None:
    api.post(f"{SCOPE}/memories", {"entry": text_entry("a note")})
    before = count_items(container.table)
    where = {"timestamp": {"$gte": moment}}
    for route, body in (
        ("memories/search", {"query": "note", "filter": where}),
        ("memories/query", {"filter": where}),
        ("memories/delete", {"filter": where}),
    ):
        reply = api.post(f"{SCOPE}/{route}", body)
        assert reply.status == 422, (route, reply.body)
        assert reply.error_code == "invalid_filter"
        assert "1 to 9999" in reply.body["error"]["message"]
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_memory", "arguments": {"query": "note", "filter": where}},
    }
    result = api.post(f"{SCOPE}/mcp", message).body["result"]
    assert result["isError"] is True
    assert "1 to 9999" in result["content"][0]["text"]
    assert count_items(container.table) == before


def test_a_filter_on_a_year_before_1000_compares_as_a_date(api: ApiClient) -> None:
    stored = api.post(f"{SCOPE}/memories", {"entry": text_entry("a note of today")}).body
    after = {"timestamp": {"$gte": "0999-06-01T00:00:00Z"}}
    before = {"timestamp": {"$lt": "0999-06-01T00:00:00Z"}}
    assert [e["id"] for e in api.post(f"{SCOPE}/memories/query", {"filter": after}).body["entries"]] == [stored["id"]]
    assert api.post(f"{SCOPE}/memories/query", {"filter": before}).body["entries"] == []


def test_stored_timestamps_spell_the_year_in_four_digits() -> None:
    from datetime import UTC, datetime

    assert format_timestamp(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000Z"
    assert format_timestamp(datetime(2026, 6, 1, 9, 30, 0, 123456, tzinfo=UTC)) == "2026-06-01T09:30:00.123Z"
