"""How many of the API's requests one tenant may have in flight at once (issue 41, point 1).

Usage plans limit a key's requests per second, not its requests in flight: a tenant at its plan's rate of
25-second requests would hold hundreds of the API function's reserved slots, and every other tenant would meet
Lambda's throttling. So each request of a tenant (an app) is counted in flight while it runs, and one that would
take its tenant past the tier's limit is answered 429 ``too_many_in_flight`` at once, before any work.

The count lives in the table, so that every execution environment sees it: one item per app and window of
:data:`WINDOW_SECONDS` (``T#<app>`` / ``FLIGHT#<window>``), which a request adds 1 to as it begins and takes 1
from as it ends (two small writes: nothing is read). The window is longer than the API function's timeout, so a
request begun in an earlier window than the previous one has ended; a request whose process died (a timeout)
leaves its 1 in a window nobody counts a minute later, and the item expires. A request is refused when its own
window's count passes the limit: with those of the previous window still running, a tenant holds at most twice
its limit (:func:`in_flight_limits` halves each tier's share for it). Two requests passing the limit at the same
moment are both refused (each takes its 1 back): the count errs towards refusing, never past the share.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from agentmem.errors import MemoryServiceError, RateLimited
from agentmem.keys import tenant_partition
from agentmem.observability import logger
from agentmem.stores.table import Table

WINDOW_SECONDS = 30
"""Longer than the API function's timeout (25 s): a request lives in its window and the next at most."""
IN_FLIGHT_SK_PREFIX = "FLIGHT#"
KEPT_SECONDS = 600
"""How long a window's item is kept (its TTL): long after every request it counted has ended."""


class TooManyInFlight(RateLimited):
    code = "too_many_in_flight"


@dataclass(frozen=True, slots=True)
class InFlightLimits:
    """Requests in flight per tenant of each plan tier (what one window may count)."""

    per_tier: Mapping[str, int]

    def of(self, tier: str) -> int | None:
        return self.per_tier.get(tier)

    def to_setting(self) -> str:
        return ",".join(f"{tier}:{limit}" for tier, limit in self.per_tier.items())

    @classmethod
    def parse(cls, text: str) -> InFlightLimits | None:
        """``starter:15,standard:31,scale:77`` (MEMORY_IN_FLIGHT_LIMITS); None when empty. ValueError when
        malformed: a deployment that names limits must get them."""
        if not text.strip():
            return None
        limits: dict[str, int] = {}
        for part in text.split(","):
            tier, _, value = part.strip().partition(":")
            if not tier or not value.strip().isdigit() or int(value) < 1:
                raise ValueError(f"MEMORY_IN_FLIGHT_LIMITS: {part.strip()!r} is not <tier>:<requests, at least 1>")
            limits[tier] = int(value)
        return cls(limits)


def in_flight_limits(api_concurrency: int, shares: Mapping[str, float]) -> InFlightLimits:
    """Each tier's limit per window from the share of the API's reserved concurrency a tenant of that tier may
    hold at most: half of it (a tenant's requests of the previous window may still run), at least 1."""
    return InFlightLimits({tier: max(1, math.floor(api_concurrency * share / 2)) for tier, share in shares.items()})


class Admission:
    def __init__(self, table: Table, limits: InFlightLimits, *, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self._limits = limits
        self._clock = clock

    @contextlib.contextmanager
    def admitted(self, app: str, tier: str) -> Iterator[None]:
        """Within, one of ``app``'s requests is in flight; TooManyInFlight (nothing counted) when its tier's
        limit is reached. A tier without a limit is not counted."""
        limit = self._limits.of(tier)
        if limit is None:
            yield
            return
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        key = (tenant_partition(app), f"{IN_FLIGHT_SK_PREFIX}{window}")
        counted = self._table.increment(*key, {"in_flight": 1}, expires_at=int(now) + KEPT_SECONDS)
        if int(counted.get("in_flight") or 0) > limit:
            self._table.increment(*key, {"in_flight": -1})
            raise TooManyInFlight(
                f"this app has {limit} requests in flight, as many as its plan allows at once; retry when one "
                "has been answered"
            )
        try:
            yield
        finally:
            try:
                self._table.increment(*key, {"in_flight": -1})
            except MemoryServiceError:  # the answer stands; the window's count is forgotten a minute later
                logger.warning("in-flight count not released", app=app)
