"""Every accepted erasure ends SUCCEEDED: a failed or timed-out execution is re-driven as a new attempt.

The workflow retries each step through throttling, transient Lambda errors and timeouts; what still fails ends
the execution FAILED (or TIMED_OUT, at the state machine's timeout). Step Functions reports that to EventBridge
("Step Functions Execution Status Change"), whose rule invokes the redrive function (functions/redrive) with
the event: :func:`redrive` starts the next attempt with a backoff the workflow's first state waits
(:data:`REDRIVE_DELAYS`: six re-drives over about 17 hours), unless the erasure has finished or was superseded
meanwhile (its request no longer names the user). Past the last re-drive it gives up, loudly: the
``ErasuresGivenUp`` metric (an alarm) and the operator's ``agentmem erasures list`` / ``retry``, which
:func:`failed_erasures` and :func:`retry` answer.

Every step is idempotent, so an attempt finishes whatever the ones before it left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmem.deletion import records
from agentmem.deletion.runners import Attempt, StepFunctionsRunner
from agentmem.observability import MetricUnit, logger, metrics
from agentmem.stores.table import Table

REDRIVE_DELAYS = (15, 120, 900, 3600, 4 * 3600, 12 * 3600)
"""Seconds the n-th re-drive waits before marking the user again: soon after a failure that outlived the steps'
own retries (minutes of them), then further apart, for an outage of hours."""
ENDED_BADLY = ("FAILED", "TIMED_OUT", "ABORTED")
ERASURES_GIVEN_UP = "ErasuresGivenUp"


@dataclass(frozen=True)
class Execution:
    """One attempt's execution, as its status-change event or DescribeExecution tells it."""

    deletion_id: str
    app: str
    attempt: int
    redrive: int
    status: str
    stopped_at: str | None = None
    error: str | None = None

    @classmethod
    def of(cls, execution: Mapping[str, Any]) -> Execution:
        """From an event's ``detail`` or a DescribeExecution answer (both carry ``status`` and ``input``)."""
        given = json.loads(execution.get("input") or "{}")
        stopped = execution.get("stopDate")
        return cls(
            deletion_id=str(given["deletion_id"]),
            app=str(given["app"]),
            attempt=int(given.get("attempt", 0)),
            redrive=int(given.get("redrive", 0)),
            status=str(execution.get("status")),
            stopped_at=str(stopped) if stopped is not None else None,
            error=execution.get("error"),
        )


def unfinished(table: Table, app: str, deletion_id: str) -> bool:
    """Whether the erasure still has work: its request still names the user (its last step forgets it, and a
    request superseded by a newer one loses it)."""
    request = table.get(*records.request_key(app, deletion_id))
    return request is not None and bool(request.get(records.USER_ID))


def redrive(
    event: Mapping[str, Any],
    *,
    table: Table,
    runner: StepFunctionsRunner,
    delays: tuple[int, ...] = REDRIVE_DELAYS,
) -> str:
    """Answer one status-change event: ``redriven``, ``finished`` (nothing left to do), ``gave_up`` or
    ``ignored`` (not a failure). EventBridge delivers an event at least once: the attempt's name makes a
    second delivery start nothing."""
    ended = Execution.of(event["detail"])
    if ended.status not in ("FAILED", "TIMED_OUT"):
        return "ignored"
    if not unfinished(table, ended.app, ended.deletion_id):
        return "finished"
    if ended.redrive >= len(delays):
        logger.error("erasure given up", deletion_id=ended.deletion_id, attempt=ended.attempt, status=ended.status)
        metrics.add_metric(name=ERASURES_GIVEN_UP, unit=MetricUnit.Count, value=1)
        metrics.flush_metrics()
        return "gave_up"
    delay = delays[ended.redrive]
    runner.start(ended.deletion_id, ended.app, Attempt(ended.attempt + 1, ended.redrive + 1, delay))
    logger.warning("erasure re-driven", deletion_id=ended.deletion_id, attempt=ended.attempt + 1, delay=delay)
    return "redriven"


def latest_attempts(runner: StepFunctionsRunner) -> dict[str, Execution]:
    """Per erasure, its latest attempt among the state machine's executions (every status)."""
    latest: dict[str, Execution] = {}
    for execution in (Execution.of(described) for described in runner.executions()):
        current = latest.get(execution.deletion_id)
        if current is None or execution.attempt > current.attempt:
            latest[execution.deletion_id] = execution
    return latest


def failed_erasures(runner: StepFunctionsRunner, table: Table) -> list[Execution]:
    """The erasures whose latest attempt failed, timed out or was aborted and which still have work: what no
    re-drive is running for (given up, or a re-drive that never came)."""
    return sorted(
        (
            execution
            for execution in latest_attempts(runner).values()
            if execution.status in ENDED_BADLY and unfinished(table, execution.app, execution.deletion_id)
        ),
        key=lambda e: e.stopped_at or "",
    )


def retry(runner: StepFunctionsRunner, table: Table, deletion_id: str) -> Execution:
    """The operator's retry of a failed erasure: its next attempt now, with the automatic re-drives counted from
    0 again. ``ValueError`` when it is running or has nothing left to do."""
    latest = latest_attempts(runner).get(deletion_id)
    if latest is None:
        raise ValueError(f"no execution of erasure {deletion_id}")
    if latest.status not in ENDED_BADLY:
        raise ValueError(f"erasure {deletion_id} is {latest.status} (attempt {latest.attempt}): nothing to retry")
    if not unfinished(table, latest.app, deletion_id):
        raise ValueError(f"erasure {deletion_id} has finished or was superseded: nothing to retry")
    runner.start(deletion_id, latest.app, Attempt(latest.attempt + 1, 0, 0))
    return Execution(deletion_id, latest.app, latest.attempt + 1, 0, "RUNNING")
