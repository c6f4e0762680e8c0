"""``make deploy``'s check of the account before it deploys (issue 42, point 9; infra/preflight.py): the stage's
reserved concurrency against the account's real quota, and a private network's DNS. AWS is botocore's Stubber on
the real boto3 clients: the requests are checked against the services' models, the answers are the shapes AWS
documents."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from infra import preflight

PROD = {"stage": "prod", "alarm_email": "oncall@example.com"}
PRIVATE = {
    **PROD,
    "search_backend": "opensearch",
    "opensearch_vpc": "vpc-0a1b2c3d",
    "opensearch_subnets": "subnet-1,subnet-2",
    "opensearch_route_tables": "rtb-1,rtb-2",
}


class Account:
    """Stubbed Lambda, CloudFormation and EC2 clients of one account; ``client`` is the factory ``run`` takes."""

    def __init__(self) -> None:
        self.clients = {
            name: boto3.client(name, region_name="us-east-1") for name in ("lambda", "cloudformation", "ec2")
        }
        self.stubs = {name: Stubber(client) for name, client in self.clients.items()}

    def client(self, name: str) -> Any:
        return self.clients[name]

    def limits(self, quota: int, unreserved: int) -> None:
        self.stubs["lambda"].add_response(
            "get_account_settings",
            {
                "AccountLimit": {
                    "TotalCodeSize": 80_530_636_800,
                    "CodeSizeUnzipped": 262_144_000,
                    "CodeSizeZipped": 52_428_800,
                    "ConcurrentExecutions": quota,
                    "UnreservedConcurrentExecutions": unreserved,
                },
                "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": 0},
            },
            {},
        )

    def no_stack(self, name: str) -> None:
        self.stubs["cloudformation"].add_client_error(
            "list_stack_resources",
            service_error_code="ValidationError",
            service_message=f"Stack with id {name} does not exist",
            http_status_code=400,
            expected_params={"StackName": name},
        )

    def stack(self, name: str, reservations: dict[str, int | None]) -> None:
        """The stack exists with these functions (physical name -> reserved concurrency, None: none)."""
        summaries = [
            {
                "LogicalResourceId": f"Compute{function}",
                "PhysicalResourceId": function,
                "ResourceType": "AWS::Lambda::Function",
                "LastUpdatedTimestamp": datetime(2026, 1, 1, tzinfo=UTC),
                "ResourceStatus": "UPDATE_COMPLETE",
            }
            for function in reservations
        ]
        summaries.append(
            {
                "LogicalResourceId": "StorageTable",
                "PhysicalResourceId": "the-table",
                "ResourceType": "AWS::DynamoDB::Table",
                "LastUpdatedTimestamp": datetime(2026, 1, 1, tzinfo=UTC),
                "ResourceStatus": "UPDATE_COMPLETE",
            }
        )
        self.stubs["cloudformation"].add_response(
            "list_stack_resources", {"StackResourceSummaries": summaries}, {"StackName": name}
        )
        for function, reserved in reservations.items():
            answer = {} if reserved is None else {"ReservedConcurrentExecutions": reserved}
            self.stubs["lambda"].add_response("get_function_concurrency", answer, {"FunctionName": function})

    def dns(self, vpc: str, *, support: bool, hostnames: bool) -> None:
        for attribute, key, value in (
            ("enableDnsSupport", "EnableDnsSupport", support),
            ("enableDnsHostnames", "EnableDnsHostnames", hostnames),
        ):
            self.stubs["ec2"].add_response(
                "describe_vpc_attribute",
                {"VpcId": vpc, key: {"Value": value}},
                {"VpcId": vpc, "Attribute": attribute},
            )


@pytest.fixture
def account() -> Iterator[Account]:
    made = Account()
    for stub in made.stubs.values():
        stub.activate()
    yield made
    for stub in made.stubs.values():
        stub.assert_no_pending_responses()  # every call the test set up was made
        stub.deactivate()


def test_a_fresh_account_of_the_default_quota_takes_either_stage(account: Account) -> None:
    for context, name in (({}, "AgentMemory-dev"), (PROD, "AgentMemory-prod")):
        # Given an account of Lambda's default quota, nothing reserved, no stack yet
        account.limits(quota=1000, unreserved=1000)
        account.no_stack(name)
        # When the stage's deploy is checked / Then nothing stands in its way
        assert preflight.run(context, account.client) == []
    # And the plan the check compares is the stage's (what its template reserves: tests/infra/test_first_deploy.py)
    assert preflight.plan_of(PROD).reserved == 720
    assert preflight.plan_of({}).reserved == 90


def test_an_account_whose_quota_is_lower_than_the_context_says_is_refused_before_anything_deploys(
    account: Account,
) -> None:
    # Given a new account whose Lambda quota is 10 (AWS lowers it for new accounts), and the default context (1,000)
    account.limits(quota=10, unreserved=10)
    account.no_stack("AgentMemory-prod")
    # When prod's deploy is checked
    problems = preflight.run(PROD, account.client)
    # Then it is refused, saying the quota the context assumed, the account's real one, and that the stage cannot fit
    sized, short = problems
    assert "quota of 1000" in sized
    assert "quota in us-east-1 is 10" in sized
    assert "ACCOUNT_CONCURRENCY=10" in sized
    assert "AgentMemory-prod reserves 720" in short
    assert "810 short" in short  # 10 unreserved less 720 leaves -710; Lambda keeps 100
    assert "api 642" in short  # (prod on the table backend: its snapshot writer reserves 5, no indexer)
    assert "snapshots 5" in short


def test_a_context_that_names_a_quota_the_stage_fits_passes(account: Account) -> None:
    # Given an account of 400 and the context saying so / Then prod (sized to 240 of it) deploys
    account.limits(quota=400, unreserved=400)
    account.no_stack("AgentMemory-prod")
    assert preflight.run({**PROD, "account_concurrency": "400"}, account.client) == []
    assert preflight.plan_of({**PROD, "account_concurrency": "400"}).reserved == int(300 * 0.8)


def test_the_stages_own_reservations_count_back_on_a_redeploy(account: Account) -> None:
    # Given prod deployed (its functions reserving 720) beside dev (90): 190 of 1,000 unreserved
    held = {"api": 622, "authorizer": 50, "indexer": 20, "deletion": 10, "console": 10, "redrive": 2}
    held |= {"prehook": 1, "extraction": 5, "auto-delete": None}
    account.limits(quota=1000, unreserved=190)
    account.stack("AgentMemory-prod", held)
    # When prod is deployed again / Then its own reservations are counted back: it fits as before
    assert (
        preflight.run(
            {**PROD, "search_backend": "opensearch", "extraction_model": "amazon.nova-micro-v1:0"}, account.client
        )
        == []
    )
    # But when another function of the account has taken 100 more since, the redeploy is refused
    account.limits(quota=1000, unreserved=90)
    account.stack("AgentMemory-prod", held)
    (problem,) = preflight.run(
        {**PROD, "search_backend": "opensearch", "extraction_model": "amazon.nova-micro-v1:0"}, account.client
    )
    assert "90 unreserved in us-east-1 (720 of them the stage's own functions now)" in problem
    assert "10 short" in problem


def test_a_private_network_must_resolve_dns(account: Account) -> None:
    # Given a VPC with DNS hostnames off
    account.limits(quota=1000, unreserved=1000)
    account.no_stack("AgentMemory-prod")
    account.dns("vpc-0a1b2c3d", support=True, hostnames=False)
    # When prod with that private network is checked / Then it is refused, saying which attribute and how to set it
    (problem,) = preflight.run(PRIVATE, account.client)
    assert "vpc-0a1b2c3d has enableDnsHostnames off" in problem
    assert "--enable-dns-hostnames" in problem
    # And with both on it passes
    account.limits(quota=1000, unreserved=1000)
    account.no_stack("AgentMemory-prod")
    account.dns("vpc-0a1b2c3d", support=True, hostnames=True)
    assert preflight.run(PRIVATE, account.client) == []


def test_main_exits_1_with_the_reason(account: Account, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(boto3, "client", account.client)
    account.limits(quota=10, unreserved=10)
    account.no_stack("AgentMemory-dev")
    assert preflight.main(["-c", "stage=dev", "-c", "search_backend=table"]) == 1
    assert "make deploy refused:" in capsys.readouterr().err
    # And a context the app refuses is refused here too, before any call
    assert preflight.main(["-c", "stage=qa"]) == 1
    assert "context stage" in capsys.readouterr().err


def test_the_context_is_read_as_cdk_reads_it() -> None:
    assert preflight.parse_context(["-c", "stage=prod", "--context", "tenants=starter:1,scale:2"]) == {
        "stage": "prod",
        "tenants": "starter:1,scale:2",
    }
    for wrong in (["stage=prod"], ["-c", "stage"]):
        with pytest.raises(ValueError):
            preflight.parse_context(wrong)


def test_make_deploy_checks_the_account_before_it_deploys() -> None:
    # make -n prints the recipes without running them (nothing is installed, checked or deployed)
    command = ["make", "-n", "-o", ".venv/.infra", "-o", "layer", "deploy", "STAGE=prod"]
    recipe = subprocess.run(
        [*command, "ALARM_EMAIL=oncall@example.com", "ACCOUNT_CONCURRENCY=400"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    (check,) = [i for i, line in enumerate(recipe) if "infra/preflight.py" in line]
    (deploy,) = [i for i, line in enumerate(recipe) if " deploy AgentMemory-" in line]
    # Then the check runs first, with the deploy's own context
    assert check < deploy
    for pair in ("-c stage=prod", "-c account_concurrency=400", "-c alarm_email=oncall@example.com"):
        assert pair in recipe[check], pair
        assert pair in recipe[deploy], pair
