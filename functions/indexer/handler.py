"""Lambda entry point of the stream indexer: DynamoDB stream of the table -> OpenSearch vector index.

Powertools batch processing reports each failed record in ``batchItemFailures`` (the event source
mapping must enable ``ReportBatchItemFailures``), so one bad record is retried alone and never blocks
or replays the rest of its batch.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from agentmem.container import get_container
from agentmem.errors import Unavailable
from agentmem.keys import scope_of_partition
from agentmem.memory.expiry import apply_ttl_removal, is_ttl_removal
from agentmem.observability import logger
from agentmem.tenancy.metering import Meter, counting, record_meter
from agentmem.vectors.stream import apply_stream_record, image_to_item

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
_batch_meters: dict[str, Meter] = {}
"""What the current batch's records stored and embedded, per app: recorded once per app per batch."""


def record_handler(record: DynamoDBRecord) -> str:
    container = get_container()
    index = container.vector_index
    if index is None:
        raise Unavailable("no vector index is configured (MEMORY_EMBEDDER and MEMORY_OPENSEARCH_ENDPOINT)")
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
            index=index,
            table=container.table,
            embedder=container.embedder,
        )
    scope = scope_of_partition(str((change.keys or {}).get("pk", "")))
    if scope is not None and outcome != "ignored":
        _batch_meters.setdefault(scope.app, Meter()).add(meter)
    logger.debug("stream record applied", extra={"outcome": outcome})
    return outcome


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    _batch_meters.clear()
    try:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        table = get_container().table
        for app, meter in _batch_meters.items():
            record_meter(table, app, meter)
        _batch_meters.clear()
