"""One bounded retry for optimistic writes: read, compute, write on a condition; again if it lost.

A write that loses an optimistic race (a version or revision check, a "must not exist" put) raises
:class:`~agentmem.errors.ConditionFailed`; the attempt reads fresh state and tries again. Under
contention that never settles, the caller gets a 409 instead of a request that never ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from agentmem.errors import ConditionFailed, Conflict

T = TypeVar("T")

MAX_ATTEMPTS = 20
CONTENTION_CODE = "write_contention"


def retry_on_conflict(
    attempt: Callable[[], T],
    *,
    what: str = "the item",
    attempts: int = MAX_ATTEMPTS,
) -> T:
    """``attempt()`` until it returns without raising ConditionFailed, at most ``attempts`` times.

    Raise Conflict (``write_contention``, 409) when every attempt lost its race. Each attempt must read
    the state it writes against afresh (a retry of stale reads can only lose again)."""
    for _ in range(attempts):
        try:
            return attempt()
        except ConditionFailed:
            continue
    raise Conflict(f"{what} is being changed by other requests; retry", code=CONTENTION_CODE)
