"""A query naming a date finds what was said about that date, not only what was said around it.

Entries that tell of a day ("last year", "hace dos meses", "两年前", "منذ ثلاثة أشهر") are stored with the
periods they tell of, resolved against the day they were said; hybrid search ranks them by those periods
as by their timestamp. Over the REST handler on SQLite and DynamoDB (the table's own index) and on the
real OpenSearch node (its k-NN and keyword hits carry the periods). Every entry below was said in June
2023, so by its timestamp none is near the dates the queries name.
"""

from __future__ import annotations

import uuid

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from agentmem.vectors.opensearch_queries import index_body
from tests.opensearch_node import TEST_DIMENSION, OpenSearchNode, on_node
from tests.support import ApiClient, scope_path, text_entry

PATH = scope_path("app", "alice")
SAID = {
    "last year": ("Last year I ran my first marathon in Lisbon", "2023-06-05T09:00:00Z"),
    "no date": ("I ran a half marathon in Porto, my best race", "2023-06-06T09:00:00Z"),
    "next month": ("Next month I will run a marathon in Madrid", "2023-06-07T09:00:00Z"),
    "two months ago": ("Hace dos meses corrí una maratón en Sevilla", "2023-06-08T09:00:00Z"),
    "two years ago": ("两年前我在北京跑了马拉松", "2023-06-09T09:00:00Z"),
    "three months ago": ("منذ ثلاثة أشهر ركضت ماراثون في دبي", "2023-06-10T09:00:00Z"),
}
ASKED = {
    "Which marathon did I run in 2022?": "last year",
    "What marathon is planned for July 2023?": "next month",
    "¿Qué maratón corrí en abril de 2023?": "two months ago",
    "2021年我跑了哪个马拉松?": "two years ago",
    "أي ماراثون ركضت يوم 2023-03-15؟": "three months ago",
}


def _finds_what_was_told_of_the_date(api: ApiClient) -> None:
    ids = {}
    for name, (text, said) in SAID.items():
        reply = api.post(f"{PATH}/memories", {"entry": text_entry(text, timestamp=said)})
        assert reply.status == 201, reply.body
        ids[reply.body["id"]] = name
    for query, expected in ASKED.items():
        reply = api.post(f"{PATH}/memories/search", {"query": query, "mode": "hybrid", "top_k": 3})
        assert reply.status == 200, reply.body
        assert "degraded" not in reply.body
        first = reply.body["entries"][0]
        assert ids[first["id"]] == expected, (query, [ids[e["id"]] for e in reply.body["entries"]])
        assert "told" not in first  # what an entry tells of is the index's, not part of the entry


def test_a_dated_query_finds_what_was_told_of_that_date_on_the_table(api_on_table: ApiClient) -> None:
    _finds_what_was_told_of_the_date(api_on_table)


def test_a_dated_query_finds_what_was_told_of_that_date_on_opensearch(api_on_opensearch: ApiClient) -> None:
    _finds_what_was_told_of_the_date(api_on_opensearch)


def test_an_index_created_before_told_takes_writes_without_it_until_create_index_adds_it(
    opensearch_node: OpenSearchNode, table: Table
) -> None:
    # Given an index whose strict mapping predates the told field (as a deployment upgraded in place)
    name = f"vectors-{uuid.uuid4().hex[:12]}"
    before = index_body(TEST_DIMENSION, engine="lucene")
    del before["mappings"]["properties"]["told"]
    legacy = OpenSearchVectorIndex(opensearch_node.url, index=name, engine="lucene")
    legacy.client.indices.create(index=name, body=before)
    try:
        set_container(Container(Settings(**on_node(opensearch_node.url, TEST_DIMENSION, name)), table=table))
        api = ApiClient()
        text, said = SAID["last year"]
        # When an entry that tells of a date is written, Then it is stored and indexed (without its told periods)
        reply = api.post(f"{PATH}/memories", {"entry": text_entry(text, timestamp=said)})
        assert reply.status == 201, reply.body
        assert "indexing" not in reply.body
        first = reply.body["id"]
        found = api.post(f"{PATH}/memories/search", {"query": "marathon in Lisbon", "mode": "hybrid"})
        assert [e["id"] for e in found.body["entries"]] == [first]
        # When `agentmem create-index` runs on it, Then the mapping gains the field and new documents hold it
        assert legacy.create_index(TEST_DIMENSION) is False
        set_container(Container(Settings(**on_node(opensearch_node.url, TEST_DIMENSION, name)), table=table))
        text, said = SAID["next month"]
        reply = api.post(f"{PATH}/memories", {"entry": text_entry(text, timestamp=said)})
        assert reply.status == 201, reply.body
        documents = legacy.client.search(index=name, body={"query": {"match_all": {}}})["hits"]["hits"]
        told = {d["_source"]["entry_id"]: d["_source"].get("told") for d in documents}
        assert told == {first: None, reply.body["id"]: "2023-07-01/2023-07-31"}
    finally:
        set_container(None)
        legacy.client.indices.delete(index=name)


def test_reading_dates_is_bounded_per_entry_and_per_request(
    api: ApiClient, container: Container, monkeypatch: object
) -> None:
    """Issue 33, point 8: a 6 MB session of "3 days ago" repeated read every character for dates (27 s, a
    503 the clients retried). Now an entry's beginning is read, and a request reads at most its share."""
    import pytest

    from agentmem.search import told

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    read: list[int] = []
    resolve = told.told_periods

    def counted(text: str, said_on: object) -> list[object]:
        read.append(len(text))
        return resolve(text, said_on)  # type: ignore[arg-type]

    monkeypatch.setattr(told, "told_periods", counted)
    # Given a session of 500 entries of 12 KB of relative dates (6 MB)
    text = "I saw her 3 days ago. " * 560
    entries = [text_entry(text, timestamp="2023-06-05T09:00:00Z") for _ in range(500)]
    reply = api.put(f"{PATH}/sessions/dates/memories", {"entries": entries})
    # Then it is stored, every entry read from its beginning only, the request within its share
    assert reply.status == 200, reply.body
    assert reply.body["stored"] == 500
    assert max(read) <= told.ENTRY_CHARS
    assert sum(read) <= told.REQUEST_CHARS
    # And the entries read within the request's share keep the day they tell of; the rest keep none
    from agentmem.keys import Scope
    from agentmem.memory import records

    items = container.table.query(Scope("app", "alice").partition, records.ENTRY).items
    told_days = [item.get(records.TOLD) for item in items]
    assert told_days.count("2023-06-02/2023-06-02") == told.REQUEST_CHARS // told.ENTRY_CHARS
    assert len(items) == 500
