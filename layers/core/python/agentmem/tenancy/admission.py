"""What one tenant may take of what every tenant shares (issue 41, points 1 and 5): the API's requests in flight,
and each minute's calls of a model the account has one quota of.

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

A model's quota (Bedrock's requests a minute for the embedding model, tokens a minute for the extraction model)
is one per account and Region: :class:`ModelShare` counts each app's use per minute (``SHARE#<model>#<minute>``)
and refuses, before the call, what would take its tier past its share of it: one tenant's burst meets its own 429
(or, for extraction, waits for the next minute), never everyone's throttling.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from agentmem.embeddings.port import Embedder, embed_query, embedder_health
from agentmem.errors import MemoryServiceError, ModelShareUsed, TooManyInFlight
from agentmem.keys import tenant_partition
from agentmem.observability import logger
from agentmem.stores.table import Table

WINDOW_SECONDS = 30
"""Longer than the API function's timeout (25 s): a request lives in its window and the next at most."""
IN_FLIGHT_SK_PREFIX = "FLIGHT#"
SHARE_SK_PREFIX = "SHARE#"
MINUTE_SECONDS = 60
KEPT_SECONDS = 600
"""How long a window's item is kept (its TTL): long after every request it counted has ended."""
EXTRACTION_TIER = "app"
"""The one "tier" of extraction's share: every app gets the same share of the model's tokens a minute (extraction
runs outside a tenant's request, where its plan is not known)."""
_tenant: ContextVar[tuple[str, str] | None] = ContextVar("agentmem_tenant", default=None)


def current_tenant() -> tuple[str, str] | None:
    """(app, tier) of the request being served (within :meth:`Admission.admitted`), or None."""
    return _tenant.get()


@dataclass(frozen=True, slots=True)
class TierLimits:
    """A limit per plan tier (requests in flight per window, model calls or tokens per minute)."""

    per_tier: Mapping[str, int]

    def of(self, tier: str) -> int | None:
        return self.per_tier.get(tier)

    def to_setting(self) -> str:
        return ",".join(f"{tier}:{limit}" for tier, limit in self.per_tier.items())

    @classmethod
    def parse(cls, text: str, setting: str = "MEMORY_IN_FLIGHT_LIMITS") -> TierLimits | None:
        """``starter:15,standard:31,scale:77`` (``setting``'s value); None when empty. ValueError when malformed:
        a deployment that names limits must get them."""
        if not text.strip():
            return None
        limits: dict[str, int] = {}
        for part in text.split(","):
            tier, _, value = part.strip().partition(":")
            if not tier or not value.strip().isdigit() or int(value) < 1:
                raise ValueError(f"{setting}: {part.strip()!r} is not <tier>:<a whole number, at least 1>")
            limits[tier] = int(value)
        return cls(limits)


def shared_out(total: int, shares: Mapping[str, float], *, least: int = 1) -> TierLimits:
    """Each tier's limit: its share of ``total``, at least ``least``."""
    return TierLimits({tier: max(least, math.floor(total * share)) for tier, share in shares.items()})


MIN_IN_FLIGHT = 4
"""A tenant may always have this many requests in flight (a small stage's share would leave a developer's few
parallel calls refused): in prod every tier's share is above it."""


def in_flight_limits(api_concurrency: int, shares: Mapping[str, float]) -> TierLimits:
    """Each tier's limit per window from the share of the API's reserved concurrency a tenant of that tier may
    hold at most: half of it (a tenant's requests of the previous window may still run), at least
    :data:`MIN_IN_FLIGHT`."""
    return shared_out(api_concurrency, {tier: share / 2 for tier, share in shares.items()}, least=MIN_IN_FLIGHT)


class Admission:
    def __init__(self, table: Table, limits: TierLimits | None, *, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self._limits = limits
        self._clock = clock

    @contextlib.contextmanager
    def admitted(self, app: str, tier: str) -> Iterator[None]:
        """Within, one of ``app``'s requests is in flight; TooManyInFlight (nothing counted) when its tier's
        limit is reached. A tier without a limit is not counted. Within, :func:`current_tenant` names it."""
        token = _tenant.set((app, tier))
        try:
            with self._counted(app, tier):
                yield
        finally:
            _tenant.reset(token)

    @contextlib.contextmanager
    def _counted(self, app: str, tier: str) -> Iterator[None]:
        limit = self._limits.of(tier) if self._limits is not None else None
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


class ModelShare:
    """Each app's calls (or tokens) of one model per minute, within its tier's share of the account's quota."""

    def __init__(self, table: Table, model: str, limits: TierLimits, *, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self.model = model
        self._limits = limits
        self._clock = clock

    def _key(self, app: str, minute: int) -> tuple[str, str]:
        return tenant_partition(app), f"{SHARE_SK_PREFIX}{self.model}#{minute}"

    def take(self, app: str, tier: str, units: int) -> None:
        """Count ``units`` of this minute for ``app``; ModelShareUsed (nothing counted) when its tier's share of
        the minute was used up before them. A call is let through while the share is not used up, however large
        (a session of more texts than the share still gets in, in a minute of its own): an app uses at most its
        share and one call more a minute. A tier without a limit is not counted."""
        limit = self._limits.of(tier)
        if limit is None or units <= 0:
            return
        key, used = self._count(app, units)
        if used - units >= limit:
            self._table.increment(*key, {"used": -units})
            raise ModelShareUsed(
                f"this app's share of {self.model} this minute ({limit}) is used up; retry in "
                f"{self.seconds_to_next_minute():.0f} s"
            )

    def add(self, app: str, units: int) -> None:
        """Count ``units`` already spent (a model's answer says how many tokens it took)."""
        if units > 0:
            self._count(app, units)

    def _count(self, app: str, units: int) -> tuple[tuple[str, str], int]:
        """Add ``units`` to this minute's count of ``app``: the item's key and the minute's count after."""
        now = self._clock()
        key = self._key(app, int(now // MINUTE_SECONDS))
        counted = self._table.increment(*key, {"used": units}, expires_at=int(now) + KEPT_SECONDS)
        return key, int(counted.get("used") or 0)

    def spent(self, app: str, tier: str) -> str:
        """Why ``app`` may not call the model again this minute ("" when it may)."""
        limit = self._limits.of(tier)
        if limit is None:
            return ""
        item = self._table.get(*self._key(app, int(self._clock() // MINUTE_SECONDS)))
        used = int((item or {}).get("used") or 0)
        return f"this app's share of {self.model} this minute ({limit}) is used up ({used})" if used >= limit else ""

    def seconds_to_next_minute(self) -> float:
        return MINUTE_SECONDS - self._clock() % MINUTE_SECONDS


class SharedEmbedder:
    """An embedder whose calls the current tenant (:func:`current_tenant`) pays from its share of the model's
    requests a minute (Bedrock throttles an embedding model by requests, one per text); outside a tenant's
    request (the stream indexer) a call is not counted."""

    def __init__(self, inner: Embedder, share: ModelShare) -> None:
        self.inner = inner
        self.share = share

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def _take(self, calls: int) -> None:
        tenant = current_tenant()
        if tenant is not None:
            self.share.take(*tenant, calls)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self._take(len(texts))
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> list[float]:
        self._take(1)
        return embed_query(self.inner, text)

    def health(self) -> str:
        return embedder_health(self.inner)
