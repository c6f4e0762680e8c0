"""An entry may be written as a plain string over REST, as both clients accept it (issue 43, point 8e): on
POST {scope}/memories and in a session's entries it is the user's words (role user, one text part, author
user), stored and searched like the same entry written out; any other type than a string or an object is
a 422 that writes nothing. On both tables, through the handler."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ApiClient, scope_path

ALICE = scope_path("shop", "alice")
WRITTEN_OUT = {"content": {"role": "user", "parts": [{"text": "My dog is called Pixel"}]}, "author": "user"}


def _shape(entry: dict[str, Any]) -> dict[str, Any]:
    return {"content": entry["content"], "author": entry["author"]}


def test_a_plain_string_is_stored_as_the_users_words(api: ApiClient) -> None:
    # When one entry is written as a string
    stored = api.request("POST", f"{ALICE}/memories", {"entry": "My dog is called Pixel", "project_id": "pets"})
    # Then it is stored as the same entry written out, in its project, and found by its words
    assert stored.status == 201, stored.body
    assert _shape(stored.body) == WRITTEN_OUT
    assert stored.body["project_id"] == "pets"
    got = api.request("GET", f"{ALICE}/memories/{stored.body['id']}")
    assert _shape(got.body) == WRITTEN_OUT
    found = api.request("POST", f"{ALICE}/memories/search", {"query": "Pixel", "mode": "keyword", "project_id": "pets"})
    assert [e["id"] for e in found.body["entries"]] == [stored.body["id"]]


def test_a_session_mixes_strings_and_entries(api: ApiClient) -> None:
    # When a session is stored with a string beside an entry written out
    assistant = {"content": {"role": "model", "parts": [{"text": "Pixel is a fine name"}]}, "author": "agent"}
    put = api.request("PUT", f"{ALICE}/sessions/chat-1/memories", {"entries": ["My dog is called Pixel", assistant]})
    # Then both are stored, the string as the user's words
    assert put.body == {"session_id": "chat-1", "stored": 2, "skipped": 0}
    listed = api.request("GET", f"{ALICE}/memories").body["entries"]
    assert sorted((_shape(e) for e in listed), key=str) == sorted([WRITTEN_OUT, assistant], key=str)


@pytest.mark.parametrize("entry", [3, None, ["My dog"], True, {"text": "My dog"}])
def test_any_other_type_is_refused_and_writes_nothing(api: ApiClient, entry: Any) -> None:
    # When an entry is neither a string nor a MemoryEntry, alone or in a session
    one = api.request("POST", f"{ALICE}/memories", {"entry": entry})
    session = api.request("PUT", f"{ALICE}/sessions/chat-1/memories", {"entries": ["fine", entry]})
    # Then both are a 422 in the error envelope, and nothing was stored
    for reply in (one, session):
        assert reply.status == 422, reply.body
        assert reply.body["error"]["code"] == "invalid_input"
        assert reply.body["error"]["request_id"]
    assert api.request("GET", f"{ALICE}/memories").body["entries"] == []
