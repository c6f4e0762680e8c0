"""An ``Idempotency-Key`` retry is refused only when its recorded answer holds something deleted since
(issue 24, point 7), through the real handler on SQLite and DynamoDB (moto): deletes of the user's other
data (another memory, a store re-put, a graph delete) leave the retry replayed; deleting or expiring what
the answer holds makes it 409 ``idempotency_key_stale``; deletes write no per-user watermark; a record
kept before answers listed what they hold still follows the watermark."""

from __future__ import annotations

import time
from typing import Any

from agentmem.idempotency import HOLDS, PREFIX
from agentmem.keys import UserRef, escape
from agentmem.memory import records
from agentmem.stores.table import Table
from agentmem.users import FORGOTTEN
from tests.support import ApiClient, Reply, scope_path, text_entry

SCOPE = scope_path("app", "alice")
GRAPH = SCOPE + "/graph"
USER = UserRef.of("app", "alice")
STORE_BATCH = "/v1/apps/app/store/batch"


def _key(name: str) -> dict[str, str]:
    return {"Idempotency-Key": name}


def _ok(reply: Reply, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.body


def _assert_replayed(reply: Reply, first: Reply) -> None:
    assert reply.status == first.status, reply.body
    assert reply.body == first.body
    assert reply.headers.get("Idempotent-Replayed") == "true"


def _assert_stale(reply: Reply) -> None:
    assert reply.status == 409, reply.body
    assert reply.error_code == "idempotency_key_stale"


def _store_put(api: ApiClient, key: str, content: str) -> None:
    op = {"op": "put", "user": "alice", "namespace": ["prefs"], "key": key, "value": {"content": content}}
    _ok(api.post(STORE_BATCH, {"ops": [op]}))


def test_deletes_of_the_users_other_data_leave_an_earlier_write_replayed(api: ApiClient, table: Table) -> None:
    # Given a memory stored with an Idempotency-Key
    body = {"entry": text_entry("the dentist is on Thursday")}
    first = api.post(f"{SCOPE}/memories", body, headers=_key("w-1"))
    assert first.status == 201, first.body
    # When the user's other data is deleted: another memory, a store item put again, a graph entity
    other = _ok(api.post(f"{SCOPE}/memories", {"entry": text_entry("an unrelated note")}), 201)
    assert api.delete(f"{SCOPE}/memories/{other['id']}").status == 204
    _store_put(api, "theme", "prefers dark mode")
    _store_put(api, "theme", "prefers light mode")
    _ok(api.post(GRAPH + "/entities", {"entities": [{"name": "Bob", "observations": ["plays chess"]}]}))
    assert api.delete(GRAPH + "/entities/Bob").status == 204
    # Then the retry with the same key and body gets the first answer, and nothing is written again
    _assert_replayed(api.post(f"{SCOPE}/memories", body, headers=_key("w-1")), first)
    listed = _ok(api.get(f"{SCOPE}/memories"))["entries"]
    assert [e["content"]["parts"][0]["text"] for e in listed].count("the dentist is on Thursday") == 1
    # And no delete wrote the one per-user watermark item (every delete of a user contended on it)
    assert table.get(USER.partition, FORGOTTEN) is None


def test_a_retried_delete_is_replayed(api: ApiClient) -> None:
    # A delete's answer holds nothing: its own delete no longer makes its retry stale
    stored = _ok(api.post(f"{SCOPE}/memories", {"entry": text_entry("to be removed")}), 201)
    first = api.delete(f"{SCOPE}/memories/{stored['id']}", headers=_key("d-1"))
    assert first.status == 204
    _assert_replayed(api.delete(f"{SCOPE}/memories/{stored['id']}", headers=_key("d-1")), first)


def test_a_retry_after_what_the_answer_holds_was_deleted_is_refused(api: ApiClient) -> None:
    # Given a memory stored with a key, and a session of two entries stored with another
    body = {"entry": text_entry("pick up the parcel")}
    assert api.post(f"{SCOPE}/memories", body, headers=_key("w-1")).status == 201
    turns = {"entries": [text_entry("we talked about Rome"), text_entry("and about Naples")]}
    assert api.put(f"{SCOPE}/sessions/s1/memories", turns, headers=_key("s-1")).status == 200
    # When the memory is deleted by a filter, and the session is replaced by another ingest
    assert _ok(api.post(f"{SCOPE}/memories/delete", {"query": "parcel"})) == {"deleted": 1}
    replaced = {"entries": [text_entry("we talked about Milan")]}
    assert api.put(f"{SCOPE}/sessions/s1/memories", replaced).status == 200
    # Then neither retry is replayed nor written again
    _assert_stale(api.post(f"{SCOPE}/memories", body, headers=_key("w-1")))
    _assert_stale(api.put(f"{SCOPE}/sessions/s1/memories", turns, headers=_key("s-1")))
    texts = [e["content"]["parts"][0]["text"] for e in _ok(api.get(f"{SCOPE}/memories"))["entries"]]
    assert texts == ["we talked about Milan"]


def test_a_retry_after_an_entry_it_stored_expired_is_refused(api: ApiClient, table: Table) -> None:
    # Given a session stored with a key (its answer says nothing of expiry: the record outlives its entries)
    turns = {"entries": [text_entry("the gate code is 7781"), text_entry("thanks")]}
    first = api.put(f"{SCOPE}/sessions/s2/memories", turns, headers=_key("s-2"))
    assert first.status == 200, first.body
    _assert_replayed(api.put(f"{SCOPE}/sessions/s2/memories", turns, headers=_key("s-2")), first)
    # When one of its entries expires (its ttl passed; the table may still hold it)
    [gone, *_] = _ok(api.get(f"{SCOPE}/memories"))["entries"]
    item = table.get(USER.scope(None).partition, records.entry_sk(gone["id"]))
    assert item is not None
    table.put({**item, "ttl": int(time.time()) - 10})
    # Then the retry is refused
    _assert_stale(api.put(f"{SCOPE}/sessions/s2/memories", turns, headers=_key("s-2")))


def test_a_graph_answer_is_replayed_until_a_fact_or_relation_it_holds_is_deleted(api: ApiClient) -> None:
    # Given an entity with a fact and a relation, each written with a key
    entities = {"entities": [{"name": "Ann", "entity_type": "person", "observations": ["likes tea"]}]}
    created = api.post(GRAPH + "/entities", entities, headers=_key("g-1"))
    [ann] = _ok(created)["entities"]
    relation = {"relations": [{"source": "Ann", "relation_type": "knows", "target": "Cy"}]}
    related = api.post(GRAPH + "/relations", relation, headers=_key("g-2"))
    [edge] = _ok(related)["relations"]
    # When other graph data is deleted, and a fact of Ann's is only invalidated (it stays, in history)
    _ok(api.post(GRAPH + "/entities", {"entities": [{"name": "Dee", "observations": ["runs"]}]}))
    assert api.delete(GRAPH + "/entities/Dee").status == 204
    _ok(api.post(GRAPH + f"/observations/{ann['observations'][0]['id']}/invalidate", {}))
    # Then both retries are replayed
    _assert_replayed(api.post(GRAPH + "/entities", entities, headers=_key("g-1")), created)
    _assert_replayed(api.post(GRAPH + "/relations", relation, headers=_key("g-2")), related)
    # When the fact and the relation are deleted
    assert api.delete(GRAPH + f"/observations/{ann['observations'][0]['id']}").status == 204
    assert api.delete(GRAPH + f"/relations/{edge['id']}").status == 204
    # Then neither retry is replayed, and neither wrote again
    _assert_stale(api.post(GRAPH + "/entities", entities, headers=_key("g-1")))
    _assert_stale(api.post(GRAPH + "/relations", relation, headers=_key("g-2")))
    history = _ok(api.get(GRAPH + "/entities/Ann/history"))
    assert history["observations"] == []
    assert history["relations"] == []


def test_a_record_kept_before_answers_listed_their_items_follows_the_watermark(api: ApiClient, table: Table) -> None:
    # Given two answers recorded (each with the list of what it holds, as this version keeps them)
    body_a, body_b = {"entry": text_entry("first note")}, {"entry": text_entry("second note")}
    assert api.post(f"{SCOPE}/memories", body_a, headers=_key("old-a")).status == 201
    first_b = api.post(f"{SCOPE}/memories", body_b, headers=_key("old-b"))
    kept = [table.get(USER.partition, PREFIX + escape(key)) for key in ("old-a", "old-b")]
    assert all(record is not None and HOLDS in record for record in kept)
    # rewritten as an earlier version kept them (no list), with the watermark a delete of that version
    # wrote between them
    record_a, record_b = ({n: v for n, v in record.items() if n != HOLDS} for record in kept if record is not None)
    watermark = int(record_a["recorded_at"]) + 1
    table.put(record_a)
    table.put({**record_b, "recorded_at": watermark + 1})
    table.put({"pk": USER.partition, "sk": FORGOTTEN, "at": watermark})
    # Then the answer recorded before the watermark is not replayed, the one after it is
    _assert_stale(api.post(f"{SCOPE}/memories", body_a, headers=_key("old-a")))
    _assert_replayed(api.post(f"{SCOPE}/memories", body_b, headers=_key("old-b")), first_b)
