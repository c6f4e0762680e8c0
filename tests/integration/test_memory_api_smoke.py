"""A first end-to-end pass through the handler on both tables (the full suites live beside it)."""

from tests.support import ApiClient, scope_path, text_entry


def test_stored_session_is_found_by_keyword_search(api: ApiClient) -> None:
    # Given a session stored for a user whose id holds a slash
    scope = scope_path("demo", "a/b")
    reply = api.put(
        f"{scope}/sessions/s1/memories", {"entries": [text_entry("I prefer dark mode"), text_entry("My dog is Pixel")]}
    )
    assert reply.status == 200, reply.body
    assert reply.body == {"session_id": "s1", "stored": 2, "skipped": 0}
    # When searching for words of one entry
    found = api.post(f"{scope}/memories/search", {"query": "dark mode"})
    # Then that entry comes back with a score in [0, 1]
    assert found.status == 200
    texts = [e["content"]["parts"][0]["text"] for e in found.body["entries"]]
    assert texts == ["I prefer dark mode"]
    assert 0 < found.body["entries"][0]["score"] <= 1
