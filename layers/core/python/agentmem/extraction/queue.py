"""The cloud's :class:`~agentmem.extraction.runner.Waker`: an SQS message, delayed until the session should be
looked at again, which the extraction function receives like a pending row's stream record."""

from __future__ import annotations

import json
import math
import time
from typing import Any

MAX_DELAY_SECONDS = 900
"""SQS delays a message 15 minutes at most; a later moment is reached by waking early and asking again."""


class SqsWaker:
    def __init__(self, queue_url: str, *, region_name: str | None = None, client: Any = None) -> None:
        self._queue_url = queue_url
        self._region_name = region_name
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("sqs", region_name=self._region_name)
        return self._client

    def wake(self, partition: str, session: str, at_ms: int) -> None:
        delay = max(0, min(MAX_DELAY_SECONDS, math.ceil((at_ms - time.time() * 1000) / 1000)))
        self.client.send_message(
            QueueUrl=self._queue_url,
            MessageBody=json.dumps({"partition": partition, "session": session, "at_ms": at_ms}),
            DelaySeconds=delay,
        )


def wake_of(body: str) -> tuple[str, str] | None:
    """The session an SQS message brings back (None for a body this service did not send)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    partition, session = message.get("partition"), message.get("session")
    return (partition, session) if isinstance(partition, str) and isinstance(session, str) else None
