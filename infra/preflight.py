"""What ``make deploy`` checks in the account before it deploys a stage: ``python infra/preflight.py -c key=value ...``
(the same context as the deploy; the Makefile passes its ``CDK_CONTEXT``). Exits 1 with the reason when the stage
cannot deploy as configured, 0 otherwise; AWS credentials and Region as for ``cdk deploy``.

- **Lambda concurrency.** Every function of the stage reserves concurrency, sized from ``-c account_concurrency``
  (1,000 unless said: infra/components/compute.py ``Concurrency``). The context is not the account: a new account's
  quota is often far lower, and Lambda refuses a reservation that would leave fewer than 100 executions unreserved,
  which fails the deploy halfway through (CloudFormation then rolls it back). This reads the account's quota and what
  is unreserved now (``lambda:GetAccountSettings``; the stage's own current reservations, when its stack exists, are
  counted back: ``cloudformation:ListStackResources``, ``lambda:GetFunctionConcurrency``), and refuses when the
  context names a larger quota than the account has, or when the stage's reservations would leave fewer than 100
  unreserved.
- **The private network's DNS** (``-c opensearch_vpc``): the VPC endpoints answer under the services' names only when
  the VPC has ``enableDnsSupport`` and ``enableDnsHostnames`` on (``ec2:DescribeVpcAttribute``); the stack takes an
  existing VPC and cannot set them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Plan:
    """What the stage will ask of the account, from the deploy's context."""

    stack_name: str
    account_concurrency: int
    """The quota the context says the account has (``-c account_concurrency``)."""
    reservations: Mapping[str, int]
    """Each function's reserved concurrency (handler name -> executions)."""
    vpc_id: str | None = None

    @property
    def reserved(self) -> int:
        return sum(self.reservations.values())


def parse_context(argv: Sequence[str]) -> dict[str, str]:
    """``-c key=value`` pairs (``--context`` too), as ``cdk deploy`` takes them."""
    context: dict[str, str] = {}
    args = iter(argv)
    for arg in args:
        if arg in ("-c", "--context"):
            pair = next(args, "")
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise ValueError(f"context must be key=value, not {pair!r}")
            context[key] = value
        else:
            raise ValueError(f"unexpected argument {arg!r} (preflight takes -c key=value only)")
    return context


def plan_of(context: Mapping[str, str]) -> Plan:
    """The stage's plan from the context, as the CDK app reads it (infra/app.py ``deployment_options``)."""
    from infra.app import deployment_options

    options = deployment_options(context.get)
    return Plan(
        stack_name=f"AgentMemory-{options.stage}",
        account_concurrency=options.account_concurrency,
        reservations=options.concurrency.reservations,
        vpc_id=options.opensearch_vpc,
    )


def held_by_stack(cloudformation: Any, lambda_client: Any, stack_name: str) -> int:
    """What the stage's functions reserve now (0 when the stack does not exist yet)."""
    from botocore.exceptions import ClientError

    held = 0
    try:
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
            for resource in page["StackResourceSummaries"]:
                if resource["ResourceType"] != "AWS::Lambda::Function" or not resource.get("PhysicalResourceId"):
                    continue
                answer = lambda_client.get_function_concurrency(FunctionName=resource["PhysicalResourceId"])
                held += int(answer.get("ReservedConcurrentExecutions", 0))
    except ClientError as error:
        if "does not exist" in str(error):
            return 0
        raise
    return held


def concurrency_problems(plan: Plan, lambda_client: Any, cloudformation: Any) -> list[str]:
    """Why the stage's reservations do not fit the account (empty: they fit)."""
    from infra.components.compute import UNRESERVED_FLOOR

    limits = lambda_client.get_account_settings()["AccountLimit"]
    quota = int(limits["ConcurrentExecutions"])
    unreserved = int(limits["UnreservedConcurrentExecutions"])
    region = lambda_client.meta.region_name
    problems = []
    if plan.account_concurrency > quota:
        problems.append(
            f"the stage is sized for a Lambda concurrency quota of {plan.account_concurrency} (-c account_concurrency, "
            f"ACCOUNT_CONCURRENCY=; 1000 unless said) but the account's quota in {region} is {quota}: deploy with "
            f"ACCOUNT_CONCURRENCY={quota} (if the stage fits it) or ask AWS for a higher quota (Service Quotas, "
            "Lambda, Concurrent executions)"
        )
    held = held_by_stack(cloudformation, lambda_client, plan.stack_name)
    left = unreserved + held - plan.reserved
    if left < UNRESERVED_FLOOR:
        problems.append(
            f"{plan.stack_name} reserves {plan.reserved} concurrent executions "
            f"({', '.join(f'{name} {n}' for name, n in sorted(plan.reservations.items()))}); the account has "
            f"{unreserved} unreserved in {region}"
            + (f" ({held} of them the stage's own functions now)" if held else "")
            + f", and Lambda keeps {UNRESERVED_FLOOR} unreserved: {UNRESERVED_FLOOR - left} short. Lower "
            "ACCOUNT_CONCURRENCY to size the stage smaller, free other functions' reservations, or ask AWS for a "
            "higher quota"
        )
    return problems


def dns_problems(vpc_id: str, ec2: Any) -> list[str]:
    """Why the VPC cannot resolve its endpoints' names (empty: it can)."""
    problems = []
    for attribute, key in (("enableDnsSupport", "EnableDnsSupport"), ("enableDnsHostnames", "EnableDnsHostnames")):
        answer = ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=attribute)
        if not answer.get(key, {}).get("Value", False):
            problems.append(
                f"{vpc_id} has {attribute} off: the VPC endpoints (the collection's among them) answer under the "
                f"services' names only with it on (aws ec2 modify-vpc-attribute --vpc-id {vpc_id} "
                f"--{'enable-dns-support' if key == 'EnableDnsSupport' else 'enable-dns-hostnames'} "
                "'{\"Value\":true}')"
            )
    return problems


def run(context: Mapping[str, str], client: Callable[[str], Any]) -> list[str]:
    """Every problem of deploying the stage of ``context`` into the account ``client`` (a boto3 client factory)
    reaches."""
    plan = plan_of(context)
    problems = concurrency_problems(plan, client("lambda"), client("cloudformation"))
    if plan.vpc_id is not None:
        problems += dns_problems(plan.vpc_id, client("ec2"))
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    sys.path.insert(0, str(REPO_ROOT))
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    import boto3

    try:
        context = parse_context(sys.argv[1:] if argv is None else argv)
        problems = run(context, boto3.client)
    except ValueError as error:  # a context the CDK app would refuse too
        problems = [str(error)]
    for problem in problems:
        print(f"make deploy refused: {problem}", file=sys.stderr)
    if not problems:
        print("preflight: the stage's reserved concurrency fits the account's", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
