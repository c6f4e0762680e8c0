"""Lambda entry point of the deletion workflow's steps (one function, dispatching on ``event["step"]``).

The steps live in the core layer (``agentmem.deletion.steps``); the local runner calls the same
``run_step`` with its container's service. The container is built once per execution environment.
"""

from typing import Any

from agentmem.container import get_container
from agentmem.deletion.steps import run_step
from agentmem.observability import logger


def handler(event: dict[str, Any], context: Any = None) -> Any:
    logger.info("deletion step", step=event.get("step"), deletion_id=event.get("deletion_id"))
    return run_step(get_container().deletion, event)


__all__ = ["handler"]
