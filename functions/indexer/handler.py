"""Lambda entry point of the stream indexer: DynamoDB stream of the table -> OpenSearch vector index.

A batch's records are applied together (agentmem/vectors/stream.py): one bulk request per invocation, the
last change of each document winning. A record that cannot be applied, or whose document the index refused,
is reported in ``batchItemFailures`` (the event source mapping enables ``ReportBatchItemFailures``), so
the stream resumes from it; the records after it are sent again with it, harmlessly (every write is
idempotent and they come in order).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord, DynamoDBStreamEvent

from agentmem.container import get_container
from agentmem.errors import Unavailable
from agentmem.keys import scope_of_partition
from agentmem.memory.expiry import apply_ttl_removal, is_ttl_removal
from agentmem.observability import logger
from agentmem.tenancy.metering import Meter, counting, record_meter
from agentmem.vectors.stream import BatchWrites, Document, apply_stream_record, image_to_item


def _apply(record: DynamoDBRecord, writes: BatchWrites, meters: dict[str, Meter]) -> str:
    container = get_container()
    change = record.dynamodb
    if change is None or record.event_name is None:
        return "ignored"
    if record.event_name.name == "REMOVE" and is_ttl_removal(record.user_identity):
        # DynamoDB TTL deleted an expired entry: what points at it goes too (its vector just below).
        apply_ttl_removal(container.memory, image_to_item(change.old_image) if change.old_image else None)
    with counting() as meter:  # an entry stored while the embedder was down is embedded here: metered
        outcome = apply_stream_record(
            record.event_name.name,
            change.keys or {},
            change.new_image or None,
            index=writes,
            table=container.table,
            embedder=container.embedder,
        )
    scope = scope_of_partition(str((change.keys or {}).get("pk", "")))
    if scope is not None and outcome != "ignored":
        meters.setdefault(scope.app, Meter()).add(meter)
    return outcome


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    container = get_container()
    index = container.vector_index
    records = list(DynamoDBStreamEvent(event).records)
    failed: list[str] = []
    touched: dict[str, list[Document]] = {}
    meters: dict[str, Meter] = {}
    try:
        if index is None:
            raise Unavailable("no vector index is configured (MEMORY_EMBEDDER and MEMORY_OPENSEARCH_ENDPOINT)")
        writes = BatchWrites()
        for record in records:
            writes.touched = []
            sequence = _sequence(record)
            try:
                outcome = _apply(record, writes, meters)
            except Exception:
                logger.exception("stream record not applied")
                failed.append(sequence)
                continue
            touched[sequence] = writes.touched
            logger.debug("stream record applied", extra={"outcome": outcome})
        try:
            refused = writes.send(index)
        except Unavailable:
            logger.exception("the batch's writes were not sent")
            refused = {document for documents in touched.values() for document in documents}
        failed += [sequence for sequence, documents in touched.items() if refused.intersection(documents)]
    finally:
        for app, meter in meters.items():
            record_meter(container.table, app, meter)
    in_order = [s for s in dict.fromkeys(_sequence(r) for r in records) if s in set(failed)]
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in in_order]}


def _sequence(record: DynamoDBRecord) -> str:
    return str((record.dynamodb.sequence_number if record.dynamodb else None) or "")
