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


FAR = "9999-12-01T00:00:00Z"


def test_a_time_past_the_year_9000_is_refused_on_every_write_path(api: ApiClient, container: Any) -> None:
    # Given writes dated December 9999 through each path that takes a time
    before = count_items(container.table)
    refused = [
        api.post(f"{SCOPE}/memories", {"entry": text_entry("far", timestamp=FAR)}),
        api.put(f"{SCOPE}/sessions/s/memories", {"entries": [text_entry("far", timestamp=FAR)]}),
        api.post(f"{SCOPE}/memories", {"entry": {**text_entry("far"), "expires_at": FAR}}),
        api.post(f"{SCOPE}/graph/episodes", {"session_id": "s", "entries": [text_entry("far", timestamp=FAR)]}),
        api.post(
            "/agentcore/memories/far-memory-01/events",
            {"actorId": "alice", "eventTimestamp": 253402214400, "payload": []},
        ),
    ]
    # Then each is refused as bad input, naming the bound, and nothing is written
    assert [r.status for r in refused] == [422, 422, 422, 422, 400], [r.body for r in refused]
    assert all("9001" in str(r.body) for r in refused)
    assert count_items(container.table) == before


def test_an_entry_at_the_calendars_end_never_degrades_a_search_naming_a_month(
    api_on_table: ApiClient, table: Any
) -> None:
    from agentmem.keys import Scope
    from agentmem.memory import records
    from agentmem.search import when

    api = api_on_table
    # Given an entry stored before the bound, dated December 9999, beside an ordinary one
    api.post(f"{SCOPE}/memories", {"entry": text_entry("we planted the apple trees in december")})
    far = api.post(f"{SCOPE}/memories", {"entry": text_entry("december snow on the apple trees")}).body
    scope = Scope("app", "alice")
    item = table.get(scope.partition, records.entry_sk(far["id"]))
    table.put({**item, "timestamp": "9999-12-31T23:59:59.000Z"})
    # When searches name a month, and the calendar's last one
    for query in ("apple trees in december", "apple trees in December 9999", "apple trees on 9999-12-31"):
        for mode in ("hybrid", "semantic", "keyword"):
            reply = api.post(f"{SCOPE}/memories/search", {"query": query, "mode": mode})
            # Then every search answers in its own mode, not degraded
            assert reply.status == 200, reply.body
            assert "degraded" not in reply.body, (query, mode, reply.body)
    assert when.closeness(when.named_periods("december 9999"), "9999-12-31T23:59:59.000Z") >= 0.0
