"""``GET /v1/apps/{app}/users``: an app's users page by page, with the memory entries each holds and their last
write, through the real handler on SQLite and on DynamoDB (moto); users being erased or erased are not listed.
Another app's key gets 403 on it as on every app route (tests/integration/test_tenancy.py)."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem import users
from agentmem.container import Container, set_container
from agentmem.keys import UserRef
from agentmem.stores.table import Table
from tests.support import ApiClient, inline_deletion_runner, scope_path, text_entry

USERS = "/v1/apps/app1/users"


def _write(api: ApiClient, user: str, text: str, project: str | None = None, app: str = "app1") -> str:
    body = {"entry": text_entry(text, timestamp="2026-01-02T03:04:05Z"), "project_id": project}
    reply = api.post(f"{scope_path(app, user)}/memories", body)
    assert reply.status == 201, reply.body
    return str(reply.body["id"])


def _users(api: ApiClient, **query: Any) -> dict[str, Any]:
    reply = api.get(USERS, query=query)
    assert reply.status == 200, reply.body
    return reply.body  # type: ignore[no-any-return]


def test_users_are_listed_with_their_entries_and_last_write(api: ApiClient) -> None:
    # Given an app with no users yet
    assert _users(api) == {"users": [], "next_cursor": None}
    # And ana with entries in the global scope and a project, bob with one, carol only in the graph, and a user
    # of another app
    for text, project in (("likes tea", None), ("works on a boat", "work"), ("lives by the sea", "home")):
        _write(api, "ana", text, project)
    _write(api, "bob", "plays chess")
    graph = api.post(f"{scope_path('app1', 'carol')}/graph/entities", {"entities": [{"name": "Ana"}]})
    assert graph.status == 200, graph.body
    _write(api, "dave", "not of this app", app="app2")

    # When the app's users are listed
    listed = _users(api)

    # Then each user is there once, in key order, with the entries of every scope summed
    assert [(u["user_id"], u["entries"]) for u in listed["users"]] == [("ana", 3), ("bob", 1), ("carol", 0)]
    assert listed["next_cursor"] is None
    # And the last write of a user who wrote an entry is a timestamp; carol, who wrote none, has null
    last = {u["user_id"]: u["last_write_at"] for u in listed["users"]}
    assert last["ana"] is not None
    assert last["ana"].endswith("Z")
    assert last["carol"] is None


def test_entries_count_deletes_and_pages_follow_each_other(api: ApiClient) -> None:
    # Given three users, one of whose entries is deleted
    kept = _write(api, "u1", "first")
    gone = _write(api, "u1", "second")
    _write(api, "u2", "third")
    _write(api, "u3", "fourth")
    assert api.delete(f"{scope_path('app1', 'u1')}/memories/{gone}").status in (200, 204)
    # When listed two at a time
    first = _users(api, limit=2)
    second = _users(api, limit=2, cursor=first["next_cursor"])
    # Then the pages hold every user once and the deleted entry is no longer counted
    assert [u["user_id"] for u in first["users"]] == ["u1", "u2"]
    assert first["next_cursor"] == "u2"
    assert [u["user_id"] for u in second["users"]] == ["u3"]
    assert second["next_cursor"] is None
    assert first["users"][0]["entries"] == 1
    assert api.get(f"{scope_path('app1', 'u1')}/memories/{kept}").status == 200


@pytest.mark.parametrize(
    ("query", "code"),
    [({"limit": 0}, 422), ({"limit": 101}, 422), ({"limit": "x"}, 422), ({"cursor": ""}, 422)],
)
def test_bad_paging_is_a_4xx_in_the_error_envelope(api: ApiClient, query: dict[str, Any], code: int) -> None:
    _write(api, "ana", "likes tea")
    reply = api.get(USERS, query=query)
    assert reply.status == code, reply.body
    assert set(reply.body["error"]) >= {"code", "message", "request_id"}


def test_a_user_being_erased_or_erased_is_not_listed(api: ApiClient, container: Container) -> None:
    # Given three users
    for user in ("ana", "bob", "carol"):
        _write(api, user, f"a note of {user}")
    # When bob's erasure has set its mark (the workflow's first step) and carol was erased to the end
    deletion = container.deletion
    started = deletion.begin(UserRef("app1", "bob"), is_active=lambda _: True)
    deletion.mark(UserRef("app1", "bob"), started.deletion_id)
    set_container(Container(container.settings, table=container.table, deletion_runner=inline_deletion_runner()))
    erased = api.delete(scope_path("app1", "carol"))
    assert erased.status == 202
    status = api.get(f"{scope_path('app1', 'carol')}/deletions/{erased.body['deletion_id']}").body
    assert status["status"] == "SUCCEEDED"
    # Then only ana is listed
    assert [u["user_id"] for u in _users(api)["users"]] == ["ana"]


def test_a_page_reads_a_bounded_number_of_scopes(api: ApiClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given three users with three scopes each, and a page whose scope budget is four
    from agentmem import app_users

    for user in ("a", "b", "c"):
        for project in (None, "p", "q"):
            _write(api, user, "note", project)
    monkeypatch.setattr(app_users, "PAGE_SCOPES", 4)
    # When a page of up to 100 users is asked for
    first = _users(api, limit=100)
    # Then it ends once it has read four scopes or more (after two users: 6 scopes), with a cursor to follow
    assert [u["user_id"] for u in first["users"]] == ["a", "b"]
    assert first["next_cursor"] == "b"
    rest = _users(api, limit=100, cursor=first["next_cursor"])
    assert [(u["user_id"], u["entries"]) for u in rest["users"]] == [("c", 3)]
    assert rest["next_cursor"] is None


def test_a_user_written_before_the_user_list_is_listed_from_their_next_write(api: ApiClient, table: Table) -> None:
    # Given a user whose data was written before the app's user list existed: no row in it, and registry
    # shards written without the mark that says the user is listed
    _write(api, "old", "written long ago")
    old = UserRef("app1", "old")
    table.delete(*users.app_user_key(old))
    for shard in range(users.GUARD_SHARDS):
        pk, sk = users.registry_shard_key(old.scope(None), shard)
        table.put({"pk": pk, "sk": sk})
    assert _users(api)["users"] == []
    # When the user writes again / Then the user is listed, with every entry
    _write(api, "old", "written now")
    assert [(u["user_id"], u["entries"]) for u in _users(api)["users"]] == [("old", 2)]
    # And later writes list nothing twice
    _write(api, "old", "and again")
    assert [u["user_id"] for u in _users(api)["users"]] == ["old"]
