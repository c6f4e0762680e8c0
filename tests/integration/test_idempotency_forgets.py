"""What is gone is never served again through an ``Idempotency-Key`` (issue 17, point 3), through the real
handler on SQLite and DynamoDB (moto): reads are not recorded, a recorded answer never outlives what it
holds, an MCP error is not replayed as a success, and an expired record is absent on both tables."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from agentmem.container import Container
from agentmem.idempotency import PREFIX
from agentmem.keys import UserRef, escape
from agentmem.stores.table import Condition, Table
from tests.support import ApiClient, scope_path, text_entry

SCOPE = scope_path("app", "alice")
USER = UserRef.of("app", "alice")


def _key(name: str) -> dict[str, str]:
    return {"Idempotency-Key": name}


def _record(table: Table, key: str) -> dict[str, Any] | None:
    return table.get(USER.partition, PREFIX + escape(key))


def test_searches_and_queries_are_not_recorded_and_answer_from_the_data_as_it_is(
    api: ApiClient, container: Container
) -> None:
    stored = api.post(f"{SCOPE}/memories", {"entry": text_entry("the violin lesson moved to Monday")}).body
    search = {"query": "violin", "mode": "keyword"}
    first = api.post(f"{SCOPE}/memories/search", search, headers=_key("s-1"))
    query = api.post(f"{SCOPE}/memories/query", {"filter": {}}, headers=_key("q-1"))
    assert [e["id"] for e in first.body["entries"]] == [stored["id"]]
    assert [e["id"] for e in query.body["entries"]] == [stored["id"]]
    # When the memory is deleted and both reads are sent again with their keys
    assert api.delete(f"{SCOPE}/memories/{stored['id']}").status == 204
    again = api.post(f"{SCOPE}/memories/search", search, headers=_key("s-1"))
    query_again = api.post(f"{SCOPE}/memories/query", {"filter": {}}, headers=_key("q-1"))
    # Then neither serves it, and no record was kept for them
    assert again.body["entries"] == []
    assert query_again.body["entries"] == []
    assert "Idempotent-Replayed" not in again.headers
    assert _record(container.table, "s-1") is None
    assert _record(container.table, "q-1") is None


def _mcp(api: ApiClient, tool: str, arguments: dict[str, Any], key: str) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    reply = api.post(f"{SCOPE}/mcp", message, headers=_key(key))
    assert reply.status == 200, reply.body
    return reply.body["result"]  # type: ignore[no-any-return]


def test_mcp_reads_are_not_recorded_and_an_mcp_error_is_not_replayed(api: ApiClient, container: Container) -> None:
    added = _mcp(api, "add_memory", {"text": "my locker code is 4412"}, "m-add")
    assert added["isError"] is False
    assert _record(container.table, "m-add") is not None  # a write is recorded
    found = _mcp(api, "search_memory", {"query": "locker code", "mode": "keyword"}, "m-search")
    assert "4412" in json.dumps(found)
    assert _record(container.table, "m-search") is None
    # When the memory is forgotten and the search is sent again with its key: it is not served
    assert api.post(f"{SCOPE}/memories/delete", {"query": "locker"}).body == {"deleted": 1}
    assert "4412" not in json.dumps(_mcp(api, "search_memory", {"query": "locker code", "mode": "keyword"}, "m-search"))
    # And a failed tool call is not recorded: once the entity exists, the same call with the same key runs
    failed = _mcp(
        api, "add_observations", {"observations": [{"entityName": "Ann", "contents": ["likes tea"]}]}, "m-obs"
    )
    assert failed["isError"] is True
    assert _record(container.table, "m-obs") is None
    _mcp(api, "create_entities", {"entities": [{"name": "Ann", "entityType": "person", "observations": []}]}, "m-ann")
    retried = _mcp(
        api, "add_observations", {"observations": [{"entityName": "Ann", "contents": ["likes tea"]}]}, "m-obs"
    )
    assert retried["isError"] is False
    assert retried["structuredContent"]["results"][0]["addedObservations"] == ["likes tea"]


def test_a_recorded_answer_expires_with_the_memory_it_holds(api: ApiClient, container: Container) -> None:
    expires = datetime.now(UTC) + timedelta(hours=2)
    entry = {**text_entry("a short-lived note"), "expires_at": expires.isoformat()}
    assert api.post(f"{SCOPE}/memories", {"entry": entry}, headers=_key("short")).status == 201
    record = _record(container.table, "short")
    assert record is not None
    assert record["ttl"] <= int(expires.timestamp()) + 1
    long_lived = api.post(f"{SCOPE}/memories", {"entry": text_entry("a note kept")}, headers=_key("long"))
    assert long_lived.status == 201
    kept = _record(container.table, "long")
    assert kept is not None
    assert kept["ttl"] > int(expires.timestamp())


def test_a_replay_after_its_memory_was_deleted_is_refused_and_writes_nothing(api: ApiClient) -> None:
    body = {"entry": text_entry("call the plumber on Friday")}
    first = api.post(f"{SCOPE}/memories", body, headers=_key("w-1"))
    assert api.delete(f"{SCOPE}/memories/{first.body['id']}").status == 204
    replay = api.post(f"{SCOPE}/memories", body, headers=_key("w-1"))
    assert replay.status == 409
    assert replay.error_code == "idempotency_key_stale"
    assert "plumber" not in json.dumps(replay.body)
    assert api.get(f"{SCOPE}/memories").body["entries"] == []
    # A new key writes it again
    assert api.post(f"{SCOPE}/memories", body, headers=_key("w-2")).status == 201


def test_an_expired_record_is_absent_so_the_retry_runs(api: ApiClient, container: Container) -> None:
    # Given a claim past its ttl that the table still holds (DynamoDB's TTL may take 48 hours)
    past = int(time.time()) - 10
    stale = {"pk": USER.partition, "sk": PREFIX + escape("old"), "fingerprint": "x", "status": "running"}
    container.table.put({**stale, "claimed_until": past + 60, "ttl": past})
    # When a request comes with that key (a different request than the expired one)
    reply = api.post(f"{SCOPE}/memories", {"entry": text_entry("fresh")}, headers=_key("old"))
    # Then it runs, as with no record
    assert reply.status == 201, reply.body


def test_an_expired_item_counts_as_absent_for_conditions_on_both_tables(table: Table) -> None:
    past = int(time.time()) - 10
    table.put({"pk": "P", "sk": "gone", "ttl": past, "v": 1})
    table.put({"pk": "P", "sk": "gone", "v": 2}, Condition(exists=False))  # absent: the put succeeds
    assert table.get("P", "gone") == {"pk": "P", "sk": "gone", "v": 2}
    table.put({"pk": "P", "sk": "gone2", "ttl": past, "v": 1})
    from agentmem.errors import ConditionFailed

    for condition in (Condition(exists=True), Condition(equals={"v": 1})):
        try:
            table.put({"pk": "P", "sk": "gone2", "v": 3}, condition)
        except ConditionFailed:
            continue
        raise AssertionError(f"{condition} held for an expired item")
