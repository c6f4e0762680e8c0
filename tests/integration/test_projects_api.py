"""``GET {scope}/projects``: the projects a user has written to, page by page (the console's project
selector), through the real handler on SQLite and on DynamoDB (moto). The browser tests check that an
erased user has none left (tests/browser/test_console.py)."""

from __future__ import annotations

from typing import Any

from tests.support import ApiClient, scope_path, text_entry

SCOPE = scope_path("app1", "alice")


def _write(api: ApiClient, project: str | None, scope: str = SCOPE) -> None:
    reply = api.post(f"{scope}/memories", {"entry": text_entry(f"a note of {project}"), "project_id": project})
    assert reply.status == 201, reply.body


def _projects(api: ApiClient, **query: Any) -> dict[str, Any]:
    reply = api.get(f"{SCOPE}/projects", query=query)
    assert reply.status == 200, reply.body
    return reply.body  # type: ignore[no-any-return]


def test_projects_are_listed_in_key_order_page_by_page(api: ApiClient) -> None:
    # Given a user who wrote globally, to three projects (one by a graph write), and another user
    assert _projects(api) == {"projects": [], "next_cursor": None}
    for project in (None, "work", "home", "a/b#c"):
        _write(api, project)
    graph = api.post(f"{SCOPE}/graph/entities", {"entities": [{"name": "Ana"}], "project_id": "garden"})
    assert graph.status == 200, graph.body
    _write(api, "bob's project", scope=scope_path("app1", "bob"))
    # Then every project of hers is listed once, the global scope aside, and not bob's
    everything = _projects(api)
    assert sorted(everything["projects"]) == ["a/b#c", "garden", "home", "work"]
    assert everything["next_cursor"] is None
    # And pages of two follow each other to the same list
    first = _projects(api, limit=2)
    assert len(first["projects"]) == 2
    assert first["next_cursor"] == first["projects"][-1]
    second = _projects(api, limit=2, cursor=first["next_cursor"])
    assert second["next_cursor"] is None
    assert first["projects"] + second["projects"] == everything["projects"]


def test_bad_paging_is_a_4xx_and_a_deleted_project_stays_listed(api: ApiClient) -> None:
    _write(api, "work")
    assert api.get(f"{SCOPE}/projects", query={"limit": 0}).status == 422
    assert api.get(f"{SCOPE}/projects", query={"limit": 1001}).status == 422
    empty = api.get(f"{SCOPE}/projects", query={"cursor": ""})
    assert empty.status == 422
    assert empty.error_code == "invalid_id"
    # When the project's data is deleted / Then it is still listed (only an erasure forgets a user's scopes)
    assert api.delete(f"{SCOPE}/projects/work").status == 200
    assert _projects(api)["projects"] == ["work"]
