"""Lambda entry point of the erasure re-drive: an EventBridge rule sends it the status change of every execution
of the deletion workflow that failed or timed out (infra/components/workflow.py), and it starts the next attempt
with a backoff unless the erasure has finished meanwhile (``agentmem.deletion.redrive``).
"""

from __future__ import annotations

from typing import Any

from agentmem.container import get_container
from agentmem.deletion.redrive import redrive
from agentmem.deletion.runners import StepFunctionsRunner
from agentmem.observability import logger


def handler(event: dict[str, Any], context: Any = None) -> dict[str, str]:
    container = get_container()
    runner = container.deletion_runner
    if not isinstance(runner, StepFunctionsRunner):
        raise RuntimeError("the redrive function needs MEMORY_DELETION_STATE_MACHINE_ARN")
    outcome = redrive(event, table=container.table, runner=runner)
    logger.info("erasure status change", outcome=outcome, status=(event.get("detail") or {}).get("status"))
    return {"outcome": outcome}


__all__ = ["handler"]
