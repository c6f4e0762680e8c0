"""A hybrid search's first hits bring the turn they continue: the author's own turn just before the other
author's turn it answers ("Something not so great happened yesterday..." / "Oh no, what?" / "A car ran
a red light and hit us"). Over the REST handler on SQLite and DynamoDB, with the hashing embedder."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ApiClient, scope_path, text_entry

PATH = scope_path("app", "alice")
STORY = [
    ("maria", "Hey John! The kids were great. But something not so great happened yesterday..."),
    ("john", "Oh no, Maria, what happened? Are you alright?"),
    ("maria", "A car ran a red light and hit us, but thankfully everyone is okay."),
    ("john", "That sounds scary, glad you are safe."),
]
FILLER = [
    ("maria", "I baked sourdough bread with my mom this weekend."),
    ("john", "My garden tomatoes are finally ripe."),
    ("maria", "The shelter needs more blankets for the winter."),
    ("john", "I started reading a novel about sailors."),
]


@pytest.fixture
def api(api_on_table: ApiClient) -> ApiClient:
    """The API over the parametrised table (the integration conftest's), by a shorter name."""
    return api_on_table


def _entry(author: str, text: str, **metadata: Any) -> dict[str, Any]:
    entry = text_entry(text, author=author)
    if metadata:
        entry["metadata"] = metadata
    return entry


def _texts(api: ApiClient, query: str, mode: str = "hybrid", **extra: Any) -> list[str]:
    reply = api.post(f"{PATH}/memories/search", {"query": query, "mode": mode, "top_k": 5, **extra})
    assert reply.status == 200, reply.body
    return [e["content"]["parts"][0]["text"] for e in reply.body["entries"]]


def _store_session(api: ApiClient, turns: list[tuple[str, str]], session: str = "s1") -> None:
    reply = api.put(f"{PATH}/sessions/{session}/memories", {"entries": [_entry(a, t) for a, t in turns]})
    assert reply.status == 200, reply.body


def test_the_hit_brings_the_turn_it_continues_right_after_it(api: ApiClient) -> None:
    _store_session(api, FILLER + STORY)
    found = _texts(api, "car ran a red light")
    assert found[0] == STORY[2][1]
    assert found[1] == STORY[0][1]
    # And the brought turn scores just below the hit that brought it
    reply = api.post(f"{PATH}/memories/search", {"query": "car ran a red light", "top_k": 5})
    first, second = reply.body["entries"][:2]
    assert second["score"] < first["score"]
    assert second["score"] >= round(first["score"] * 0.998, 6)


def test_keyword_search_brings_nothing(api: ApiClient) -> None:
    _store_session(api, FILLER + STORY)
    assert _texts(api, "car ran a red light", "keyword") == [STORY[2][1]]


def test_entries_added_one_by_one_to_a_session_continue_too(api: ApiClient) -> None:
    for author, text in FILLER + STORY:
        reply = api.post(f"{PATH}/memories", {"entry": _entry(author, text), "session_id": "s1"})
        assert reply.status == 201, reply.body
    found = _texts(api, "car ran a red light")
    assert found[:2] == [STORY[2][1], STORY[0][1]]


def test_a_run_of_one_authors_notes_continues_nothing(api: ApiClient) -> None:
    notes = [("maria", text) for _, text in STORY]
    _store_session(api, FILLER + notes)
    found = _texts(api, "car ran a red light")
    assert found[0] == STORY[2][1]
    assert found[1] != STORY[0][1]


def test_a_brought_turn_must_match_the_filter_and_be_there(api: ApiClient) -> None:
    turns = [_entry(a, t, part="story" if i != 0 else "opening") for i, (a, t) in enumerate(STORY)]
    reply = api.put(f"{PATH}/sessions/s1/memories", {"entries": [_entry(a, t) for a, t in FILLER] + turns})
    assert reply.status == 200, reply.body
    # A filter the continued turn does not match keeps it out
    found = _texts(api, "car ran a red light", filter={"part": "story"})
    assert STORY[0][1] not in found
    # A deleted continued turn is not brought back
    reply = api.post(f"{PATH}/memories/search", {"query": "car ran a red light", "top_k": 5})
    opening = reply.body["entries"][1]["id"]
    assert reply.body["entries"][1]["content"]["parts"][0]["text"] == STORY[0][1]
    assert api.delete(f"{PATH}/memories/{opening}").status == 204
    found = _texts(api, "car ran a red light")
    assert found[0] == STORY[2][1]
    assert STORY[0][1] not in found
