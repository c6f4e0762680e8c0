"""Lambda entry point of the snapshot writer (agentmem/search/snapshots.py): the queue the API asks on when
a process had to read a user's partition whole, or catch up far past its snapshot.

Each message names one partition; a partition named several times in a batch is written once. The writer
starts from the last snapshot and catches up from the change log (or reads the partition whole), so it
reads about what the asking process read; a partition whose snapshot is recent enough is left alone. A
message whose write fails is reported in ``batchItemFailures`` and comes back; writing again is harmless.
"""

from __future__ import annotations

from typing import Any

from agentmem.container import get_container
from agentmem.keys import scope_of_partition
from agentmem.observability import logger


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    snapshotter = get_container().snapshotter
    asked: dict[str, list[str]] = {}
    for record in event.get("Records") or []:
        partition = str(record.get("body") or "")
        if scope_of_partition(partition) is None:  # not a scope partition: nothing to snapshot
            continue
        asked.setdefault(partition, []).append(str(record.get("messageId") or ""))
    failures: list[dict[str, str]] = []
    for partition, identifiers in asked.items():
        try:
            outcome = snapshotter.refresh(partition)
        except Exception as error:  # retried by the mapping; a snapshot is written whole or not at all
            logger.exception("snapshot not written", extra={"error": type(error).__name__})
            failures += [{"itemIdentifier": i} for i in identifiers]
            continue
        logger.info("snapshot", extra={"outcome": outcome})
    return {"batchItemFailures": failures}
