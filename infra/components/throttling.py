"""How much each tenant, route and client may ask of the API: plan tiers, the stage's limit, route limits.

- **Plan tiers**: a tenant's API key belongs to the usage plan of its tier (``agentmem keys create
  --usage-plan-id``, the ``UsagePlanId<Tier>`` outputs): a per-key rate, burst and daily quota.
- **The stage's limit** is sized from the tenants the stage is sized for and their plans (``-c tenants=
  starter:50,standard:20,scale:2``): every tenant at its plan's rate at once fits, so a busy tenant meets its own
  plan's 429s, never the stage's; capped at API Gateway's account limit in a Region (10,000 requests a second,
  burst 5,000).
- **Route limits**: heavy routes (export, erasure, store batches, session uploads, extraction on demand) and the
  public routes (health, capabilities, the OpenAPI document, the console's files) have method limits of their
  own, below the stage's, so neither a flood of anonymous calls nor one tenant's bulk work takes the stage's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from infra.components.routes import CONSOLE_ROUTES, GRAPH, PUBLIC_ROUTES, SCOPE

ACCOUNT_RATE_LIMIT = 10_000
ACCOUNT_BURST_LIMIT = 5_000
"""API Gateway's default throttle for all the REST APIs of an account in a Region (a quota AWS can raise)."""


@dataclass(frozen=True)
class PlanTier:
    name: str
    rate_limit: int
    """Requests a second, per key."""
    burst_limit: int
    requests_per_day: int


PLAN_TIERS = (
    PlanTier("starter", rate_limit=5, burst_limit=10, requests_per_day=10_000),
    PlanTier("standard", rate_limit=20, burst_limit=40, requests_per_day=100_000),
    PlanTier("scale", rate_limit=100, burst_limit=200, requests_per_day=2_000_000),
)
DEFAULT_TIER = "standard"
"""The tier of the ``UsagePlanId`` output (the plan keys were created in before tiers existed)."""
TENANTS = {
    "prod": {"starter": 50, "standard": 20, "scale": 2},
    "dev": {"starter": 5, "standard": 2, "scale": 0},
}
"""How many tenants of each tier a stage is sized for, unless ``-c tenants=`` says."""


@dataclass(frozen=True)
class RouteLimit:
    rate_limit: int
    burst_limit: int


HEAVY_ROUTES: dict[tuple[str, str], RouteLimit] = {
    ("GET", SCOPE + "/export"): RouteLimit(10, 20),
    ("DELETE", SCOPE): RouteLimit(5, 10),
    ("POST", "/v1/apps/{app}/store/batch"): RouteLimit(50, 100),
    ("PUT", SCOPE + "/sessions/{session}/memories"): RouteLimit(50, 100),
    ("POST", SCOPE + "/sessions/{session}/extract"): RouteLimit(10, 20),
    ("GET", GRAPH): RouteLimit(20, 40),
}
"""Routes that read or write much per call (an export reads a page of up to 1,000 items, an erasure starts a
workflow, a batch holds up to 100 operations, a session upload up to 6 MB, extraction calls a model)."""
PUBLIC_LIMIT = RouteLimit(10, 20)
"""Each public route (and each of the console's): enough for health checks and people, not for a flood."""


def route_limits() -> dict[tuple[str, str], RouteLimit]:
    return {**HEAVY_ROUTES, **dict.fromkeys(PUBLIC_ROUTES + CONSOLE_ROUTES, PUBLIC_LIMIT)}


@dataclass(frozen=True)
class StageLimit:
    rate_limit: int
    burst_limit: int


def stage_limit(tenants: Mapping[str, int]) -> StageLimit:
    """Every tenant at its plan's rate and burst at once, within the account's limits."""
    tiers = {tier.name: tier for tier in PLAN_TIERS}
    unknown = set(tenants) - set(tiers)
    if unknown:
        raise ValueError(f"context tenants: no such plan tier {sorted(unknown)} (tiers: {sorted(tiers)})")
    rate = sum(tiers[name].rate_limit * count for name, count in tenants.items())
    burst = sum(tiers[name].burst_limit * count for name, count in tenants.items())
    if rate < 1:
        raise ValueError("context tenants: the stage is sized for no tenant at all")
    return StageLimit(min(rate, ACCOUNT_RATE_LIMIT), min(max(burst, rate), ACCOUNT_BURST_LIMIT))


def parse_tenants(value: object, stage: str) -> dict[str, int]:
    """``starter:50,standard:20,scale:2`` (a context string) or a mapping (cdk.json); unset: the stage's default."""
    if value in (None, ""):
        return dict(TENANTS.get(stage, TENANTS["dev"]))
    if isinstance(value, Mapping):
        return {str(k): int(v) for k, v in value.items()}
    counts: dict[str, int] = {}
    for part in str(value).split(","):
        name, _, count = part.strip().partition(":")
        if not count.strip().isdigit():
            raise ValueError(f"context tenants: {part.strip()!r} is not <tier>:<number of tenants>")
        counts[name.strip()] = int(count)
    return counts
