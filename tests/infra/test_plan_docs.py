"""docs/deploy.md's table of the plans' limits is the code's (issue 43, point 8g): each tier's usage plan
(infra/components/throttling.py PLAN_TIERS), its share of the API's requests in flight, its heavy routes' limits
per key and the tenants each stage is sized for by default; and the `-c tenants=` format it documents parses."""

from __future__ import annotations

import re

import pytest

from infra.components.routes import SCOPE
from infra.components.throttling import (
    HEAVY_ROUTES,
    IN_FLIGHT_SHARES,
    PLAN_TIERS,
    TENANTS,
    key_route_limits,
    parse_tenants,
    stage_limit,
)
from tests.conftest import REPO_ROOT
from tests.support import make_plan

DEPLOY = REPO_ROOT / "docs" / "deploy.md"
SHOWN_ROUTES = [("GET", SCOPE + "/export"), ("DELETE", SCOPE), ("PUT", SCOPE + "/sessions/{session}/memories")]


def plans_table() -> str:
    rows = [
        "| plan (`--tier`) | requests a second per key (burst) | requests a day per tenant | requests in flight, "
        "of the API function's reservation | a second per key: export / erasure / session upload | tenants a stage "
        "is sized for by default: prod / dev |",
        "|---|---|---|---|---|---|",
    ]
    for tier in PLAN_TIERS:
        routes = key_route_limits(tier)
        heavy = " / ".join(str(routes[route].rate_limit) for route in SHOWN_ROUTES)
        sized = f"{TENANTS['prod'][tier.name]} / {TENANTS['dev'][tier.name]}"
        rows.append(
            f"| {tier.name} | {tier.rate_limit:,} ({tier.burst_limit:,}) | {tier.requests_per_day:,} | "
            f"{IN_FLIGHT_SHARES[tier.name]:.0%} | {heavy} | {sized} |"
        )
    return "\n".join(rows)


def test_the_docs_table_of_the_plans_is_the_codes() -> None:
    assert set(SHOWN_ROUTES) <= set(HEAVY_ROUTES)
    text = DEPLOY.read_text()
    shown = re.search(r"<!-- plan-limits -->\n(.*?)\n<!-- /plan-limits -->", text, re.S)
    assert shown is not None, "docs/deploy.md has no <!-- plan-limits --> table"
    assert shown.group(1) == plans_table()


def test_the_documented_tenants_format_parses_and_sizes_the_stage() -> None:
    # Given the example the docs give
    text = DEPLOY.read_text()
    (example,) = set(re.findall(r"TENANTS=([\w:,]+)", text))
    # Then it parses to tenants per tier, sizes the stage from them, and make passes it to synth and deploy
    counts = parse_tenants(example, "prod")
    assert set(counts) <= {tier.name for tier in PLAN_TIERS}
    tiers = {tier.name: tier for tier in PLAN_TIERS}
    assert stage_limit(counts).rate_limit == sum(tiers[name].rate_limit * n for name, n in counts.items())
    assert f"-c tenants={example}" in make_plan("-o", ".venv/.infra", "-o", "layer", "deploy", f"TENANTS={example}")
    assert f'"tenants":"{example}"' in make_plan("-o", ".venv/.infra", "synth", f"TENANTS={example}")
    # And unset, each stage is sized for its default (the table's last column)
    assert parse_tenants(None, "dev") == TENANTS["dev"]


@pytest.mark.parametrize("wrong", ["starter", "starter:x", "gold:2", "starter:0"])
def test_a_wrong_tenants_value_stops_the_synth_with_the_reason(wrong: str) -> None:
    with pytest.raises(ValueError, match="context tenants"):
        stage_limit(parse_tenants(wrong, "prod"))
