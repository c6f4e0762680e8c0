"""The service's own metadata keys (issue 33, point 6), on both tables through the real handler.

``agentcore.*`` (AgentCore's events and records) and ``store.*`` (the LangGraph store's items) are written by
the service itself: the REST routes and MCP's ``add_memory`` refuse them (422, nothing written). And an entry
that holds them anyway (written before they were reserved) never breaks a view: ListEvents,
ListMemoryRecords and RetrieveMemoryRecords show what they can read of it, and answer 200."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agentmem.keys import Scope
from agentmem.memory import records
from agentmem.stores.table import Table
from tests.support import ApiClient, count_items, scope_path, text_entry

MEMORY = "reserved-memory-01"
ALICE = scope_path(MEMORY, "alice")


@pytest.mark.parametrize(
    "key", ["agentcore.payload", "agentcore.dates", "agentcore.kind", "store.key", "store.namespace"]
)
def test_a_write_naming_the_services_own_keys_is_refused(api: ApiClient, table: Table, key: str) -> None:
    entry = {**text_entry("hello"), "metadata": {key: "json", "topic": "x"}}
    before = count_items(table)
    replies = [
        api.post(f"{ALICE}/memories", {"entry": entry}),
        api.put(f"{ALICE}/sessions/s1/memories", {"entries": [text_entry("fine"), entry]}),
    ]
    call = {"name": "add_memory", "arguments": {"text": "hello", "metadata": {key: "json"}}}
    tool = api.post(f"{ALICE}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}).body
    # Then each is refused, saying why, and nothing is written
    assert [r.status for r in replies] == [422, 422]
    assert all("this service's own" in json.dumps(r.body) for r in replies)
    assert tool["result"]["isError"] is True
    assert "this service's own" in tool["result"]["content"][0]["text"]
    assert count_items(table) == before


def _plant(table: Table, api: ApiClient, metadata: dict[str, Any], parts: list[dict[str, Any]] | None = None) -> str:
    """An entry written before the keys were reserved: stored, then given metadata only AgentCore writes."""
    stored = api.put(f"{ALICE}/sessions/s1/memories", {"entries": [text_entry("a boat on the lake")]}).body
    scope = Scope(MEMORY, "alice")
    listed = api.get(f"{ALICE}/memories").body["entries"]
    item = table.get(scope.partition, records.entry_sk(listed[0]["id"]))
    assert stored["stored"] == 1
    assert item is not None
    planted = {**item, records.METADATA: records.encoded_metadata(metadata)}
    if parts is not None:
        planted["content"] = json.dumps({"role": "user", "parts": parts})
    table.put(planted)
    return str(item["id"])


def test_an_event_whose_blob_is_not_what_its_metadata_says_is_listed_as_stored(api: ApiClient, table: Table) -> None:
    parts = [{"text": "a boat on the lake"}, {"inline_data": {"mime_type": "application/json", "data": "not base64!"}}]
    _plant(table, api, {"agentcore.kind": "event", "agentcore.payload": "USER json"}, parts)
    reply = api.post(f"/agentcore/memories/{MEMORY}/actor/alice/sessions/s1", {"includePayloads": True})
    assert reply.status == 200, reply.body
    [event] = reply.body["events"]
    assert event["payload"][0] == {"conversational": {"content": {"text": "a boat on the lake"}, "role": "USER"}}
    assert event["payload"][1] == {"blob": parts[1]}
    # And a blob that is base64 of something other than JSON too
    bad = base64.b64encode(b"\xff\xfe").decode()
    parts[1] = {"inline_data": {"mime_type": "application/json", "data": bad}}
    _plant(table, api, {"agentcore.kind": "event", "agentcore.payload": "USER json"}, parts)
    assert api.post(f"/agentcore/memories/{MEMORY}/actor/alice/sessions/s1", {}).status == 200


def test_a_record_whose_dates_name_a_field_that_is_not_a_date_is_listed_and_retrieved(
    api: ApiClient, table: Table
) -> None:
    # Given a record, whose stored metadata then says a field is a date that is not one
    made = {
        "requestIdentifier": "r",
        "namespaces": ["/facts/alice/"],
        "content": {"text": "a boat"},
        "timestamp": 1.7e9,
    }
    reply = api.post(f"/agentcore/memories/{MEMORY}/memoryRecords/batchCreate", {"records": [made]})
    assert reply.status == 201, reply.body
    [entry] = api.get(f"{ALICE}/memories").body["entries"]
    item = table.get(Scope(MEMORY, "alice").partition, records.entry_sk(entry["id"]))
    assert item is not None
    metadata = {**records.entry_metadata(item), "agentcore.dates": ["topic"], "topic": "not a date"}
    table.put({**item, records.METADATA: records.encoded_metadata(metadata)})
    # When the views read it / Then they answer, showing the field as the string it is
    listed = api.post(f"/agentcore/memories/{MEMORY}/memoryRecords", {"namespace": "/facts/alice/"})
    found = api.post(
        f"/agentcore/memories/{MEMORY}/retrieve",
        {"namespace": "/facts/alice/", "searchCriteria": {"searchQuery": "boat"}},
    )
    assert (listed.status, found.status) == (200, 200), (listed.body, found.body)
    assert listed.body["memoryRecordSummaries"][0]["metadata"] == {"topic": {"stringValue": "not a date"}}
    assert found.body["memoryRecordSummaries"][0]["metadata"] == {"topic": {"stringValue": "not a date"}}
