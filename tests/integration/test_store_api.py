"""``POST /v1/apps/{app}/store/batch`` through the real handler on both tables (SQLite and DynamoDB on moto):
items by namespace and key, kept in the exact scope named, refused while the user is erased, erased with
the user, and bad batches refused with nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.keys import UserRef
from agentmem.store import records
from agentmem.stores.table import Table
from tests.support import ApiClient, inline_deletion_runner, scope_path

BATCH = "/v1/apps/demo/store/batch"


def put(user: str, key: str, value: dict[str, Any] | None, namespace: list[str], **extra: Any) -> dict[str, Any]:
    return {"op": "put", "user": user, "namespace": namespace, "key": key, "value": value, **extra}


def get(user: str, key: str, namespace: list[str], **extra: Any) -> dict[str, Any]:
    return {"op": "get", "user": user, "namespace": namespace, "key": key, **extra}


def run(api: ApiClient, *ops: dict[str, Any]) -> list[Any]:
    reply = api.post(BATCH, {"ops": list(ops)})
    assert reply.status == 200, reply.body
    return reply.body["results"]  # type: ignore[no-any-return]


def test_items_round_trip_by_namespace_and_key(api: ApiClient, table: Table, container: Container) -> None:
    run(
        api,
        put("ana", "theme", {"content": "prefers dark mode", "n": 2}, ["prefs"]),
        put("ana", "dog", {"content": "the dog is called Pixel"}, ["pets", "dogs"]),
        put("bob", "theme", {"content": "prefers light mode"}, ["prefs"]),
    )
    got, found, listed, other = run(
        api,
        get("ana", "theme", ["prefs"]),
        {"op": "search", "user": "ana", "namespace_prefix": [], "query": "what is the dog called", "limit": 5},
        {"op": "list_namespaces", "user": "ana"},
        get("ana", "theme", ["pets"]),
    )
    assert got["value"] == {"content": "prefers dark mode", "n": 2}
    assert got["namespace"] == ["prefs"]
    assert [f["key"] for f in found] == ["dog"]  # keyword search here (no embedder): the words must meet
    assert listed == [["pets", "dogs"], ["prefs"]]
    assert other is None
    # one key row beside the entry, in the user's global scope partition
    rows = table.query(UserRef("demo", "ana").scope(None).partition, records.KEY_ROW).items
    assert sorted(r["key"] for r in rows) == ["dog", "theme"]
    run(api, put("ana", "dog", None, ["pets", "dogs"]))
    assert run(api, {"op": "search", "user": "ana", "namespace_prefix": ["pets"], "query": "dog"}) == [[]]
    assert api.get(scope_path("demo", "ana") + "/memories").body["entries"][0]["metadata"]["store.key"] == "theme"


def test_a_project_item_stays_in_its_project(api: ApiClient, table: Table, container: Container) -> None:
    run(api, put("ana", "k", {"content": "project fact"}, ["n"], project_id="p1"))
    in_project, in_global, global_search, other_project = run(
        api,
        get("ana", "k", ["n"], project_id="p1"),
        get("ana", "k", ["n"]),
        {"op": "search", "user": "ana", "namespace_prefix": [], "query": "project fact"},
        {"op": "search", "user": "ana", "namespace_prefix": [], "query": "project fact", "project_id": "p2"},
    )
    assert in_project["value"] == {"content": "project fact"}
    assert (in_global, global_search, other_project) == (None, [], [])


def test_the_store_is_erased_with_the_user_and_refused_while_it_runs(
    api: ApiClient, table: Table, container: Container
) -> None:
    set_container(Container(container.settings, table=table, deletion_runner=inline_deletion_runner()))
    run(
        api,
        put("ana", "a", {"content": "global fact"}, ["x"]),
        put("ana", "b", {}, ["y"], project_id="p1"),  # no text: a key row only, in a project scope
    )
    assert api.delete(scope_path("demo", "ana")).status == 202
    user = UserRef("demo", "ana")
    for project in (None, "p1"):
        assert table.query(user.scope(project).partition).items == []
    assert run(api, get("ana", "a", ["x"]), get("ana", "b", ["y"], project_id="p1")) == [None, None]

    # while an erasure runs (its mark set), a put is refused and writes nothing
    from agentmem import users

    mark_pk, mark_sk = users.deletion_mark_key(user)
    table.put({"pk": mark_pk, "sk": mark_sk, "deletion_id": "d1"})
    reply = api.post(BATCH, {"ops": [put("ana", "c", {"content": "late"}, ["x"])]})
    assert reply.status == 409
    assert table.query(user.scope(None).partition).items == []


@pytest.mark.parametrize(
    ("op", "status", "code"),
    [
        ({"op": "put", "user": "ana", "namespace": ["a.b"], "key": "k", "value": {}}, 422, "invalid_input"),
        ({"op": "put", "user": "ana", "namespace": [""], "key": "k", "value": {}}, 422, "invalid_input"),
        ({"op": "put", "user": "", "namespace": [], "key": "k", "value": {}}, 422, "invalid_input"),
        ({"op": "put", "user": "ana", "namespace": ["n"] * 17, "key": "k", "value": {}}, 422, "invalid_input"),
        (
            {"op": "put", "user": "ana", "namespace": [], "key": "k", "value": {"v": 1.5}, "ttl_minutes": 0},
            422,
            "invalid_input",
        ),
        (
            {"op": "put", "user": "ana", "namespace": [], "key": "k", "value": {"t": "x" * 300_000}},
            413,
            "value_too_large",
        ),
        ({"op": "search", "user": "ana", "namespace_prefix": [], "filter": {"a": {"$in": [1]}}}, 422, "invalid_filter"),
        ({"op": "search", "user": "ana", "namespace_prefix": [], "limit": 1001}, 422, "invalid_input"),
    ],
)
def test_a_bad_batch_is_refused_and_writes_nothing(
    api: ApiClient, table: Table, container: Container, op: dict[str, Any], status: int, code: str
) -> None:
    first = put("ana", "first", {"content": "should not land"}, ["n"])
    reply = api.post(BATCH, {"ops": [first, op]})
    assert (reply.status, reply.error_code) == (status, code)
    assert table.query(UserRef("demo", "ana").scope(None).partition).items == []
