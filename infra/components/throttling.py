"""How much each tenant, route and client may ask of the API: plan tiers, the stage's limit, route limits.

- **Plan tiers**: a tenant's API key belongs to the usage plan of its tier (``agentmem keys create
  --usage-plan-id``, the ``UsagePlanId<Tier>`` outputs): a per-key rate, burst and daily quota.
- **The stage's limit** is sized from the tenants the stage is sized for and their plans (``-c tenants=
  starter:50,standard:20,scale:2``): every tenant at its plan's rate at once fits, so a busy tenant meets its own
  plan's 429s, never the stage's; capped at API Gateway's account limit in a Region (10,000 requests a second,
  burst 5,000).
- **Route limits per key**: each heavy route (export, erasure, store batches, session uploads, extraction on
  demand, the whole graph) has a limit in every usage plan's per-method throttles, so it holds per key: the
  top tier gets ``HEAVY_ROUTES``, a lower tier those scaled by its rate over the top tier's, never below 1 a
  second (``key_route_limits``). One starter tenant at its plan's rate cannot take a route's stage bucket.
- **Route limits per stage** (``stage_route_limits``): each heavy route's method limit on the stage is an
  aggregate ceiling, every sized-for tenant at its per-key route limit at once (and at least two top-tier keys'
  worth), capped at the stage's limit (itself capped at the account's). The public routes (health,
  capabilities, the OpenAPI document, the console's files) carry no key, so no usage plan sees them: they keep a
  small stage limit of their own (``PUBLIC_LIMIT``), which every anonymous client shares. In prod the WAF's
  per-address rule (infra/components/firewall.py) bounds what one anonymous client can send; in dev (no WAF)
  one client can fill that bucket, and only the public routes suffer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agentmem.tenancy.admission import TierLimits, shared_out
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
IN_FLIGHT_SHARES = {"starter": 0.05, "standard": 0.10, "scale": 0.25}
"""The most of the API function's reserved concurrency one tenant of each tier may hold at once, whatever it
sends (agentmem/tenancy/admission.py counts each tenant's requests in flight; the API function's
MEMORY_IN_FLIGHT_LIMITS). A usage plan bounds a key's requests a second, not how long they run: a standard key at
20 a second of 25-second requests would hold 500 slots. The shares overlap on purpose (tenants are rarely all
busy at once); what they promise is that one tenant alone leaves at least three quarters of the API to the
others, and two scale tenants half."""
EMBEDDING_REQUESTS_PER_MINUTE = 2_000
"""The Bedrock quota the stack shares out for the embedding model (Titan Text Embeddings V2, throttled by requests a
minute, one quota per account and Region). An assumption, not read from the account: set it to your account's
value in Service Quotas (Amazon Bedrock, on-demand InvokeModel requests per minute for the model)."""
EXTRACTION_TOKENS_PER_MINUTE = 200_000
"""Likewise, the extraction model's tokens a minute (Nova Micro through the us. inference profile): an assumption
to set from Service Quotas (cross-Region InvokeModel tokens per minute for the model)."""
EXTRACTION_APP_SHARE = 0.10
"""Of the extraction model's tokens a minute, what one app may take (extraction runs outside a tenant's request,
where its plan is not known: every app the standard tier's share)."""


def embedding_shares() -> TierLimits:
    """Each tier's embedding calls a minute (MEMORY_EMBEDDING_SHARES): its share of the quota, as its requests in
    flight are of the API."""
    return shared_out(EMBEDDING_REQUESTS_PER_MINUTE, IN_FLIGHT_SHARES)


def extraction_tokens_per_app() -> int:
    return int(EXTRACTION_TOKENS_PER_MINUTE * EXTRACTION_APP_SHARE)


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
workflow, a batch holds up to 100 operations, a session upload up to 6 MB, extraction calls a model), and what
one key of the top tier may send to each (lower tiers: ``key_route_limits``)."""
PUBLIC_LIMIT = RouteLimit(10, 20)
"""Each public route (and each of the console's): enough for health checks and people, not for a flood."""


def tier_named(name: str) -> PlanTier:
    for tier in PLAN_TIERS:
        if tier.name == name:
            return tier
    raise ValueError(f"no such plan tier {name!r} (tiers: {[tier.name for tier in PLAN_TIERS]})")


def key_route_limits(tier: PlanTier) -> dict[tuple[str, str], RouteLimit]:
    """Each heavy route's limit for one key of ``tier`` (its usage plan's per-method throttle): ``HEAVY_ROUTES``
    scaled by the tier's rate over the top tier's, at least 1 a second, the burst at least the rate."""
    top = max(t.rate_limit for t in PLAN_TIERS)
    factor = tier.rate_limit / top
    limits = {}
    for route, limit in HEAVY_ROUTES.items():
        rate = min(tier.rate_limit, max(1, int(limit.rate_limit * factor)))
        limits[route] = RouteLimit(rate, max(rate, int(limit.burst_limit * factor)))
    return limits


def stage_route_limits(tenants: Mapping[str, int]) -> dict[tuple[str, str], RouteLimit]:
    """The stage's method limits: for a heavy route, every sized-for tenant at its per-key limit at once (so the
    stage's bucket is a ceiling for them all, never the limit one tenant meets), capped at the stage's limit;
    for a public or console route, ``PUBLIC_LIMIT``."""
    stage = stage_limit(tenants)
    per_key = {name: key_route_limits(tier_named(name)) for name in tenants}
    limits = {}
    for route, top in HEAVY_ROUTES.items():
        rate = sum(per_key[name][route].rate_limit * count for name, count in tenants.items())
        burst = sum(per_key[name][route].burst_limit * count for name, count in tenants.items())
        # At least two top-tier keys' worth, so that no one key of any tier fills it (a stage sized for no
        # scale tenant, as dev, may still hold one scale key)
        rate, burst = max(rate, 2 * top.rate_limit), max(burst, 2 * top.burst_limit)
        limits[route] = RouteLimit(min(rate, stage.rate_limit), min(burst, stage.burst_limit))
    return {**limits, **dict.fromkeys(PUBLIC_ROUTES + CONSOLE_ROUTES, PUBLIC_LIMIT)}


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
