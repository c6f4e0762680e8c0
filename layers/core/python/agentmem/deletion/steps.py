"""The deletion workflow's steps behind one entry point, dispatching on ``event["step"]``.

``functions/deletion/handler.py`` (the Lambda handler) and the local runner both call :func:`run_step`
with their container's service, so a step runs one code path wherever the workflow runs; this module
knows nothing of the container (it imports downwards only). Errors are
raised, never returned: Step Functions sees the exception's class name (``RateLimited``,
``Unavailable``...) as the error name it retries on or catches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentmem.deletion.service import DeletionService
from agentmem.errors import InvalidInput
from agentmem.keys import UserRef, validate_id, validate_project

Step = Callable[[DeletionService, UserRef, str, dict[str, Any]], Any]

STEPS: dict[str, Step] = {
    "mark": lambda s, u, d, e: s.mark(u, d),
    "list_scopes": lambda s, u, d, e: s.list_scopes(u, _optional_str(e.get("after"))),
    "delete_scope_batch": lambda s, u, d, e: s.delete_scope_batch(u.scope(validate_project(e.get("project_id"))), d),
    "delete_user_items_batch": lambda s, u, d, e: s.delete_user_items_batch(u, d),
    "delete_vectors": lambda s, u, d, e: s.delete_vectors(u, d),
    "verify": lambda s, u, d, e: s.verify(u, d),
    "write_receipt": lambda s, u, d, e: s.write_receipt(u, d),
    "clear_mark": lambda s, u, d, e: s.clear_mark(u, d),
    "record_failure": lambda s, u, d, e: s.record_failure(u, d, str(e.get("error")), str(e.get("cause"))),
}


def _optional_str(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidInput("after must be a string or null", code="invalid_step_input")


def run_step(service: DeletionService, event: dict[str, Any]) -> Any:
    """Run one step. The event names the erasure (``app``, ``deletion_id``), and the user is read from
    its request, so the workflow's input and history hold no user id (an event of an execution started
    by an older version names the user: it is used as given)."""
    step = event.get("step")
    if not isinstance(step, str) or step not in STEPS:
        raise InvalidInput(f"unknown deletion step {step!r}", code="unknown_step")
    deletion_id = validate_id(event.get("deletion_id"), "deletion_id")
    if "user" in event:
        user: UserRef | None = UserRef.of(event.get("app"), event.get("user"))
    else:
        user = service.user_of(validate_id(event.get("app"), "app"), deletion_id)
    if user is None:
        if step == "clear_mark":  # run again after it finished (a retried invocation): nothing is left to do
            return {"more": False}
        raise InvalidInput("this erasure has finished or was superseded", code="deletion_finished")
    result = STEPS[step](service, user, deletion_id, event)
    return {} if result is None else result
