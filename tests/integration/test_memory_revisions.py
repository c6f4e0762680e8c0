"""Correcting a memory (PATCH) and reading its history (issue 43, point 4), through the real handler on
SQLite and on DynamoDB (moto): same id, re-embedded and reindexed, conditional on the revision; the
superseded versions are listed by ``history``, never searched, and go with the entry by every delete, by
expiry and by erasure; the export carries them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.codec import VECTOR_ATTR, decode_vector
from agentmem.keys import Scope, UserRef
from agentmem.memory import records
from agentmem.memory.expiry import apply_ttl_removal, sweep
from agentmem.settings import Settings
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Table
from tests.erasure_support import export_all
from tests.support import ApiClient, ArmedEmbedder, inline_deletion_runner, scope_path, text_entry

USER = UserRef("app", "alice")
ALICE = scope_path("app", "alice")


@pytest.fixture
def embedder() -> ArmedEmbedder:
    return ArmedEmbedder(256)


@pytest.fixture
def service(table: Table, embedder: ArmedEmbedder) -> Iterator[Container]:
    built = Container(
        Settings(embedder="hashing", deletion_drain_seconds=0),
        table=table,
        embedder=embedder,
        deletion_runner=inline_deletion_runner(),
    )
    set_container(built)
    yield built
    set_container(None)
    assert built.close(60), "background work did not finish"


@pytest.fixture
def api(service: Container) -> ApiClient:
    return ApiClient()


def content(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def store(api: ApiClient, text: str, path: str = ALICE, **body: Any) -> dict[str, Any]:
    entry = {**text_entry(text), **body.pop("entry", {})}
    reply = api.post(f"{path}/memories", {"entry": entry, **body})
    assert reply.status == 201, reply.body
    return reply.body  # type: ignore[no-any-return]


def patch(api: ApiClient, entry_id: str, body: dict[str, Any], path: str = ALICE, **kw: Any) -> Any:
    return api.patch(f"{path}/memories/{entry_id}", body, **kw)


def history(api: ApiClient, entry_id: str, path: str = ALICE, **kw: Any) -> Any:
    return api.get(f"{path}/memories/{entry_id}/history", **kw)


def found(api: ApiClient, query: str, mode: str, path: str = ALICE) -> list[str]:
    reply = api.post(f"{path}/memories/search", {"query": query, "mode": mode, "min_score": 0.3})
    assert reply.status == 200, reply.body
    return [e["content"]["parts"][0]["text"] for e in reply.body["entries"]]


def versions_stored(table: Table, scope: Scope) -> list[str]:
    """The sort keys of every superseded version the partition holds (expired ones too)."""
    return [str(item["sk"]) for item in table.query(scope.partition, records.VERSION, include_expired=True).items]


def test_a_content_correction_keeps_the_id_and_only_its_new_words_are_found(
    api: ApiClient, table: Table, embedder: ArmedEmbedder
) -> None:
    # Given a memory and another one that shares none of the corrected words
    entry = store(api, "I live in Paris near the old opera", entry={"metadata": {"topic": "home"}})
    store(api, "my sister plays the cello")
    assert entry["revision"] == 1
    assert entry["updated_at"] == entry["timestamp"]
    # When its content is corrected at its revision
    reply = patch(api, entry["id"], {"content": content("I moved to Lyon beside the river Saone"), "revision": 1})
    # Then the answer is the stored entry: same id, session, timestamp and metadata, the next revision
    assert reply.status == 200, reply.body
    assert reply.body["id"] == entry["id"]
    assert reply.body["revision"] == 2
    assert reply.body["updated_at"] > entry["updated_at"]
    assert reply.body["timestamp"] == entry["timestamp"]
    assert reply.body["metadata"] == {"topic": "home"}
    assert api.get(f"{ALICE}/memories/{entry['id']}").body == reply.body
    # And every search finds the new words and none of the old ones, in every mode
    for mode in ("keyword", "semantic", "hybrid"):
        assert found(api, "Lyon river Saone", mode)[:1] == ["I moved to Lyon beside the river Saone"], mode
        assert "I moved to Lyon beside the river Saone" not in found(api, "Paris opera", mode), mode
    assert found(api, "Paris opera", "keyword") == []
    # And its vector is the new text's
    item = table.get(USER.scope(None).partition, records.entry_sk(entry["id"]))
    assert item is not None
    stored = decode_vector(item[VECTOR_ATTR])  # kept in half precision
    assert stored == pytest.approx(embedder.embed(["I moved to Lyon beside the river Saone"])[0], abs=1e-3)
    assert stored != pytest.approx(embedder.embed(["I live in Paris near the old opera"])[0], abs=1e-3)
    # And list and query see the current version only, once
    listed = api.get(f"{ALICE}/memories").body["entries"]
    assert [e["content"] for e in listed if e["id"] == entry["id"]] == [reply.body["content"]]
    queried = api.post(f"{ALICE}/memories/query", {"filter": {"topic": "home"}}).body["entries"]
    assert queried == [reply.body]


def test_history_lists_every_version_oldest_first_bitemporally(api: ApiClient) -> None:
    # Given a memory corrected twice: its content, then its metadata
    entry = store(api, "the meeting is on Monday")
    second = patch(api, entry["id"], {"content": content("the meeting is on Tuesday")}).body
    third = patch(api, entry["id"], {"metadata": {"confirmed": True}}).body
    # When its history is read
    reply = history(api, entry["id"])
    # Then it holds three versions, oldest first, each closed when the next began
    assert reply.status == 200, reply.body
    assert reply.body["memory_id"] == entry["id"]
    versions = reply.body["versions"]
    assert [v["revision"] for v in versions] == [1, 2, 3]
    assert [v["content"]["parts"][0]["text"] for v in versions] == [
        "the meeting is on Monday",
        "the meeting is on Tuesday",
        "the meeting is on Tuesday",
    ]
    assert [v["metadata"] for v in versions] == [{}, {}, {"confirmed": True}]
    assert versions[0]["valid_from"] == entry["timestamp"]
    assert versions[0]["valid_to"] == versions[1]["valid_from"] == second["updated_at"]
    assert versions[1]["valid_to"] == versions[2]["valid_from"] == third["updated_at"]
    assert versions[2]["valid_to"] is None
    assert all(v["recorded_at"] == v["valid_from"] for v in versions)


def test_versions_never_end_before_they_begin(api: ApiClient) -> None:
    # Given an entry the caller timestamped in the future, corrected twice now
    entry = store(api, "the launch is planned", entry={"timestamp": "2099-05-01T12:00:00Z"})
    patch(api, entry["id"], {"content": content("the launch is delayed")})
    last = patch(api, entry["id"], {"content": content("the launch is cancelled")}).body
    # Then each version ends when the next begins, never before it began
    versions = history(api, entry["id"]).body["versions"]
    assert [v["valid_from"] for v in versions] == ["2099-05-01T12:00:00.000Z"] * 3
    assert versions[0]["valid_to"] == versions[1]["valid_to"] == last["updated_at"] == "2099-05-01T12:00:00.000Z"


def test_a_metadata_correction_keeps_the_vector_and_null_removes_the_metadata(
    api: ApiClient, table: Table, embedder: ArmedEmbedder
) -> None:
    # Given a memory with metadata
    entry = store(api, "prefers window seats", entry={"metadata": {"kind": "travel"}})
    before = table.get(USER.scope(None).partition, records.entry_sk(entry["id"]))
    assert before is not None
    calls = embedder.calls
    # When only its metadata is replaced
    reply = patch(api, entry["id"], {"metadata": {"kind": "flights", "airline": "any"}})
    # Then nothing is embedded, the vector and words stay, and filters see the new metadata only
    assert reply.status == 200, reply.body
    assert reply.body["metadata"] == {"kind": "flights", "airline": "any"}
    assert reply.body["content"] == entry["content"]
    assert embedder.calls == calls
    after = table.get(USER.scope(None).partition, records.entry_sk(entry["id"]))
    assert after is not None
    assert after[VECTOR_ATTR] == before[VECTOR_ATTR]
    assert after[records.TERMS] == before[records.TERMS]
    assert api.post(f"{ALICE}/memories/query", {"filter": {"kind": "travel"}}).body["entries"] == []
    assert [e["id"] for e in api.post(f"{ALICE}/memories/query", {"filter": {"kind": "flights"}}).body["entries"]] == [
        entry["id"]
    ]
    # And metadata null removes it
    cleared = patch(api, entry["id"], {"metadata": None, "revision": 2})
    assert cleared.status == 200, cleared.body
    assert cleared.body["metadata"] == {}
    assert cleared.body["revision"] == 3


def test_a_stale_revision_is_409_and_writes_nothing(api: ApiClient, table: Table) -> None:
    # Given a memory already corrected once
    entry = store(api, "the code is 1234")
    assert patch(api, entry["id"], {"content": content("the code is 5678")}).status == 200
    stored_before = api.get(f"{ALICE}/memories/{entry['id']}").body
    # When a correction names revision 1
    reply = patch(api, entry["id"], {"content": content("the code is 0000"), "revision": 1})
    # Then it is a 409 revision_conflict in the error body, and nothing changed
    assert reply.status == 409
    assert reply.error_code == "revision_conflict"
    assert reply.body["error"]["request_id"]
    assert api.get(f"{ALICE}/memories/{entry['id']}").body == stored_before
    assert len(history(api, entry["id"]).body["versions"]) == 2
    assert len(versions_stored(table, USER.scope(None))) == 1


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 422, "invalid_input"),
        ({"revision": 1}, 422, "invalid_input"),
        ({"content": content("x" * (64 * 1024 + 1))}, 413, "entry_too_large"),
        ({"metadata": {"store.namespace": "x"}}, 422, "invalid_input"),
        ({"metadata": {"bad key": 1}}, 422, "invalid_input"),
        ({"metadata": {"k": {"nested": 1}}}, 422, "invalid_input"),
        ({"content": content("y"), "revision": 0}, 422, "invalid_input"),
        ({"content": content("y"), "author": "someone"}, 422, "invalid_input"),
        ({"content": {"role": "user", "parts": "not a list"}}, 422, "invalid_input"),
    ],
)
def test_bad_corrections_are_4xx_and_write_nothing(
    api: ApiClient, table: Table, body: dict[str, Any], status: int, code: str
) -> None:
    entry = store(api, "keeps its words", entry={"metadata": {"k": "v"}})
    reply = patch(api, entry["id"], body)
    assert reply.status == status, reply.body
    assert reply.error_code == code
    assert api.get(f"{ALICE}/memories/{entry['id']}").body == entry
    assert versions_stored(table, USER.scope(None)) == []


def test_what_is_not_the_callers_live_memory_is_404(api: ApiClient) -> None:
    # Given memories of alice (global and in a project), one deleted, one expired, and one of bob
    mine = store(api, "alice's memory")
    in_project = store(api, "alice's project memory", project_id="p1")
    gone = store(api, "deleted memory")
    assert api.delete(f"{ALICE}/memories/{gone['id']}").status == 204
    expired = store(api, "expired memory", entry={"expires_at": "2020-01-01T00:00:00Z"})
    bobs = store(api, "bob's memory", path=scope_path("app", "bob"))
    fix = {"content": content("changed")}
    # Then each is a 404 to alice's PATCH and history
    for entry_id in (gone["id"], expired["id"], bobs["id"], "never-made"):
        assert patch(api, entry_id, fix).status == 404, entry_id
        assert history(api, entry_id).status == 404, entry_id
    # (a write touches exactly its scope; a read in a project sees the global entries too, as list does)
    assert patch(api, mine["id"], {**fix, "project_id": "p1"}).status == 404
    assert history(api, mine["id"], query={"project_id": "p1"}).status == 200
    assert patch(api, in_project["id"], {**fix, "project_id": "p2"}).status == 404
    assert history(api, in_project["id"], query={"project_id": "p2"}).status == 404
    # And bob's memory is unchanged, while alice's project memory is corrected in its project
    assert api.get(f"{scope_path('app', 'bob')}/memories/{bobs['id']}").body == bobs
    corrected = patch(api, in_project["id"], {**fix, "project_id": "p1"})
    assert corrected.status == 200
    assert corrected.body["project_id"] == "p1"
    assert history(api, in_project["id"], query={"project_id": "p1"}).status == 200


def test_a_store_item_is_not_corrected_through_its_entry(api: ApiClient, table: Table) -> None:
    # Given a LangGraph store item, which the store keeps as an entry bound to its key row
    put = {"op": "put", "user": "alice", "namespace": ["prefs"], "key": "theme", "value": {"text": "dark mode"}}
    assert api.post("/v1/apps/app/store/batch", {"ops": [put]}).status == 200
    [entry] = api.get(f"{ALICE}/memories").body["entries"]
    # When its entry is patched / Then it is a 409 managed_entry and the item is unchanged
    reply = patch(api, entry["id"], {"content": content("light mode")})
    assert reply.status == 409
    assert reply.error_code == "managed_entry"
    assert api.get(f"{ALICE}/memories/{entry['id']}").body == entry
    assert versions_stored(table, USER.scope(None)) == []


def test_an_idempotency_key_replays_the_correction_once(api: ApiClient) -> None:
    entry = store(api, "first words")
    key = {"Idempotency-Key": "fix-1"}
    first = patch(api, entry["id"], {"content": content("second words")}, headers=key)
    again = patch(api, entry["id"], {"content": content("second words")}, headers=key)
    assert first.status == again.status == 200
    assert again.body == first.body
    assert [v["revision"] for v in history(api, entry["id"]).body["versions"]] == [1, 2]


def test_of_two_corrections_of_one_revision_exactly_one_lands(api: ApiClient, embedder: ArmedEmbedder) -> None:
    # Given a memory, and a second correction of revision 1 made to land while the first is embedding
    # (after the first read the entry, before it writes)
    entry = store(api, "the flight leaves at 9")
    other: list[Any] = []
    embedder.action = lambda: other.append(
        patch(api, entry["id"], {"content": content("the flight leaves at 11"), "revision": 1})
    )
    # When the first correction of revision 1 runs
    first = patch(api, entry["id"], {"content": content("the flight leaves at 10"), "revision": 1})
    # Then the one that landed first won, and the other is a 409 that wrote nothing
    assert other[0].status == 200, other[0].body
    assert first.status == 409
    assert first.error_code == "revision_conflict"
    versions = history(api, entry["id"]).body["versions"]
    assert [v["content"]["parts"][0]["text"] for v in versions] == ["the flight leaves at 9", "the flight leaves at 11"]


def test_corrections_without_a_revision_both_land_in_order(api: ApiClient, embedder: ArmedEmbedder) -> None:
    entry = store(api, "color: red")
    embedder.action = lambda: patch(api, entry["id"], {"content": content("color: green")})
    reply = patch(api, entry["id"], {"content": content("color: blue")})
    assert reply.status == 200
    assert reply.body["revision"] == 3
    versions = history(api, entry["id"]).body["versions"]
    assert [v["content"]["parts"][0]["text"] for v in versions] == ["color: red", "color: green", "color: blue"]


def test_a_delete_landing_during_a_correction_wins(api: ApiClient, table: Table, embedder: ArmedEmbedder) -> None:
    entry = store(api, "secret plan")
    embedder.action = lambda: api.delete(f"{ALICE}/memories/{entry['id']}")
    reply = patch(api, entry["id"], {"content": content("secret plan, revised")})
    assert reply.status == 404
    assert api.get(f"{ALICE}/memories/{entry['id']}").status == 404
    assert found(api, "secret plan", "keyword") == []
    assert versions_stored(table, USER.scope(None)) == []


def corrected(api: ApiClient, text: str, **body: Any) -> dict[str, Any]:
    entry = store(api, text, **body)
    for n in (1, 2):
        reply = patch(api, entry["id"], {"content": content(f"{text} v{n + 1}"), "project_id": body.get("project_id")})
        assert reply.status == 200, reply.body
    return entry


@pytest.mark.parametrize(
    "remove",
    [
        lambda api, e: api.delete(f"{ALICE}/memories/{e['id']}"),
        lambda api, e: api.delete(f"{ALICE}/sessions/s1"),
        lambda api, e: api.post(f"{ALICE}/memories/delete", {"query": "lighthouse"}),
        lambda api, e: api.post(f"{ALICE}/memories/delete", {"filter": {"tag": "x"}}),
    ],
    ids=["entry", "session", "query", "filter"],
)
def test_every_delete_removes_the_versions(
    api: ApiClient, table: Table, remove: Callable[[ApiClient, dict[str, Any]], Any]
) -> None:
    # Given a corrected memory in a session, and another corrected memory that stays
    entry = corrected(api, "the lighthouse is white", session_id="s1", entry={"metadata": {"tag": "x"}})
    kept = corrected(api, "the harbour is busy")
    assert len(versions_stored(table, USER.scope(None))) == 4
    # When the memory is deleted
    assert remove(api, entry).status in (200, 204)
    # Then its versions are gone from the table, its history is 404, and the other's versions stay
    assert history(api, entry["id"]).status == 404
    assert all(kept["id"] in sk for sk in versions_stored(table, USER.scope(None)))
    assert len(versions_stored(table, USER.scope(None))) == 2
    assert len(history(api, kept["id"]).body["versions"]) == 3


def test_a_project_delete_removes_the_versions(api: ApiClient, table: Table) -> None:
    entry = corrected(api, "project notes", project_id="p1")
    assert api.delete(f"{ALICE}/projects/p1").status == 200
    assert history(api, entry["id"], query={"project_id": "p1"}).status == 404
    assert versions_stored(table, USER.scope("p1")) == []


def test_versions_expire_with_their_memory(api: ApiClient, table: Table, service: Container) -> None:
    # Given a memory that expires in an hour, corrected twice
    entry = corrected(api, "temporary door code", ttl_seconds=3600)
    scope = USER.scope(None)
    item = table.get(scope.partition, records.entry_sk(entry["id"]))
    assert item is not None
    # Then its versions carry its expiry (DynamoDB TTL removes them with it)
    stored = table.query(scope.partition, records.VERSION, include_expired=True).items
    assert [v["ttl"] for v in stored] == [item["ttl"]] * 2
    assert [v[records.EXPIRES_AT] for v in stored] == [item[records.EXPIRES_AT]] * 2
    # When the memory expires: the local sweep on SQLite, DynamoDB TTL's removal (stream record) otherwise
    if isinstance(table, SqliteTable):
        assert sweep(table, service.memory, now=int(time.time()) + 7200) == 1
    else:
        table.delete(scope.partition, records.entry_sk(entry["id"]))
        assert apply_ttl_removal(service.memory, item)
    # Then the versions are gone too
    assert versions_stored(table, scope) == []
    assert history(api, entry["id"]).status == 404


def test_erasure_removes_the_versions_and_counts_only_memories(api: ApiClient, table: Table) -> None:
    corrected(api, "erase me", project_id="p1")
    corrected(api, "erase me too")
    started = api.delete(ALICE)
    assert started.status == 202, started.body
    status = api.get(f"{ALICE}/deletions/{started.body['deletion_id']}").body
    assert status["status"] == "SUCCEEDED"
    assert status["deleted"]["entries"] == 2
    assert versions_stored(table, USER.scope(None)) == versions_stored(table, USER.scope("p1")) == []


def test_a_correction_during_erasure_is_409(api: ApiClient, table: Table) -> None:
    from agentmem import users

    entry = store(api, "still here")
    table.put({"pk": USER.partition, "sk": users.DELETION_MARK, "deletion_id": "d1"})
    reply = patch(api, entry["id"], {"content": content("changed")})
    assert reply.status == 409
    assert reply.error_code == "user_deletion_in_progress"
    assert versions_stored(table, USER.scope(None)) == []


def test_the_export_carries_each_memorys_past_versions(api: ApiClient) -> None:
    # Given a corrected memory in a project and one never corrected
    entry = corrected(api, "exported words", project_id="p1")
    plain = store(api, "never corrected")
    # When the user exports
    pages = [api.get(f"{ALICE}/export").body]
    everything = export_all(api, ALICE)
    # Then the entries carry their revision, and memory_history the superseded versions of the corrected one
    revisions = {e["id"]: e["revision"] for e in everything["entries"]}
    assert revisions == {entry["id"]: 3, plain["id"]: 1}
    past = pages[0]["memory_history"]
    assert [(v["memory_id"], v["project_id"], v["revision"]) for v in past] == [
        (entry["id"], "p1", 1),
        (entry["id"], "p1", 2),
    ]
    assert [v["content"]["parts"][0]["text"] for v in past] == ["exported words", "exported words v2"]
    assert set(past[0]) == {
        "memory_id",
        "project_id",
        "revision",
        "content",
        "metadata",
        "valid_from",
        "valid_to",
        "recorded_at",
    }


def test_on_opensearch_only_the_corrected_words_are_found(api_on_opensearch: ApiClient) -> None:
    # Given memories in the OpenSearch k-NN backend, one of them corrected
    api = api_on_opensearch
    entry = store(api, "the spare key is under the blue flowerpot")
    store(api, "my sister plays the cello")
    reply = patch(api, entry["id"], {"content": content("the spare key hangs in the garage cupboard")})
    assert reply.status == 200, reply.body
    assert reply.body.get("indexing") is None  # indexed in the request
    # Then every mode finds it by its new words and none finds the old ones
    for mode in ("keyword", "semantic", "hybrid"):
        reply = api.post(f"{ALICE}/memories/search", {"query": "garage cupboard", "mode": mode, "top_k": 1})
        assert reply.status == 200, reply.body
        assert not reply.body.get("degraded"), reply.body
        assert [e["id"] for e in reply.body["entries"]] == [entry["id"]], mode
        hits = api.post(f"{ALICE}/memories/search", {"query": "blue flowerpot", "mode": mode}).body["entries"]
        assert all("flowerpot" not in e["content"]["parts"][0]["text"] for e in hits), mode
    assert found(api, "blue flowerpot", "keyword") == []
    # And a metadata correction leaves it found by the same words, now filtered by its new metadata
    assert patch(api, entry["id"], {"metadata": {"room": "garage"}}).status == 200
    for mode in ("semantic", "hybrid"):
        body = {"query": "spare key", "mode": mode, "filter": {"room": "garage"}}
        hits = api.post(f"{ALICE}/memories/search", body).body["entries"]
        assert [e["id"] for e in hits] == [entry["id"]], mode


def test_a_history_too_long_for_one_answer_keeps_the_newest_versions(api: ApiClient) -> None:
    # Given a memory of about 250 KB (its text and an image part), corrected 17 times: 18 versions, 4.5 MB
    image = {"inline_data": {"mime_type": "image/png", "data": "A" * 190_000}}
    big = {"role": "user", "parts": [{"text": "plan " + "x" * 60_000}, image]}
    entry = store(api, "a plan", entry={"content": big})
    for n in range(2, 19):
        fixed = {"content": {**big, "parts": [{"text": f"plan {n} " + "x" * 60_000}, image]}}
        assert patch(api, entry["id"], fixed).status == 200
    # When its history is read
    reply = history(api, entry["id"])
    # Then the answer keeps within the budget with the newest versions, in order, and says it was cut
    assert reply.status == 200, reply.body
    assert reply.body["truncated"] is True
    revisions = [v["revision"] for v in reply.body["versions"]]
    assert revisions == list(range(revisions[0], 19))
    assert 1 < revisions[0] < 18
    assert reply.wire_bytes < 6 * 1024 * 1024
