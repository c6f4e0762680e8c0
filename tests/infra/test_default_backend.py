"""No idle bill by default (issue 35, point 4): `make deploy` and `cdk deploy` without arguments deploy the
table backend; OpenSearch Serverless is opted into, and its monthly floor is said before the deploy starts."""

from __future__ import annotations

import pytest

from agentmem.costs import price
from infra.app import build_app, deployment_options
from infra.components.search import floor_notice, minimum_ocus
from tests.support import make_plan


def test_without_context_the_stack_searches_the_table() -> None:
    # Given what `cdk deploy` passes without -c, and what make passes without SEARCH_BACKEND
    assert deployment_options({}.get).search_backend == "table"
    planned = [line for line in make_plan("deploy").splitlines() if " deploy AgentMemory-" in line]
    assert len(planned) == 1
    assert "-c search_backend=table" in planned[0]
    # And opting in is one variable
    opted = [line for line in make_plan("deploy", "SEARCH_BACKEND=opensearch").splitlines() if "deploy" in line]
    assert any("-c search_backend=opensearch" in line for line in opted)


def test_the_opensearch_floor_is_priced_from_the_prices_file() -> None:
    # Given the OCU-hour's list price / Then the notice is the minimum OCUs for 730 hours at that price
    ocu_hour = price("aoss.ocu_hour")
    for production in (True, False):
        notice = floor_notice(production)
        assert f"${ocu_hour.of(minimum_ocus(production) * 730):,.2f} a month" in notice
        assert ocu_hour.date in notice
    # With standby replicas (prod) the floor is twice dev's: 2 OCUs against 1
    assert minimum_ocus(True) == 2 * minimum_ocus(False)


def test_the_app_says_the_floor_before_it_builds_an_opensearch_stack_and_not_otherwise(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given the CDK app as `cdk deploy` runs it (its stderr is what the deployer reads first)
    quiet = {"aws:cdk:bundling-stacks": []}
    # When it builds each backend / Then only the OpenSearch one says the floor
    build_app({**quiet, "search_backend": "opensearch"})
    assert "OpenSearch Serverless bills at least" in capsys.readouterr().err
    build_app(quiet)
    assert "OpenSearch Serverless bills at least" not in capsys.readouterr().err
