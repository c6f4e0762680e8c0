"""Every memory route of API.md through the real handler, on SQLite and on DynamoDB (moto)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ApiClient, scope_path, text_entry

SCOPE = scope_path("app1", "alice")


def texts(entries: list[dict[str, Any]]) -> list[str]:
    return [e["content"]["parts"][0]["text"] for e in entries]


def store(
    api: ApiClient, text: str, *, scope: str = SCOPE, project: str | None = None, **entry_kw: Any
) -> dict[str, Any]:
    reply = api.post(f"{scope}/memories", {"entry": text_entry(text, **entry_kw), "project_id": project})
    assert reply.status == 201, reply.body
    return reply.body  # type: ignore[no-any-return]


def search(api: ApiClient, query: str, *, scope: str = SCOPE, **body: Any) -> list[dict[str, Any]]:
    reply = api.post(f"{scope}/memories/search", {"query": query, **body})
    assert reply.status == 200, reply.body
    return reply.body["entries"]  # type: ignore[no-any-return]


# -- sessions ---------------------------------------------------------------------------------------


def test_a_session_reingested_replaces_its_entries(api: ApiClient) -> None:
    # Given a session of two entries
    first = api.put(
        f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("likes green tea"), text_entry("owns a cat")]}
    )
    assert first.body == {"session_id": "s1", "stored": 2, "skipped": 0}
    # When the same session is ingested again with other entries
    again = api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("likes black coffee")]})
    # Then only the new entries remain, and old words no longer match
    assert again.body == {"session_id": "s1", "stored": 1, "skipped": 0}
    assert texts(api.get(f"{SCOPE}/memories").body["entries"]) == ["likes black coffee"]
    assert search(api, "green tea") == []


def test_entries_without_text_are_skipped_and_counted(api: ApiClient) -> None:
    image = {"content": {"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "AAAA"}}]}}
    blank = {"content": {"role": "user", "parts": [{"text": "   "}]}}
    reply = api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [image, text_entry("real words"), blank]})
    assert reply.body == {"session_id": "s1", "stored": 1, "skipped": 2}


def test_stored_parts_come_back_unchanged(api: ApiClient) -> None:
    # Given an entry mixing text and a function call with float arguments
    content = {
        "role": "model",
        "parts": [{"text": "calling the weather tool"}, {"functionCall": {"name": "weather", "args": {"lat": 48.85}}}],
    }
    created = api.post(f"{SCOPE}/memories", {"entry": {"content": content, "author": "agent"}})
    # When it is read back by id
    fetched = api.get(f"{SCOPE}/memories/{created.body['id']}")
    # Then its content is exactly what was sent
    assert fetched.status == 200
    assert fetched.body["content"] == content
    assert fetched.body["author"] == "agent"


def test_add_entry_returns_the_stored_entry(api: ApiClient) -> None:
    body = store(api, "prefers window seats", timestamp="2026-06-01T09:30:00Z")
    assert set(body) == {
        "id",
        "session_id",
        "project_id",
        "content",
        "author",
        "timestamp",
        "metadata",
        "expires_at",
        "revision",
        "updated_at",
    }
    assert body["timestamp"] == "2026-06-01T09:30:00.000Z"
    assert body["revision"] == 1  # never corrected: its last write is its timestamp
    assert body["updated_at"] == body["timestamp"]
    assert body["metadata"] == {}
    assert body["expires_at"] is None
    assert body["project_id"] is None
    assert body["session_id"] is None
    assert len(body["id"]) == 26


# -- search -----------------------------------------------------------------------------------------


def test_search_ranks_by_relevance_not_insertion_order(api: ApiClient) -> None:
    # Given entries where the best match is stored neither first nor last
    store(api, "the weather in Paris was nice")
    store(api, "flight to Paris booked for the Louvre museum visit")
    store(api, "museum membership renewed")
    for filler in range(5):
        store(api, f"unrelated note number {filler}")
    # When searching for two words of one entry
    found = search(api, "Paris museum")
    # Then the entry holding both words ranks first, with scores in [0, 1] best first
    assert texts(found)[0] == "flight to Paris booked for the Louvre museum visit"
    assert set(texts(found)) == {
        "the weather in Paris was nice",
        "flight to Paris booked for the Louvre museum visit",
        "museum membership renewed",
    }
    scores = [e["score"] for e in found]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)


def test_rare_words_outweigh_common_ones(api: ApiClient) -> None:
    for i in range(6):
        store(api, f"meeting notes {i}")
    store(api, "meeting about the kubernetes migration")
    store(api, "kubernetes cluster upgrade")
    found = search(api, "kubernetes meeting")
    assert texts(found)[:2] == ["meeting about the kubernetes migration", "kubernetes cluster upgrade"]


def test_top_k_and_min_score_bound_the_results(api: ApiClient) -> None:
    for i in range(5):
        store(api, f"python tip {i}")
    store(api, "python and rust and go tips")
    assert len(search(api, "python", top_k=2)) == 2
    weak_and_strong = search(api, "python rust")
    strong_only = search(api, "python rust", min_score=weak_and_strong[0]["score"])
    assert texts(strong_only) == ["python and rust and go tips"]


def test_cjk_text_is_searchable_by_words_inside_it(api: ApiClient) -> None:
    store(api, "我住在東京")
    store(api, "我喜欢咖啡")
    assert texts(search(api, "東京")) == ["我住在東京"]


# -- projects ---------------------------------------------------------------------------------------


def test_project_scoping_rules(api: ApiClient) -> None:
    # Given a global entry and one entry in each of two projects
    store(api, "global fact about coffee")
    store(api, "project alpha coffee budget", project="alpha")
    store(api, "project beta coffee supplier", project="beta")
    # Then a global search sees only global entries
    assert texts(search(api, "coffee")) == ["global fact about coffee"]
    # And a project search sees global entries plus its own, never another project's
    assert set(texts(search(api, "coffee", project_id="alpha"))) == {
        "global fact about coffee",
        "project alpha coffee budget",
    }
    listed = api.get(f"{SCOPE}/memories", query={"project_id": "beta"}).body["entries"]
    assert set(texts(listed)) == {"global fact about coffee", "project beta coffee supplier"}


def test_delete_project_removes_only_that_project(api: ApiClient) -> None:
    store(api, "global entry")
    store(api, "alpha one", project="alpha")
    store(api, "alpha two", project="alpha")
    store(api, "beta one", project="beta")
    reply = api.delete(f"{SCOPE}/projects/alpha")
    assert reply.body == {"deleted": 2}
    assert texts(api.get(f"{SCOPE}/memories", query={"project_id": "alpha"}).body["entries"]) == ["global entry"]
    assert set(texts(api.get(f"{SCOPE}/memories", query={"project_id": "beta"}).body["entries"])) == {
        "global entry",
        "beta one",
    }
    assert search(api, "alpha", project_id="alpha") == []


def test_deletes_in_a_project_never_widen_to_global(api: ApiClient) -> None:
    # Given the same session id and the same words in global scope and in a project
    api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("shared words here")]})
    api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("shared words here")], "project_id": "p"})
    # When deleting by session and by query inside the project
    assert api.delete(f"{SCOPE}/sessions/s1", query={"project_id": "p"}).body == {"deleted": 1}
    api.put(f"{SCOPE}/sessions/s2/memories", {"entries": [text_entry("shared words again")], "project_id": "p"})
    assert api.post(f"{SCOPE}/memories/delete", {"query": "shared words", "project_id": "p"}).body == {"deleted": 1}
    # Then the global entry is still there
    assert texts(api.get(f"{SCOPE}/memories").body["entries"]) == ["shared words here"]


# -- isolation --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "other",
    [
        scope_path("app1", "bob"),  # another user of the same app
        scope_path("app2", "alice"),  # the same user id in another app
        scope_path("app1", "alice#"),  # ids that only differ by separator-like characters
        scope_path("app1#alice", "%"),
    ],
)
def test_users_and_apps_never_see_each_other(api: ApiClient, other: str) -> None:
    secret = store(api, "alice secret diary entry")
    assert search(api, "secret diary", scope=other) == []
    assert api.get(f"{other}/memories").body["entries"] == []
    assert api.get(f"{other}/memories/{secret['id']}").status == 404
    assert api.delete(f"{other}/memories/{secret['id']}").status == 404
    assert api.post(f"{other}/memories/delete", {"query": "secret diary"}).body == {"deleted": 0}
    assert api.get(f"{SCOPE}/memories/{secret['id']}").status == 200


def test_percent_encoded_ids_are_distinct_users(api: ApiClient) -> None:
    store(api, "slash user memory", scope=scope_path("app1", "a/b"))
    assert search(api, "slash", scope=scope_path("app1", "a%2Fb")) == []
    assert texts(search(api, "slash", scope=scope_path("app1", "a/b"))) == ["slash user memory"]


# -- listing ----------------------------------------------------------------------------------------


def test_list_recent_is_newest_first_and_pages_across_global_and_project(api: ApiClient) -> None:
    # Given entries with explicit timestamps, alternating global and project
    for minute in range(7):
        project = "p" if minute % 2 else None
        store(api, f"entry {minute}", project=project, timestamp=f"2026-06-01T09:{minute:02d}:00Z")
    # When paging through the project view two at a time
    seen: list[str] = []
    cursor = None
    while True:
        query: dict[str, Any] = {"project_id": "p", "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get(f"{SCOPE}/memories", query=query).body
        assert len(page["entries"]) <= 2
        seen += texts(page["entries"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # Then every entry came once, newest first
    assert seen == [f"entry {m}" for m in reversed(range(7))]


# -- deletes ----------------------------------------------------------------------------------------


def test_delete_one_entry(api: ApiClient) -> None:
    entry = store(api, "to be forgotten")
    assert api.delete(f"{SCOPE}/memories/{entry['id']}").status == 204
    assert api.get(f"{SCOPE}/memories/{entry['id']}").status == 404
    assert search(api, "forgotten") == []
    assert api.delete(f"{SCOPE}/memories/{entry['id']}").status == 404


def test_delete_by_query_needs_every_word(api: ApiClient) -> None:
    store(api, "red apple pie")
    store(api, "red car")
    store(api, "apple juice")
    assert api.post(f"{SCOPE}/memories/delete", {"query": "apple red"}).body == {"deleted": 1}
    assert set(texts(api.get(f"{SCOPE}/memories").body["entries"])) == {"red car", "apple juice"}


def test_delete_by_empty_query_is_refused_and_deletes_nothing(api: ApiClient) -> None:
    store(api, "keep me")
    for query in ("", "   ", "the and of"):
        reply = api.post(f"{SCOPE}/memories/delete", {"query": query})
        assert reply.status == 400, query
        assert reply.error_code == "empty_query"
    assert texts(api.get(f"{SCOPE}/memories").body["entries"]) == ["keep me"]


def test_delete_session_returns_the_count(api: ApiClient) -> None:
    api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("one"), text_entry("two")]})
    api.put(f"{SCOPE}/sessions/s2/memories", {"entries": [text_entry("three")]})
    assert api.delete(f"{SCOPE}/sessions/s1").body == {"deleted": 2}
    assert api.delete(f"{SCOPE}/sessions/s1").body == {"deleted": 0}
    assert texts(api.get(f"{SCOPE}/memories").body["entries"]) == ["three"]


# -- service ----------------------------------------------------------------------------------------


def test_health_capabilities_and_openapi(api: ApiClient) -> None:
    health = api.get("/v1/health")
    assert health.status == 200
    assert health.body == {"status": "ok", "checks": {"table": "ok"}}
    capabilities = api.get("/v1/capabilities").body
    assert capabilities["project_scoping"] is True
    assert "keyword" in capabilities["search_modes"]
    document = api.get("/v1/openapi.json").body
    assert document["openapi"].startswith("3.")
    assert "/v1/apps/{app}/users/{user}/memories/search" in document["paths"]


# -- idempotency ------------------------------------------------------------------------------------


def test_a_retried_write_with_the_same_idempotency_key_writes_once(api: ApiClient) -> None:
    body = {"entry": text_entry("exactly once")}
    headers = {"Idempotency-Key": "retry-1"}
    first = api.post(f"{SCOPE}/memories", body, headers=headers)
    second = api.post(f"{SCOPE}/memories", body, headers=headers)
    assert first.status == second.status == 201
    assert second.body == first.body
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert len(api.get(f"{SCOPE}/memories").body["entries"]) == 1


def test_an_idempotency_key_reused_for_another_request_is_refused(api: ApiClient) -> None:
    headers = {"Idempotency-Key": "k"}
    api.post(f"{SCOPE}/memories", {"entry": text_entry("first")}, headers=headers)
    reply = api.post(f"{SCOPE}/memories", {"entry": text_entry("second")}, headers=headers)
    assert reply.status == 422
    assert reply.error_code == "idempotency_key_reused"
    assert texts(api.get(f"{SCOPE}/memories").body["entries"]) == ["first"]


def test_a_failed_write_does_not_burn_its_idempotency_key(api: ApiClient) -> None:
    headers = {"Idempotency-Key": "k2"}
    bad = api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("x" * 70_000)]}, headers=headers)
    assert bad.status == 413
    good = api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("x" * 70_000)]}, headers=headers)
    assert good.status == 413  # the same request is evaluated again, not replayed from a stored failure


def test_a_project_in_the_query_of_a_write_is_refused_not_widened_to_global(api: ApiClient) -> None:
    # Given a client that puts project_id in the query string of a POST (the body is where API.md has it)
    reply = api.post(f"{SCOPE}/memories", {"entry": text_entry("meant for project p")}, query={"project_id": "p"})
    # Then the write is refused rather than stored globally
    assert reply.status == 422
    assert reply.error_code == "project_id_in_query"
    assert api.get(f"{SCOPE}/memories").body["entries"] == []
    graph = api.post(f"{SCOPE}/graph/tools/remember", {"entity": "X", "facts": ["y"]}, query={"project_id": "p"})
    assert graph.status == 422
