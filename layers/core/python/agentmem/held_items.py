"""The table items a request's answer holds (the memory entries it stored, the graph entities, facts and
relations it wrote or shows), noted by the services as they write them.

The idempotency middleware (api/middlewares.py) collects them around a request with an
``Idempotency-Key`` and keeps their keys with the recorded answer: a retry is replayed only while every
one of them still exists (agentmem/idempotency.py). Outside a collection :func:`note` does nothing.
Standard library only, so that any layer may import it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

HeldKeys = dict[tuple[str, str], None]
"""The (pk, sk) keys noted, in the order first noted (a dict used as an ordered set)."""

_COLLECTING: ContextVar[HeldKeys | None] = ContextVar("agentmem_held_items", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[HeldKeys]:
    """Collect what :func:`note` is given within the block (in this thread or task) into the yielded keys."""
    held: HeldKeys = {}
    token = _COLLECTING.set(held)
    try:
        yield held
    finally:
        _COLLECTING.reset(token)


def note(keys: Iterable[tuple[str, str]]) -> None:
    """The answer being built holds the items of ``keys`` (pk, sk): a replay of it needs them all."""
    held = _COLLECTING.get()
    if held is not None:
        held.update(dict.fromkeys(keys))
