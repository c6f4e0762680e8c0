"""What a launch review asked of the synthesized stacks (issue 37): concurrency partitioned, alarms that reach
someone, safe deploys, throttling and a WAF, erasures that always finish. Both shapes (prod with OpenSearch,
dev table-only) as tests/synthesis.py makes them."""

from __future__ import annotations

from typing import Any

import pytest

from infra.components.compute import (
    API_TIMEOUT_SECONDS,
    GATEWAY_TIMEOUT_SECONDS,
    UNRESERVED_FLOOR,
    Concurrency,
)
from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Handler name (``api``, ``authorizer``, ...) -> the function's properties."""
    return {
        f["Properties"]["Handler"].split(".", 1)[0]: f["Properties"]
        for f in resources(template, "AWS::Lambda::Function").values()
    }


# -- point 3: concurrency ------------------------------------------------------------------------------------


def test_every_function_has_reserved_concurrency_and_both_stages_fit_in_one_account(synthesized: Synthesized) -> None:
    reserved = {}
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        functions = _functions(synthesized.templates[name])
        # Given each stage / Then every function has its own slots (a floor no other can take, and a cap)
        assert all(f.get("ReservedConcurrentExecutions", 0) >= 1 for f in functions.values()), name
        reserved[name] = {fn: f["ReservedConcurrentExecutions"] for fn, f in functions.items()}
    prod, dev = reserved[PROD_OPENSEARCH], reserved[DEV_TABLE]
    # And the authorizer and the indexer keep slots a tenant's slow requests cannot take
    assert prod["authorizer"] >= 50
    assert prod["indexer"] >= 10
    # And the API is capped below what the account has left: both stages fit in one account of the default
    # quota with Lambda's unreserved floor to spare
    assert sum(prod.values()) + sum(dev.values()) <= 1000 - UNRESERVED_FLOOR
    assert prod["api"] == Concurrency.for_stage(True, account=1000, extraction=prod["extraction"]).api
    assert prod["api"] < 1000 - UNRESERVED_FLOOR - (sum(prod.values()) - prod["api"])


def test_the_concurrency_plan_follows_the_account_quota_and_refuses_one_too_small() -> None:
    small = Concurrency.for_stage(True, account=400, extraction=5)
    assert small.api == int(300 * 0.8) - small.reserved_for_others
    with pytest.raises(ValueError, match="account_concurrency"):
        _ = Concurrency.for_stage(True, account=150, extraction=5).api
    from infra.app import deployment_options

    larger = deployment_options({"account_concurrency": "3000"}.get).concurrency  # (dev: a tenth of the account)
    assert larger.api == int(2900 * 0.1) - larger.reserved_for_others
    assert larger.api > deployment_options({}.get).concurrency.api
    with pytest.raises(ValueError, match="account_concurrency"):
        deployment_options({"account_concurrency": "lots"}.get)


def test_the_api_function_ends_before_the_gateway_gives_up(synthesized: Synthesized) -> None:
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        api = _functions(synthesized.templates[name])["api"]
        # Then the function's own timeout leaves the gateway (29 s) a margin for a cold start and the round trips
        assert api["Timeout"] == API_TIMEOUT_SECONDS
        assert GATEWAY_TIMEOUT_SECONDS - api["Timeout"] >= 3
