"""Hostile input through the API handler, on both tables: bounded keys and costs, no half-written
rejects, no 5xx (issue 10, points 2, 3 and 5).

Every rejected request must answer the same 4xx with the error body of API.md on SQLite and on
DynamoDB, and leave the table exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentmem.container import Container
from agentmem.memory import records
from agentmem.search.inverted_index import MAX_QUERY_TERMS, MAX_TERMS_PER_DOCUMENT, TERMS_PER_REQUEST
from agentmem.stores.table import MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES
from tests.support import ApiClient, Reply, scope_path, stored_keys, text_entry

SCOPE = scope_path("app", "user")
GRAPH = f"{SCOPE}/graph"
HEX_DUMP = "deadbeef" * 256  # one 2 KiB token
CJK_64K = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(64 * 1024 // 3))  # 21,845 characters


def _entry_with_blob(text: str, blob_chars: int) -> dict[str, Any]:
    parts = [{"text": text}, {"inline_data": {"mime_type": "image/png", "data": "A" * blob_chars}}]
    return {"content": {"role": "user", "parts": parts}, "author": "user"}


def _assert_error(reply: Reply, status: int, code: str | None = None) -> None:
    assert reply.status == status, reply.body
    error = reply.body["error"]
    assert error["message"]
    assert error["request_id"]
    assert error["code"]
    if code is not None:
        assert error["code"] == code, error


def _assert_keys_fit(container: Container) -> None:
    for pk, sk in stored_keys(container.table):
        assert len(pk.encode("utf-8")) <= MAX_PARTITION_KEY_BYTES
        assert len(sk.encode("utf-8")) <= MAX_SORT_KEY_BYTES


@pytest.fixture
def unchanged(container: Container) -> Iterator[None]:
    """The test's requests must leave the table exactly as they found it."""
    before = stored_keys(container.table)
    yield
    assert stored_keys(container.table) == before


@pytest.fixture
def query_calls(container: Container, monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Counts the range queries the services send to the real table (a spy: each call goes through)."""
    table = container.table
    calls = [0]
    original = table.query

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(table, "query", counting)
    return lambda: calls[0]


# -- point 2: keys and items within DynamoDB's limits, checked before the first write -------------------


def test_an_overlong_token_is_indexed_by_a_bounded_key_and_still_found(api: ApiClient, container: Container) -> None:
    # Given an entry holding a 2 KiB hex dump (a 2 KiB sort key if indexed as is)
    reply = api.post(f"{SCOPE}/memories", {"entry": text_entry(f"crash dump {HEX_DUMP}")})
    # Then it is stored on both tables, every key within DynamoDB's limits
    assert reply.status == 201, reply.body
    _assert_keys_fit(container)
    # And searching for the same hex dump finds it
    found = api.post(f"{SCOPE}/memories/search", {"query": HEX_DUMP, "mode": "keyword"})
    assert [e["id"] for e in found.body["entries"]] == [reply.body["id"]]
    # But a different long token does not
    other = api.post(f"{SCOPE}/memories/search", {"query": HEX_DUMP + "0", "mode": "keyword"})
    assert other.body["entries"] == []


def test_an_overlong_token_in_an_episode_is_indexed_by_a_bounded_key(api: ApiClient, container: Container) -> None:
    reply = api.post(f"{GRAPH}/episodes", {"session_id": "s1", "entries": [text_entry(f"dump {HEX_DUMP}")]})
    assert reply.status == 200, reply.body
    _assert_keys_fit(container)
    found = api.get(f"{GRAPH}/episodes", query={"q": HEX_DUMP})
    assert [e["text"] for e in found.body["episodes"]] == [f"dump {HEX_DUMP}"]


@pytest.mark.usefixtures("unchanged")
def test_an_entry_too_big_for_one_table_item_is_413_and_writes_nothing(api: ApiClient) -> None:
    # Given a 500 KB inline_data blob beside a little text (only text counted toward 64 KiB before)
    big = _entry_with_blob("look at this", 500_000)
    # Then a single add, and a session whose second entry is the big one, are refused alike
    _assert_error(api.post(f"{SCOPE}/memories", {"entry": big}), 413, "entry_too_large")
    reply = api.put(f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("fine"), big]})
    _assert_error(reply, 413, "entry_too_large")


def test_an_entry_at_the_documented_limits_is_stored_on_both_tables(api: ApiClient, container: Container) -> None:
    # Given 64 KiB of CJK text (the most tokens) and a blob bringing the content near 256 KiB of JSON
    entry = _entry_with_blob(CJK_64K, 250 * 1024 - len(CJK_64K.encode("utf-8")))
    assert 240 * 1024 < len(json.dumps(entry["content"], ensure_ascii=False).encode("utf-8")) <= 256 * 1024
    # Then it is stored (the item fits DynamoDB's 400 KB) and read back unchanged
    reply = api.post(f"{SCOPE}/memories", {"entry": entry})
    assert reply.status == 201, reply.body
    assert api.get(f"{SCOPE}/memories/{reply.body['id']}").body["content"] == entry["content"]
    _assert_keys_fit(container)


@pytest.mark.usefixtures("unchanged")
def test_an_episode_too_big_for_one_table_item_is_413_and_writes_nothing(api: ApiClient) -> None:
    reply = api.post(f"{GRAPH}/episodes", {"session_id": "s1", "entries": [text_entry("z " * 250_000)]})
    _assert_error(reply, 413, "entry_too_large")


@pytest.mark.usefixtures("unchanged")
def test_ids_too_long_once_encoded_are_422_and_write_nothing(api: ApiClient) -> None:
    # Given app, user and project ids of 256 '#' each: valid ids, but 2,308 bytes as a partition key
    scope = scope_path("#" * 256, "#" * 256)
    project = "#" * 256
    # Then every write in that scope is refused before anything is written
    _assert_error(api.post(f"{scope}/memories", {"entry": text_entry("hi"), "project_id": project}), 422, "invalid_id")
    _assert_error(api.put(f"{scope}/sessions/s/memories", {"entries": [text_entry("hi")], "project_id": project}), 422)
    _assert_error(api.post(f"{scope}/graph/entities", {"entities": [{"name": "A"}], "project_id": project}), 422)
    remember = {"entity": "A", "facts": ["x"], "project_id": project}
    _assert_error(api.post(f"{scope}/graph/tools/remember", remember), 422)
    episodes = {"session_id": "s", "entries": [text_entry("hi")], "project_id": project}
    _assert_error(api.post(f"{scope}/graph/episodes", episodes), 422)
    # And reads in it answer the same 422 on both tables
    _assert_error(api.get(f"{scope}/memories", query={"project_id": project}), 422, "invalid_id")


@pytest.mark.usefixtures("unchanged")
def test_the_body_limit_counts_bytes_not_characters(api: ApiClient) -> None:
    # Given a body of 2.1 M CJK characters: 6.3 MB of UTF-8, over the 6 MB limit
    body = json.dumps({"query": "東" * 2_100_000}, ensure_ascii=False)
    assert len(body) < 6 * 1024 * 1024 < len(body.encode("utf-8"))
    _assert_error(api.post(f"{SCOPE}/memories/search", raw_body=body), 413, "payload_too_large")


# -- point 3: token caps ----------------------------------------------------------------------------------


def _postings(container: Container, prefix: str) -> list[tuple[str, str]]:
    return [(pk, sk) for pk, sk in stored_keys(container.table) if sk.startswith(prefix)]


def _entries(container: Container) -> list[dict[str, Any]]:
    return [container.table.get(pk, sk) or {} for pk, sk in _postings(container, records.ENTRY)]


def test_one_entry_is_indexed_under_at_most_1000_tokens(api: ApiClient, container: Container) -> None:
    # Given 64 KiB of CJK text: ~42,000 distinct characters and pairs, "東京" the most frequent pair
    reply = api.post(f"{SCOPE}/memories", {"entry": text_entry(CJK_64K[:21_000] + " 東京 東京 東京")})
    assert reply.status == 201, reply.body
    # Then it is indexed under at most MAX_TERMS_PER_DOCUMENT words, kept on the entry (no posting rows)
    [entry] = _entries(container)
    assert len(records.entry_terms(entry)[0]) == MAX_TERMS_PER_DOCUMENT
    assert _postings(container, "MT#") == []
    # And its most frequent tokens are among them: it is found by them
    found = api.post(f"{SCOPE}/memories/search", {"query": "東京", "mode": "keyword"})
    assert [e["id"] for e in found.body["entries"]] == [reply.body["id"]]


def test_one_write_request_creates_at_most_the_request_budget_of_postings(api: ApiClient, container: Container) -> None:
    # Given a session of 100 entries of 300 distinct words each (30,000 postings uncapped)
    entries = [text_entry(" ".join(f"w{n}x{i}" for i in range(300))) for n in range(100)]
    reply = api.put(f"{SCOPE}/sessions/s1/memories", {"entries": entries})
    assert reply.status == 200, reply.body
    # Then the request indexed at most TERMS_PER_REQUEST words, shared evenly (200 per entry)
    indexed = [len(records.entry_terms(entry)[0]) for entry in _entries(container)]
    assert indexed == [TERMS_PER_REQUEST // 100] * 100
    # And each entry is still found by a word it kept
    found = api.post(f"{SCOPE}/memories/search", {"query": "w7x3", "mode": "keyword"})
    assert len(found.body["entries"]) == 1


def test_a_long_query_reads_at_most_32_token_ranges(
    api: ApiClient, container: Container, query_calls: Callable[[], int]
) -> None:
    # Given one stored entry and a 60 KiB CJK query (~40,000 distinct tokens)
    assert api.post(f"{SCOPE}/memories", {"entry": text_entry("東京 is big")}).status == 201
    before = query_calls()
    reply = api.post(f"{SCOPE}/memories/search", {"query": "東京" + CJK_64K[:20_000], "mode": "keyword"})
    # Then the search answers after at most MAX_QUERY_TERMS range queries, and its first tokens still count
    assert reply.status == 200, reply.body
    assert query_calls() - before <= MAX_QUERY_TERMS
    assert len(reply.body["entries"]) == 1


def test_a_long_graph_search_reads_a_bounded_number_of_ranges(
    api: ApiClient, container: Container, query_calls: Callable[[], int]
) -> None:
    assert api.post(f"{GRAPH}/entities", {"entities": [{"name": "東京", "observations": ["東京 tower"]}]}).status == 200
    before = query_calls()
    reply = api.get(f"{GRAPH}/search", query={"q": "東京" + CJK_64K[:20_000]})
    assert reply.status == 200, reply.body
    # the index is held in process: the version item, the log, the entity it returns (no range per token)
    assert query_calls() - before <= 10
    assert [r["entity"]["name"] for r in reply.body["results"]] == ["東京"]


def test_a_graph_observation_is_indexed_under_at_most_32_tokens(api: ApiClient, container: Container) -> None:
    reply = api.post(f"{GRAPH}/entities", {"entities": [{"name": "Notes", "observations": [CJK_64K]}]})
    assert reply.status == 200, reply.body
    [observation] = [container.table.get(pk, sk) for pk, sk in _postings(container, "GO#")]
    assert observation is not None
    assert len(observation["tokens"]) == 32  # the search index reads these: the first 32 distinct tokens
    _assert_keys_fit(container)


@pytest.mark.usefixtures("unchanged")
def test_more_than_500_observations_in_one_request_is_422_and_writes_nothing(api: ApiClient) -> None:
    entities = [{"name": f"E{i}", "observations": [f"fact {j}" for j in range(100)]} for i in range(6)]
    _assert_error(api.post(f"{GRAPH}/entities", {"entities": entities}), 422, "invalid_input")


def test_a_delete_by_query_with_too_many_words_is_422_and_deletes_nothing(api: ApiClient, container: Container) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    assert api.post(f"{SCOPE}/memories", {"entry": text_entry(words)}).status == 201
    before = stored_keys(container.table)
    _assert_error(api.post(f"{SCOPE}/memories/delete", {"query": words}), 422, "query_too_long")
    assert stored_keys(container.table) == before


# -- point 5: client input that used to be a 500 -----------------------------------------------------------

LONE_SURROGATE_BODIES = [
    ("POST", f"{SCOPE}/memories", '{"entry": {"content": {"parts": [{"text": "hi \\ud800 there"}]}}}'),
    (
        "POST",
        f"{SCOPE}/memories",
        '{"entry": {"content": {"parts": [{"function_call": {"name": "f", "args": {"a": "\\ud800"}}}]}}}',
    ),
    ("POST", f"{SCOPE}/memories", '{"entry": {"content": {"parts": [{"text": "x"}]}, "author": "\\udfff"}}'),
    ("PUT", f"{SCOPE}/sessions/s/memories", '{"entries": [{"content": {"parts": [{"text": "\\ud800"}]}}]}'),
    ("POST", f"{GRAPH}/entities", '{"entities": [{"name": "A", "observations": ["\\ud800"]}]}'),
    ("POST", f"{GRAPH}/episodes", '{"session_id": "s", "entries": [{"content": {"parts": [{"text": "\\ud800"}]}}]}'),
    ("POST", f"{SCOPE}/memories/search", '{"query": "\\ud800 hello"}'),
]


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize(("method", "path", "body"), LONE_SURROGATE_BODIES, ids=range(len(LONE_SURROGATE_BODIES)))
def test_a_lone_surrogate_anywhere_in_the_body_is_400_and_writes_nothing(
    api: ApiClient, method: str, path: str, body: str
) -> None:
    _assert_error(api.request(method, path, raw_body=body), 400, "invalid_unicode")


def _nested(depth: int) -> str:
    args = "[" * depth + "]" * depth
    return '{"entry": {"content": {"parts": [{"function_call": {"name": "f", "args": {"a": ' + args + "}}}]}}}"


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_json_nested_too_deep_is_400_and_writes_nothing(api: ApiClient, depth: int) -> None:
    _assert_error(api.post(f"{SCOPE}/memories", raw_body=_nested(depth)), 400, "json_too_deep")


def test_json_nested_within_the_limit_is_stored(api: ApiClient) -> None:
    reply = api.post(f"{SCOPE}/memories", raw_body=_nested(50))
    assert reply.status == 201, reply.body


OVERFLOWING = ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"]


@pytest.mark.usefixtures("unchanged")
@pytest.mark.parametrize("moment", OVERFLOWING)
def test_timestamps_that_overflow_in_utc_are_422_and_write_nothing(api: ApiClient, moment: str) -> None:
    entry = {**text_entry("hello"), "timestamp": moment}
    _assert_error(api.post(f"{SCOPE}/memories", {"entry": entry}), 422)
    _assert_error(api.put(f"{SCOPE}/sessions/s/memories", {"entries": [entry]}), 422)
    _assert_error(api.post(f"{GRAPH}/episodes", {"session_id": "s", "entries": [entry]}), 422)
    _assert_error(api.get(GRAPH, query={"as_of": moment}), 422, "invalid_timestamp")
    _assert_error(api.get(GRAPH, query={"recorded_as_of": moment}), 422, "invalid_timestamp")


@pytest.mark.parametrize("moment", OVERFLOWING)
def test_graph_valid_times_that_overflow_in_utc_are_422_and_change_nothing(
    api: ApiClient, container: Container, moment: str
) -> None:
    created = api.post(f"{GRAPH}/entities", {"entities": [{"name": "A", "observations": ["likes tea"]}]})
    obs_id = created.body["entities"][0]["observations"][0]["id"]
    before = stored_keys(container.table)
    reply = api.post(f"{GRAPH}/entities/A/observations", {"observations": ["likes coffee"], "valid_from": moment})
    _assert_error(reply, 422)
    _assert_error(api.post(f"{GRAPH}/observations/{obs_id}/invalidate", {"valid_to": moment}), 422)
    assert stored_keys(container.table) == before


def test_a_write_whose_answer_is_too_big_to_keep_for_idempotency_still_succeeds(
    api: ApiClient, container: Container
) -> None:
    # Given an entity and ten 60 KiB facts sent with an Idempotency-Key: a 600 KB answer, over one item
    assert api.post(f"{GRAPH}/entities", {"entities": [{"name": "A"}]}).status == 200
    facts = [f"fact {i} " + "x " * 30_000 for i in range(10)]
    body = {"observations": facts}
    headers = {"Idempotency-Key": "k1"}
    # Then the write answers 200 (not a 4xx after writing), on both tables
    first = api.post(f"{GRAPH}/entities/A/observations", body, headers=headers)
    assert first.status == 200, first.body
    assert len(first.body["observations"]) == 10
    # And a retry runs again without storing any fact twice
    again = api.post(f"{GRAPH}/entities/A/observations", body, headers=headers)
    assert again.status == 200, again.body
    history = api.get(f"{GRAPH}/entities/A/history").body
    assert sorted(o["content"] for o in history["observations"]) == sorted(facts)
