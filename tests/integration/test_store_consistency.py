"""A store item is one thing, wherever it is shown (issue 24, points 1, 2, 3, 4, 6 and 9), on both tables
through the real handler:

- two puts of one key that overlap (both read the row before either writes) leave one item and one
  memory entry, and a deleted item is served by no route (the memory routes, search, export);
- a TTL refresh that lost its race to a put or a delete does nothing;
- deleting an item's memory through the memory routes deletes the item;
- a batch is checked whole before its first write: a key too long as stored, or a user being erased,
  refuses it with nothing written; a namespace within the documented bounds is stored;
- a batch's reads share one budget of read units (what a ranked search reads under it included), and its
  answers one of bytes; a namespace listing reads keys, not values;
- each holds for a value kept in its key row and for one large enough to live in a value row of its own;
- metadata planted through the memory routes never breaks, nor enters, a store search.

Overlap is made certain, not left to the scheduler: a wrapper of the real table holds each writer after
it read the key row until the other has read it too (what two Lambda containers do at once)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from agentmem import capacity, users
from agentmem.container import Container
from agentmem.keys import UserRef
from agentmem.memory import records as memory_records
from agentmem.store import records
from agentmem.store.service import BATCH_READ_BUDGET, StoreService
from agentmem.stores.table import Item, Table
from tests.support import ApiClient, scope_path

BATCH = "/v1/apps/demo/store/batch"
ANA = UserRef("demo", "ana")


def put(key: str, value: dict[str, Any] | None, namespace: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"op": "put", "user": "ana", "namespace": namespace or ["notes"], "key": key, "value": value, **extra}


def run(api: ApiClient, *ops: dict[str, Any]) -> list[Any]:
    reply = api.post(BATCH, {"ops": list(ops)})
    assert reply.status == 200, reply.body
    return reply.body["results"]  # type: ignore[no-any-return]


def store_entries(table: Table) -> list[Item]:
    items = table.query(ANA.scope(None).partition, memory_records.ENTRY).items
    return [i for i in items if records.KEY in memory_records.entry_metadata(i)]


def key_rows(table: Table) -> list[Item]:
    return table.query(ANA.scope(None).partition, records.KEY_ROW).items


def value_rows(table: Table) -> list[Item]:
    return table.query(ANA.scope(None).partition, records.VALUE_ROW).items


Value = Callable[..., dict[str, Any]]


@pytest.fixture(params=["inline", "apart"])
def value(request: pytest.FixtureRequest) -> Value:
    """Values of either layout: kept in the key row, or over INLINE_VALUE_BYTES and kept in a value row."""
    pad = {} if request.param == "inline" else {"notes": "n" * (records.INLINE_VALUE_BYTES + 10)}
    return lambda **fields: {**fields, **pad}


def everything_shown(api: ApiClient) -> str:
    """What every route that shows a user's data shows of ana, as one text."""
    shown = [
        api.get(scope_path("demo", "ana") + "/memories").body,
        api.get(scope_path("demo", "ana") + "/memories/search", query={"q": "secret"}).body,
        api.get(scope_path("demo", "ana") + "/export").body,
        run(api, {"op": "search", "user": "ana", "namespace_prefix": [], "query": "secret"}),
        run(api, {"op": "search", "user": "ana", "namespace_prefix": []}),
    ]
    return repr(shown)


class _Meeting:
    """The real table, except that each of ``parties`` threads, once it has read a key row, waits for the
    others to have read theirs: every put of the batch reads the row before any writes it."""

    def __init__(self, table: Table, parties: int) -> None:
        self._table = table
        self._barrier = threading.Barrier(parties, timeout=10)
        self._met = threading.local()
        self.batches_in_order = table.batches_in_order

    def get(self, pk: str, sk: str) -> Item | None:
        found = self._table.get(pk, sk)
        if sk.startswith(records.KEY_ROW) and not getattr(self._met, "done", False):
            self._met.done = True
            self._barrier.wait()
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def test_overlapping_puts_of_a_key_leave_one_item_and_a_delete_leaves_nothing(
    api: ApiClient, table: Table, container: Container, value: Value
) -> None:
    run(api, put("k", value(content="the first secret")))
    store = StoreService(_Meeting(table, 2), container.memory)  # type: ignore[arg-type]
    threads = [
        threading.Thread(target=store.batch, args=("demo", [_op(put("k", value(content=f"secret {n}")))]))
        for n in ("one", "two")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    (row,) = key_rows(table)
    assert [e["id"] for e in store_entries(table)] == [row["entry_id"]]  # no orphan entry beside the item
    assert [v[records.REVISION] for v in value_rows(table)] == ([row[records.REVISION]] if "notes" in value() else [])
    (got,) = run(api, {"op": "get", "user": "ana", "namespace": ["notes"], "key": "k"})
    assert got["value"] in (value(content="secret one"), value(content="secret two"))
    run(api, put("k", None))
    assert key_rows(table) == []
    assert value_rows(table) == []
    assert store_entries(table) == []
    assert "secret" not in everything_shown(api)


def test_a_refresh_that_lost_to_a_delete_or_a_put_does_nothing(
    api: ApiClient, table: Table, container: Container, value: Value
) -> None:
    store = container.store
    run(api, put("gone", value(content="a secret to forget"), ttl_minutes=60))
    run(api, put("kept", value(content="old words"), ttl_minutes=60))
    read_gone, read_kept = (
        table.get(ANA.scope(None).partition, records.key_row_sk(["notes"], k)) for k in ("gone", "kept")
    )
    run(api, put("gone", None), put("kept", value(content="new words"), ttl_minutes=60))
    assert read_gone is not None
    assert read_kept is not None
    store._refresh(ANA.scope(None), read_gone)  # the refresh of a read that began before the writes
    store._refresh(ANA.scope(None), read_kept)
    got_gone, got_kept = run(
        api, *({"op": "get", "user": "ana", "namespace": ["notes"], "key": k} for k in ("gone", "kept"))
    )
    assert got_gone is None
    assert got_kept["value"] == value(content="new words")
    assert "secret" not in everything_shown(api)
    assert len(store_entries(table)) == 1
    assert len(value_rows(table)) == len(key_rows(table)) * ("notes" in value())


def test_a_refresh_moves_the_expiry_of_the_item_and_its_entry(
    api: ApiClient, table: Table, container: Container, value: Value
) -> None:
    run(api, put("k", value(content="refreshed words"), ttl_minutes=60))
    row = table.get(ANA.scope(None).partition, records.key_row_sk(["notes"], "k"))
    assert row is not None
    aged = {**row, "expires_at": "2000-01-01T00:00:00.000Z"}  # as read long ago (its expiry long past)
    table.put(aged)
    container.store._refresh(ANA.scope(None), aged)
    (entry,) = store_entries(table)
    after = table.get(ANA.scope(None).partition, row["sk"])
    assert after is not None
    assert after["expires_at"] == entry[memory_records.EXPIRES_AT] > "2001"
    assert [(v["expires_at"], v["ttl"]) for v in value_rows(table)] == (
        [(after["expires_at"], after["ttl"])] if "notes" in value() else []
    )


@pytest.mark.parametrize("route", ["DELETE /memories/{id}", "delete by filter"])
def test_deleting_an_items_memory_deletes_the_item(
    api: ApiClient, table: Table, container: Container, route: str, value: Value
) -> None:
    run(api, put("k", value(content="the secret plan", kind="plan"), ttl_minutes=60))
    (entry,) = store_entries(table)
    if route == "DELETE /memories/{id}":
        assert api.delete(scope_path("demo", "ana") + f"/memories/{entry['id']}").status == 204
    else:
        reply = api.post(scope_path("demo", "ana") + "/memories/delete", {"filter": {"value.kind": "plan"}})
        assert reply.status == 200, reply.body
        assert reply.body["deleted"] == 1
    assert key_rows(table) == []
    assert value_rows(table) == []
    assert run(api, {"op": "get", "user": "ana", "namespace": ["notes"], "key": "k", "refresh_ttl": True}) == [None]
    assert "secret" not in everything_shown(api)


def test_a_namespace_within_the_documented_bounds_is_stored(api: ApiClient, table: Table, container: Container) -> None:
    quotes = ['"' * 256, '"' * 256]  # 512 bytes of labels: the bound; each quote escaped in the prefix token
    run(api, put("k", {"content": "quoted words"}, quotes))
    found, listed = run(
        api,
        {"op": "search", "user": "ana", "namespace_prefix": quotes, "query": "quoted words"},
        {"op": "list_namespaces", "user": "ana"},
    )
    assert [f["key"] for f in found] == ["k"]
    assert listed == [quotes]


def test_a_batch_is_refused_whole_before_it_writes(api: ApiClient, table: Table, container: Container) -> None:
    long_key = "/" * 400  # within the 1 KiB of a key, but 1,200 bytes as stored ('/' is encoded as %2F)
    reply = api.post(BATCH, {"ops": [put("first", {"content": "written first"}), put(long_key, {"content": "x"})]})
    assert (reply.status, reply.error_code) == (422, "key_too_long")
    assert key_rows(table) == []
    assert store_entries(table) == []

    bob_pk, bob_sk = users.deletion_mark_key(UserRef("demo", "bob"))  # bob's erasure is running
    for item in users.mark_items({"pk": bob_pk, "sk": bob_sk, "deletion_id": "d1"}):
        table.put(item)
    ops = [put("first", {"content": "ana's words"}), {**put("b", {"content": "bob's words"}), "user": "bob"}]
    reply = api.post(BATCH, {"ops": ops})
    assert reply.status == 409, reply.body
    assert key_rows(table) == []
    assert store_entries(table) == []


def test_a_batchs_reads_are_counted_in_read_units_under_its_searches_and_nothing_is_written_over_them(
    api: ApiClient, table: Table, container: Container
) -> None:
    long_words = " ".join(["and so on"] * 1000)  # 9 KB of text: 3 read units an entry
    for namespace in ("n0", "n1", "n2"):  # the words of ana's searches rank items of every namespace
        run(
            api,
            *(
                put(f"k{i:03}", {"content": f"the cat number {i} sat on the mat {long_words}"}, [namespace])
                for i in range(60)
            ),
        )
    search = {"op": "search", "user": "ana", "namespace_prefix": ["n0"], "query": "cat mat", "limit": 50}
    with capacity.measuring() as one:
        (alone,) = run(api, search)
    assert len(alone) == 50
    assert one.read_units > 2 * 50  # the entries the ranking reads under the search are charged, not its hits
    assert 99 * one.read_units > BATCH_READ_BUDGET

    with capacity.measuring() as refused:
        reply = api.post(BATCH, {"ops": [*[search] * 99, put("late", {"content": "never written"})]})
    assert (reply.status, reply.error_code) == (422, "batch_reads_too_much")
    assert "read units" in reply.body["error"]["message"]
    assert refused.read_units <= BATCH_READ_BUDGET + 100  # the budget and the call that went over it
    assert run(api, {"op": "get", "user": "ana", "namespace": ["notes"], "key": "late"}) == [None]

    fits = int(BATCH_READ_BUDGET // one.read_units) // 2
    assert run(api, *[search] * fits) == [alone] * fits


def test_listing_namespaces_reads_keys_not_values(api: ApiClient, table: Table, container: Container) -> None:
    big = {"content": "a long note", "blob": "b" * 40_000}  # 40 KB: 10 read units where it is read
    for start in range(0, 12, 4):
        run(api, *(put("k", big, [f"ns{i:02}"], text="a long note") for i in range(start, start + 4)))
    listing = {"op": "list_namespaces", "user": "ana"}
    with capacity.measuring() as read:
        (listed,) = run(api, listing)
    assert listed == [[f"ns{i:02}"] for i in range(12)]
    assert read.read_units <= 2 * 12  # a probe of a key row per namespace, and the registry: no value read

    with capacity.measuring() as read:
        results = run(api, *[listing] * 40)
    assert results == [listed] * 40
    assert read.read_units <= BATCH_READ_BUDGET

    got, found = (
        run(api, {"op": "get", "user": "ana", "namespace": ["ns03"], "key": "k"})[0],
        run(api, {"op": "search", "user": "ana", "namespace_prefix": ["ns03"], "query": "long note"})[0],
    )
    exported: list[dict[str, Any]] = []
    cursor: dict[str, str] = {}
    while True:  # the pages of the export, each within the response budget
        page = api.get(scope_path("demo", "ana") + "/export", query=cursor).body
        exported += page["store"]
        if page["next_cursor"] is None:
            break
        cursor = {"cursor": page["next_cursor"]}
    assert got["value"] == big
    assert [f["value"] for f in found] == [big]
    assert len(exported) == 12
    assert all(item["value"] == big for item in exported)


def test_a_value_that_shrinks_or_grows_moves_between_its_rows(
    api: ApiClient, table: Table, container: Container
) -> None:
    large = {"content": "words", "blob": "x" * (records.INLINE_VALUE_BYTES + 1)}
    run(api, put("k", large))
    assert len(value_rows(table)) == 1
    run(api, put("k", {"content": "small now"}))
    assert value_rows(table) == []
    got = run(api, {"op": "get", "user": "ana", "namespace": ["notes"], "key": "k"})
    assert got[0]["value"] == {"content": "small now"}
    assert run(api, {"op": "search", "user": "ana", "namespace_prefix": []}) == [got]
    run(api, put("k", large))
    (row,) = key_rows(table)
    (held,) = value_rows(table)
    assert "value" not in row
    assert held[records.REVISION] == row[records.REVISION]
    filtered = {"op": "search", "user": "ana", "namespace_prefix": [], "filter": {"content": "words"}}
    assert [item["value"] for item in run(api, filtered)[0]] == [large]


def test_answers_over_the_response_budget_are_cut_or_refused_before_a_write(
    api: ApiClient, table: Table, container: Container
) -> None:
    big = {"content": "big words", "blob": "\\" * 120_000}  # 240 KB as JSON, 480 KB on the wire
    for start in range(0, 12, 4):
        run(api, *(put(f"b{i:02}", big, text="big words") for i in range(start, start + 4)))
    search = {"op": "search", "user": "ana", "namespace_prefix": [], "limit": 12}
    reply = api.post(BATCH, {"ops": [search, {**search, "limit": 1}]})
    assert reply.status == 200
    assert reply.wire_bytes < 6 * 1024 * 1024
    assert reply.body["truncated"] == [0, 1]  # the second search found its item, but no room was left
    assert reply.body["results"][1] == []
    assert 0 < len(reply.body["results"][0]) < 12
    rest = run(api, {**search, "offset": len(reply.body["results"][0])})
    assert len(reply.body["results"][0]) + len(rest[0]) == 12
    refused = api.post(BATCH, {"ops": [search, put("late", {"content": "never written"})]})
    assert (refused.status, refused.error_code) == (413, "response_too_large")
    gets = [{"op": "get", "user": "ana", "namespace": ["notes"], "key": f"b{i:02}"} for i in range(12)]
    assert api.post(BATCH, {"ops": gets}).error_code == "response_too_large"
    assert run(api, {"op": "get", "user": "ana", "namespace": ["notes"], "key": "late"}) == [None]


def test_planted_store_metadata_neither_breaks_nor_enters_a_store_search(
    api: ApiClient, table: Table, container: Container
) -> None:
    run(api, put("real", {"content": "planted words here"}))
    for planted in (
        {"store.prefixes": ["[null]", "not json"], "store.key": "real"},  # matches the prefix, then garbage
        {"store.prefixes": ["[null]", "5"], "store.key": "real"},
        {"store.prefixes": ["[null]", '[null,"notes"]'], "store.key": "real"},  # names the real item
    ):
        entry = {"entry": {"content": {"role": "user", "parts": [{"text": "planted words"}]}, "metadata": planted}}
        # the REST routes refuse the store's own keys (issue 33, point 6) ...
        assert api.post(scope_path("demo", "ana") + "/memories", entry).status == 422
        # ... so they are planted as an entry written before that would hold them
        stored = api.post(scope_path("demo", "ana") + "/memories", {"entry": {**entry["entry"], "metadata": {}}})
        item = table.get(ANA.scope(None).partition, memory_records.entry_sk(stored.body["id"]))
        assert item is not None
        table.put({**item, memory_records.METADATA: memory_records.encoded_metadata(planted)})
    found = run(api, {"op": "search", "user": "ana", "namespace_prefix": [], "query": "planted words"})
    assert [f["key"] for f in found[0]] == ["real"]


def _op(wire: dict[str, Any]) -> Any:
    from pydantic import TypeAdapter

    from agentmem.models.store import StoreOp

    return TypeAdapter(StoreOp).validate_python(wire)
