"""Many tenants, one stack (issue 41): what the synthesized templates do so that no tenant's load becomes another
tenant's outage. Both shapes (prod with OpenSearch and a WAF, dev table-only) as tests/synthesis.py makes them."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources

STAGES = ((PROD_OPENSEARCH, "prod"), (DEV_TABLE, "dev"))


def _stage_settings(template: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, path) -> the stage's method setting (``*`` / ``/*`` for the stage's default)."""
    (stage,) = resources(template, "AWS::ApiGateway::Stage").values()
    return {
        (
            m["HttpMethod"],
            m["ResourcePath"] if m["ResourcePath"] == "/*" else m["ResourcePath"][1:].replace("~1", "/"),
        ): m
        for m in stage["Properties"]["MethodSettings"]
    }


def _plans(template: dict[str, Any], stage_name: str) -> dict[str, dict[str, Any]]:
    """Tier name -> its usage plan's properties."""
    prefix = f"agent-memory-{stage_name}-"
    return {
        p["Properties"]["UsagePlanName"].removeprefix(prefix): p["Properties"]
        for p in resources(template, "AWS::ApiGateway::UsagePlan").values()
    }


# -- point 2: route limits per key ---------------------------------------------------------------------------


def test_every_plan_limits_each_heavy_route_per_key_sized_to_its_tier(synthesized: Synthesized) -> None:
    from infra.components.throttling import HEAVY_ROUTES, PLAN_TIERS, key_route_limits

    top = max(PLAN_TIERS, key=lambda t: t.rate_limit)
    for stack, stage_name in STAGES:
        plans = _plans(synthesized.templates[stack], stage_name)
        for tier in PLAN_TIERS:
            (api_stage,) = plans[tier.name]["ApiStages"]
            throttles = {
                (key.rsplit("/", 1)[1], key.rsplit("/", 1)[0]): value for key, value in api_stage["Throttle"].items()
            }
            # Given each plan / Then every heavy route has a per-method throttle of its own (per key of the plan)
            assert set(throttles) == set(HEAVY_ROUTES), (stack, tier.name)
            for route, limit in key_route_limits(tier).items():
                assert throttles[route] == {"RateLimit": limit.rate_limit, "BurstLimit": limit.burst_limit}
                # And it is the top tier's route limit scaled by the tier's rate, at least 1 a second, within the plan
                expected = max(1, int(HEAVY_ROUTES[route].rate_limit * tier.rate_limit / top.rate_limit))
                assert limit.rate_limit == min(expected, tier.rate_limit)
                assert 1 <= limit.rate_limit <= limit.burst_limit
    starter = key_route_limits(next(t for t in PLAN_TIERS if t.name == "starter"))
    scale = key_route_limits(top)
    assert all(starter[route].rate_limit <= scale[route].rate_limit for route in HEAVY_ROUTES)
    assert any(starter[route].rate_limit < scale[route].rate_limit for route in HEAVY_ROUTES)


def test_the_stage_route_buckets_hold_every_sized_for_tenant_and_one_starter_cannot_take_them(
    synthesized: Synthesized,
) -> None:
    from infra.components.routes import SCOPE
    from infra.components.throttling import HEAVY_ROUTES, PLAN_TIERS, TENANTS, key_route_limits, stage_limit

    for stack, stage_name in STAGES:
        template = synthesized.templates[stack]
        settings = _stage_settings(template)
        stage = settings[("*", "/*")]
        tenants = TENANTS[stage_name]
        cap = stage_limit(tenants)
        assert stage["ThrottlingRateLimit"] == cap.rate_limit
        for route in HEAVY_ROUTES:
            bucket = settings[route]
            # Given every tenant the stage is sized for at its per-key limit of the route at once
            wanted = sum(key_route_limits(t)[route].rate_limit * tenants.get(t.name, 0) for t in PLAN_TIERS)
            # Then the stage's bucket holds them all (and two top-tier keys), or is the stage's own limit (the cap)
            floor = max(wanted, 2 * HEAVY_ROUTES[route].rate_limit)
            assert bucket["ThrottlingRateLimit"] == min(floor, cap.rate_limit), (stack, route)
            assert bucket["ThrottlingRateLimit"] >= min(wanted, cap.rate_limit)
        # And one starter tenant at its own limit of DELETE {scope} (an erasure) cannot take the stage's bucket
        plans = _plans(template, stage_name)
        (api_stage,) = plans["starter"]["ApiStages"]
        starter_delete = api_stage["Throttle"][f"{SCOPE}/DELETE"]
        assert starter_delete["RateLimit"] < settings[("DELETE", SCOPE)]["ThrottlingRateLimit"]
        assert starter_delete["BurstLimit"] < settings[("DELETE", SCOPE)]["ThrottlingBurstLimit"]
        # Nor does a scale tenant fill session uploads
        (scale_stage,) = plans["scale"]["ApiStages"]
        uploads = (SCOPE + "/sessions/{session}/memories", "PUT")
        assert (
            scale_stage["Throttle"]["/".join(uploads)]["RateLimit"]
            < settings[(uploads[1], uploads[0])]["ThrottlingRateLimit"]
        )


# -- point 3: each tier's rate at the edge -------------------------------------------------------------------


def test_the_plan_tiers_are_the_tiers_keys_name() -> None:
    from agentmem.tenancy import keys
    from infra.components import throttling

    assert tuple(tier.name for tier in throttling.PLAN_TIERS) == keys.TIERS
    assert throttling.DEFAULT_TIER == keys.DEFAULT_TIER
