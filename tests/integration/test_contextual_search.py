"""Context, author and date in search, through the real handler, on SQLite and DynamoDB (moto).

A reply is found by the words of the turn it answers (hybrid), never by keyword search or delete-by-query;
what context adds is stored on the entry and in its postings, counted, and erased with the user.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.keys import UserRef
from agentmem.memory import records
from agentmem.search.context import CONTEXT_TERMS
from agentmem.settings import Settings
from agentmem.stores.table import Table, query_all
from tests.support import ApiClient, inline_deletion_runner, scope_path, text_entry

USER = scope_path("app", "ines")
TURNS = [
    ("Tomas", "Are you still taking the pottery class on Thursdays?"),
    ("Ines", "Yes, and my first bowl came out lopsided."),
    ("Tomas", "Did the sailing dinghy survive the winter?"),
    ("Ines", "It did, we took it out yesterday."),
]


@pytest.fixture
def api(table: Table) -> Iterator[ApiClient]:
    container = Container(Settings(embedder="hashing"), table=table, embedder=HashingEmbedder(256))
    container.__dict__["deletion_runner"] = inline_deletion_runner()
    set_container(container)
    yield ApiClient()
    set_container(None)


def _conversation(api: ApiClient) -> dict[str, str]:
    entries = [text_entry(text, author=who) for who, text in TURNS]
    assert api.put(f"{USER}/sessions/chat/memories", {"entries": entries}).status == 200
    stored = api.get(f"{USER}/memories", query={"limit": 10}).body["entries"]
    return {e["content"]["parts"][0]["text"]: e["id"] for e in stored}


def _found(api: ApiClient, query: str, mode: str) -> list[str]:
    reply = api.post(f"{USER}/memories/search", {"query": query, "mode": mode, "top_k": 10})
    assert reply.status == 200, reply.body
    return [e["content"]["parts"][0]["text"] for e in reply.body["entries"]]


def test_a_reply_is_found_by_the_words_of_the_turn_it_answers_in_hybrid_search_only(api: ApiClient) -> None:
    _conversation(api)
    # "dinghy" is said only by Tomas; Ines's reply holds none of the words
    reply = "It did, we took it out yesterday."
    assert reply in _found(api, "dinghy winter", "hybrid")
    assert reply not in _found(api, "dinghy winter", "keyword")


def test_delete_by_query_reads_an_entrys_own_words_only(api: ApiClient) -> None:
    ids = _conversation(api)
    deleted = api.post(f"{USER}/memories/delete", {"query": "dinghy"})
    assert deleted.body == {"deleted": 1}
    assert api.get(f"{USER}/memories/{ids['It did, we took it out yesterday.']}").status == 200


def test_what_context_adds_is_on_the_entry_and_bounded(api: ApiClient, table: Table) -> None:
    ids = _conversation(api)
    partition = UserRef.of("app", "ines").scope(None).partition
    reply = table.get(partition, records.entry_sk(ids["It did, we took it out yesterday."]))
    assert reply is not None
    assert reply[records.CONTEXT] == [TURNS[1][1], TURNS[2][1]]
    own, around = records.entry_terms(reply)
    assert {"dinghy", "sailing", "survive", "winter"} <= set(own) | set(around)
    assert not set(own) & set(around)  # an entry's own word is never also counted as a context word
    assert len(around) <= CONTEXT_TERMS
    # The first turn answers nobody: no context
    first = table.get(partition, records.entry_sk(ids[TURNS[0][1]]))
    assert first is not None
    assert records.CONTEXT not in first


def test_an_entry_added_alone_to_a_session_takes_its_context_from_the_session(api: ApiClient, table: Table) -> None:
    _conversation(api)
    added = api.post(
        f"{USER}/memories",
        {"entry": text_entry("Only twice, and the water was freezing.", author="Tomas"), "session_id": "chat"},
    )
    assert added.status == 201
    item = table.get(UserRef.of("app", "ines").scope(None).partition, records.entry_sk(added.body["id"]))
    assert item is not None
    assert item[records.CONTEXT] == [TURNS[2][1], TURNS[3][1]]
    assert "Only twice, and the water was freezing." in _found(api, "sailing dinghy", "hybrid")


def test_the_person_and_the_date_a_query_names_come_first(api: ApiClient) -> None:
    entries = [
        text_entry("I painted a sunset last weekend", author="Ines", timestamp="2023-05-08T10:00:00Z"),
        text_entry("I painted a sunset last weekend", author="Tomas", timestamp="2023-01-08T10:00:00Z"),
    ]
    assert api.put(f"{USER}/sessions/art/memories", {"entries": entries}).status == 200
    by_author = api.post(f"{USER}/memories/search", {"query": "What did Tomas paint?"}).body["entries"]
    assert by_author[0]["author"] == "Tomas"
    by_date = api.post(f"{USER}/memories/search", {"query": "What was painted in May 2023?"}).body["entries"]
    assert by_date[0]["author"] == "Ines"


def test_erasure_removes_the_context_and_its_postings(api: ApiClient, table: Table) -> None:
    _conversation(api)
    erased = api.delete(USER)
    assert erased.status == 202
    partition = UserRef.of("app", "ines").scope(None).partition
    assert query_all(table, partition, "") == []
