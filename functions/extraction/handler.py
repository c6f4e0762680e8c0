"""Lambda entry point of extraction (docs/extraction.md): the table's stream of pending rows, and the SQS queue
of sessions to look at again, each becoming a step of :class:`~agentmem.extraction.runner.Steps`.

The stream's event source mapping lets only pending rows through (a filter on the ``XP#`` sort keys), in
batches; a session named several times in one batch gets one step. A record whose step fails is reported in
``batchItemFailures`` (the mappings enable ``ReportBatchItemFailures``) and comes back; every step is safe to
repeat (agentmem/extraction/work.py).
"""

from __future__ import annotations

from typing import Any

from agentmem.container import get_container
from agentmem.extraction.queue import wake_of
from agentmem.extraction.work import PENDING
from agentmem.keys import unescape
from agentmem.observability import logger


def _session_of(record: dict[str, Any]) -> tuple[str, str] | None:
    """(partition, session) of a stream record of a pending row, or of an SQS wake; None for anything else."""
    if record.get("eventSource") == "aws:sqs":
        return wake_of(str(record.get("body") or ""))
    if record.get("eventSource") != "aws:dynamodb" or record.get("eventName") == "REMOVE":
        return None
    keys = (record.get("dynamodb") or {}).get("Keys") or {}
    pk, sk = (keys.get("pk") or {}).get("S"), (keys.get("sk") or {}).get("S")
    if not isinstance(pk, str) or not isinstance(sk, str) or not sk.startswith(PENDING):
        return None
    return pk, unescape(sk[len(PENDING) :])


def _identifier(record: dict[str, Any]) -> str:
    if record.get("eventSource") == "aws:sqs":
        return str(record.get("messageId") or "")
    return str((record.get("dynamodb") or {}).get("SequenceNumber") or "")


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    steps = get_container().extraction_steps
    sessions: dict[tuple[str, str], list[str]] = {}
    for record in event.get("Records") or []:
        session = _session_of(record)
        if session is not None:
            sessions.setdefault(session, []).append(_identifier(record))
    failures: list[dict[str, str]] = []
    for (partition, session), identifiers in sessions.items():
        try:
            outcome = steps.run(partition, session)
        except Exception as error:  # retried by the mapping; every step is safe to repeat
            logger.exception("extraction step failed", extra={"error": type(error).__name__})
            failures += [{"itemIdentifier": i} for i in identifiers]
            continue
        logger.info("extraction step", extra={"state": outcome.state, "records": outcome.records})
    return {"batchItemFailures": failures}
