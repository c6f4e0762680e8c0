"""The stream indexer (functions/indexer/handler.py) with a DynamoDB stream event, on the real OpenSearch node;
`agentmem create-index` and `agentmem reindex`."""

from __future__ import annotations

import base64
import copy
import json
import struct
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.codec import MODEL_ATTR, PENDING_ATTR, VECTOR_ATTR
from agentmem.keys import Scope, UserRef
from agentmem.local.events import LocalContext
from agentmem.models.memory import MemoryEntry
from agentmem.settings import Settings
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.tenancy.metering import USAGE_SK_PREFIX, read_usage
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from tests.opensearch_node import OpenSearchNode, on_node
from tests.support import load_event, stream_image

ALICE = UserRef("demo-app", "alice")


@pytest.fixture
def cloud(
    sqlite_table: SqliteTable, opensearch_node: OpenSearchNode, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Container]:
    from agentmem import cli

    settings = Settings(**on_node(opensearch_node.url, 384))
    container = Container(settings, table=sqlite_table)
    index = container.vector_index
    assert isinstance(index, OpenSearchVectorIndex)
    # The index is created by the command a deployment runs once
    with monkeypatch.context() as patched:
        patched.setattr("agentmem.container.get_container", lambda: container)
        patched.setattr("agentmem.container.set_container", lambda _: None)
        assert cli.main(["create-index"]) == 0
    mapping = index.client.indices.get_mapping(index=index.index)[index.index]["mappings"]["properties"]
    assert mapping["vector"]["dimension"] == 384
    assert mapping["vector"]["method"]["engine"] == "lucene"
    set_container(container)
    yield container
    set_container(None)
    index.client.indices.delete(index=index.index)


def _entry_ids(container: Container) -> set[str]:
    index = container.vector_index
    assert isinstance(index, OpenSearchVectorIndex)
    response = index.client.search(index=index.index, body={"size": 100, "query": {"match_all": {}}})
    return {hit["_source"]["entry_id"] for hit in response["hits"]["hits"]}


def _handler():  # type: ignore[no-untyped-def]
    from functions.indexer.handler import handler

    return handler


def test_stream_event_upserts_and_deletes_entries_only(cloud: Container) -> None:
    # Given the sample stream: two entry inserts, a posting insert, an insert then remove of a third entry
    event = load_event("dynamodb_stream.json")
    # When the indexer handles it
    result = _handler()(event, LocalContext())
    # Then no record failed, the two live entries are indexed and the removed one is gone
    assert result == {"batchItemFailures": []}
    assert _entry_ids(cloud) == {"01JXAAAAAAAAAAAAAAAAAAAAA1", "01JXAAAAAAAAAAAAAAAAAAAAA2"}
    assert cloud.vector_index.count_user(ALICE) == 2  # type: ignore[union-attr]
    # And redelivering the same batch changes nothing (idempotent)
    assert _handler()(event, LocalContext()) == {"batchItemFailures": []}
    assert cloud.vector_index.count_user(ALICE) == 2  # type: ignore[union-attr]


def test_a_failing_record_is_reported_alone(cloud: Container) -> None:
    # Given a batch whose second record carries a vector the index cannot take (not float32 bytes)
    event = load_event("dynamodb_stream.json")
    broken = copy.deepcopy(event["Records"][1])
    broken["dynamodb"]["NewImage"]["vector"] = {"B": "not base64!"}
    broken["dynamodb"]["SequenceNumber"] = "000000000000000000099"
    event["Records"] = [event["Records"][0], broken]
    # When handled
    result = _handler()(event, LocalContext())
    # Then only that record is returned for retry, and the good one is indexed
    assert result == {"batchItemFailures": [{"itemIdentifier": "000000000000000000099"}]}
    assert _entry_ids(cloud) == {"01JXAAAAAAAAAAAAAAAAAAAAA1"}


def _counting_bulks(container: Container, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The actions of each bulk request the index sends (the real client's bulk, counted)."""
    index = container.vector_index
    assert isinstance(index, OpenSearchVectorIndex)
    sent: list[int] = []
    bulk = index.client.bulk

    def counted(*args: Any, **kwargs: Any) -> Any:
        sent.append(sum(1 for line in kwargs["body"] if {"index", "delete"} & line.keys()))
        return bulk(*args, **kwargs)

    monkeypatch.setattr(index.client, "bulk", counted)
    return sent


def test_a_batch_is_sent_in_one_bulk_request_with_the_last_change_of_each_entry(
    cloud: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the sample batch (two entries inserted, a third inserted then removed) and the same again
    event = load_event("dynamodb_stream.json")
    sent = _counting_bulks(cloud, monkeypatch)
    # When the indexer handles it
    assert _handler()(event, LocalContext()) == {"batchItemFailures": []}
    # Then one bulk request carried the batch: the two upserts and the third entry's removal only
    assert sent == [3]
    assert _entry_ids(cloud) == {"01JXAAAAAAAAAAAAAAAAAAAAA1", "01JXAAAAAAAAAAAAAAAAAAAAA2"}
    # And a batch that removes an entry and then writes it again leaves it indexed, in one request
    removed_then_written = copy.deepcopy([event["Records"][4], event["Records"][3]])
    for number, record in enumerate(removed_then_written, start=6):
        record["dynamodb"]["SequenceNumber"] = f"{number:021d}"
    assert _handler()({"Records": removed_then_written}, LocalContext()) == {"batchItemFailures": []}
    assert sent == [3, 1]
    assert "01JXAAAAAAAAAAAAAAAAAAAAA3" in _entry_ids(cloud)


def test_an_entry_the_index_refuses_is_reported_alone_and_the_rest_is_indexed(
    cloud: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a batch whose second entry has a vector of another dimension than the index's (384)
    event = load_event("dynamodb_stream.json")
    refused = copy.deepcopy(event["Records"][1])
    refused["dynamodb"]["NewImage"]["vector"] = {"B": base64.b64encode(struct.pack("<8f", *[0.5] * 8)).decode()}
    refused["dynamodb"]["SequenceNumber"] = "000000000000000000099"
    event["Records"] = [event["Records"][0], refused]
    sent = _counting_bulks(cloud, monkeypatch)
    # When handled
    result = _handler()(event, LocalContext())
    # Then the index refused that document in the batch's one request, and only its record is retried
    assert sent == [2]
    assert result == {"batchItemFailures": [{"itemIdentifier": "000000000000000000099"}]}
    assert _entry_ids(cloud) == {"01JXAAAAAAAAAAAAAAAAAAAAA1"}


def test_pending_entries_are_embedded_by_the_indexer_and_metered_once_a_batch(
    cloud: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given three entries stored while the embedder was down (no vector, marked pending)
    scope = Scope("demo-app", "alice")
    embedder = cloud.embedder
    cloud.memory.embedder = None  # write without embedding, as if it were down
    stored = [
        cloud.memory.add_entry(
            scope,
            MemoryEntry.model_validate({"content": {"parts": [{"text": text}]}, "timestamp": datetime.now(UTC)}),
        )
        for text in ("pick up the dry cleaning", "call the dentist", "book the flight to Lisbon")
    ]
    cloud.memory.embedder = embedder
    records = []
    for number, entry in enumerate(stored, start=1):
        item = cloud.table.get(scope.partition, "E#" + entry.id)
        assert item is not None
        assert VECTOR_ATTR not in item
        item[PENDING_ATTR] = True
        cloud.table.put(item)
        records.append(
            {
                "eventID": str(number),
                "eventName": "INSERT",
                "eventSource": "aws:dynamodb",
                "dynamodb": {
                    "Keys": {"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}},
                    "NewImage": stream_image(item),
                    "SequenceNumber": str(number),
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
            }
        )
    usage_writes: list[str] = []
    increment = cloud.table.increment

    def counted_increment(pk: str, sk: str, deltas: Any, condition: Any = None) -> Any:
        if sk.startswith(USAGE_SK_PREFIX):
            usage_writes.append(pk)
        return increment(pk, sk, deltas, condition)

    monkeypatch.setattr(cloud.table, "increment", counted_increment)
    # When the indexer sees their stream records in one batch
    assert _handler()({"Records": records}, LocalContext()) == {"batchItemFailures": []}
    # Then each entry now carries its vector in the table and is in the index
    for entry in stored:
        item = cloud.table.get(scope.partition, "E#" + entry.id)
        assert item is not None
        assert isinstance(item[VECTOR_ATTR], bytes)
        assert item[MODEL_ATTR] == "hashing-v1-384"
        assert PENDING_ATTR not in item
    assert {entry.id for entry in stored} <= _entry_ids(cloud)
    # And the three embeddings are metered to the entries' app, in one write of its usage for the batch
    [today] = read_usage(cloud.table, "demo-app")
    assert today.embeddings == 3
    assert len(usage_writes) == 1


def test_reindex_command_rebuilds_one_user_and_everything(cloud: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmem import cli

    # Given entries of two users written through the service (which also upserts them)
    for user, text in (("alice", "tea with lemon"), ("bob", "coffee, black")):
        cloud.memory.add_entry(
            Scope("demo-app", user, "p"),
            MemoryEntry.model_validate({"content": {"parts": [{"text": text}]}}),
        )
    index = cloud.vector_index
    assert isinstance(index, OpenSearchVectorIndex)
    # And the index lost everything
    index.delete_user(UserRef("demo-app", "alice"))
    index.delete_user(UserRef("demo-app", "bob"))
    monkeypatch.setattr("agentmem.container.get_container", lambda: cloud)
    monkeypatch.setattr("agentmem.container.set_container", lambda _: None)
    # When one user is reindexed from the table
    assert cli.main(["reindex", "--app", "demo-app", "--user", "alice"]) == 0
    assert index.count_user(UserRef("demo-app", "alice")) == 1
    assert index.count_user(UserRef("demo-app", "bob")) == 0
    # When everything is reindexed
    assert cli.main(["reindex"]) == 0
    assert index.count_user(UserRef("demo-app", "bob")) == 1
    assert index.count_user(UserRef("demo-app", "alice")) == 1
    # And create-index on an existing index is a no-op that succeeds
    assert cli.main(["create-index"]) == 0


def test_sample_event_file_is_valid_json_with_entry_vectors() -> None:
    event = load_event("dynamodb_stream.json")
    names = [r["eventName"] for r in event["Records"]]
    assert names == ["INSERT", "INSERT", "INSERT", "INSERT", "REMOVE"]
    assert all("Keys" in r["dynamodb"] for r in event["Records"])
    json.dumps(event)
