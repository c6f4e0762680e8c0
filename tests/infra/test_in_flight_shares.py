"""No tenant's load takes another tenant's capacity (issue 41), in the synthesized stacks (dev and prod): each
tenant's requests in flight are bounded to a stated share of the API function's reserved concurrency."""

from __future__ import annotations

from typing import Any

from agentmem.settings import Env
from agentmem.tenancy.admission import MIN_IN_FLIGHT, TierLimits
from agentmem.tenancy.keys import TIERS
from infra.components.throttling import IN_FLIGHT_SHARES, PLAN_TIERS
from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources


def _api(template: dict[str, Any]) -> dict[str, Any]:
    (api,) = [
        f["Properties"]
        for f in resources(template, "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].startswith("api.")
    ]
    return api


def test_no_tenant_can_hold_more_than_its_tiers_share_of_the_api(synthesized: Synthesized) -> None:
    assert set(IN_FLIGHT_SHARES) == set(TIERS) == {tier.name for tier in PLAN_TIERS}
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        api = _api(synthesized.templates[name])
        reserved = api["ReservedConcurrentExecutions"]
        # Given the API function as deployed: its reservation and the in-flight limits its environment names
        limits = TierLimits.parse(api["Environment"]["Variables"][Env.IN_FLIGHT_LIMITS])
        assert limits is not None, name
        assert set(limits.per_tier) == set(TIERS), name
        for tier, share in IN_FLIGHT_SHARES.items():
            # Then a tenant of each tier holds at most twice its window's limit (that window's requests and the
            # previous one's): never more than its share (or the few requests any tenant may always have), however
            # many requests a second its plan lets through
            most = 2 * limits.per_tier[tier]
            assert 2 * MIN_IN_FLIGHT <= most <= max(2 * MIN_IN_FLIGHT, share * reserved), (name, tier, most, reserved)
        # And one tenant of the top tier alone leaves at least three quarters of the API to everyone else
        assert 2 * limits.per_tier["scale"] <= reserved // 4, name
        # And a standard key at its plan's rate of 25-second requests (the review's 500 slots) is bounded far below
        assert 2 * limits.per_tier["standard"] < 20 * 25, name


def test_each_tenant_has_a_share_of_the_models_every_tenant_shares(synthesized: Synthesized) -> None:
    from infra.components.throttling import (
        EMBEDDING_REQUESTS_PER_MINUTE,
        EXTRACTION_APP_SHARE,
        EXTRACTION_TOKENS_PER_MINUTE,
    )

    for name in (PROD_OPENSEARCH, DEV_TABLE):
        variables = _api(synthesized.templates[name])["Environment"]["Variables"]
        # Given the API as deployed / Then each tier's embedding calls a minute are its share of the quota
        shares = TierLimits.parse(variables[Env.EMBEDDING_SHARES], Env.EMBEDDING_SHARES)
        assert shares is not None
        for tier, share in IN_FLIGHT_SHARES.items():
            assert 1 <= shares.per_tier[tier] <= share * EMBEDDING_REQUESTS_PER_MINUTE, (name, tier)
        # And one scale tenant alone leaves at least three quarters of the model's requests to the others
        assert shares.per_tier["scale"] <= EMBEDDING_REQUESTS_PER_MINUTE // 4
    # And the extraction function (prod learns) lets one app take at most its share of the model's tokens a minute
    (extraction,) = [
        f["Properties"]
        for f in resources(synthesized.templates[PROD_OPENSEARCH], "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].startswith("extraction.")
    ]
    per_app = int(extraction["Environment"]["Variables"][Env.EXTRACTION_TOKENS_PER_MINUTE])
    assert 1 <= per_app <= EXTRACTION_TOKENS_PER_MINUTE * EXTRACTION_APP_SHARE
