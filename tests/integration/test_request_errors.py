"""Bad requests get a clear answer (issue 33, point 10), on both tables through the real handler: a missing or
mistyped body field named ``query`` is named, not reported as "request"; a real path asked with a method it
does not take is 405 with ``Allow``, including ``GET .../memories/search`` (not "no memory 'search'")."""

from __future__ import annotations

import pytest

from tests.support import ApiClient, count_items, scope_path, text_entry

SCOPE = scope_path("app", "alice")


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("memories/search", {}),
        ("memories/search", {"query": 5}),
        ("memories/search", {"query": ["a"]}),
        ("memories/delete", {"query": 5}),
        ("memories/delete", {"query": ["a"]}),
    ],
)
def test_a_missing_or_mistyped_query_is_named(api: ApiClient, route: str, body: dict[str, object]) -> None:
    reply = api.post(f"{SCOPE}/{route}", body)
    assert reply.status == 422, reply.body
    assert reply.body["error"]["message"].startswith("query:"), reply.body
    assert reply.body["error"]["details"][0]["location"] == "query"


def test_a_delete_with_neither_query_nor_filter_says_so(api: ApiClient) -> None:
    reply = api.post(f"{SCOPE}/memories/delete", {})
    assert (reply.status, reply.error_code) == (400, "empty_query")
    assert "query" in reply.body["error"]["message"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/memories/search", "POST"),
        ("DELETE", "/memories/search", "POST"),
        ("GET", "/memories/query", "POST"),
        ("PUT", "/memories", "GET, POST"),
        ("POST", "/export", "GET"),
        ("PATCH", "/memories", "GET, POST"),
        ("GET", "/graph/tools/remember", "POST"),
    ],
)
def test_a_real_path_asked_with_another_method_is_405_with_allow(
    api: ApiClient, container: object, method: str, path: str, allowed: str
) -> None:
    api.post(f"{SCOPE}/memories", {"entry": text_entry("a note")})
    before = count_items(container.table)  # type: ignore[attr-defined]
    reply = api.request(method, SCOPE + path)
    assert (reply.status, reply.error_code) == (405, "method_not_allowed"), reply.body
    assert reply.headers.get("Allow") == allowed
    assert count_items(container.table) == before  # type: ignore[attr-defined]


def test_an_unknown_path_is_still_404(api: ApiClient) -> None:
    reply = api.get(f"{SCOPE}/nothing-here")
    assert (reply.status, reply.error_code) == (404, "route_not_found")


def test_an_agentcore_path_asked_with_another_method_is_an_unknown_operation(api: ApiClient) -> None:
    reply = api.get("/agentcore/memories/some-memory-01/events")
    assert reply.status == 404
    assert reply.headers.get("x-amzn-ErrorType") == "UnknownOperationException"
