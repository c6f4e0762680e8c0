"""Safe deploys: the API and the authorizer move to a new published version through CodeDeploy.

API Gateway invokes each through its ``live`` alias (infra/components/compute.py). A deploy publishes a new
version and CodeDeploy shifts the alias to it: in prod a canary (10% of requests for 15 minutes, then all),
in dev all at once. Either way the deployment stops and the alias goes back to the previous version when one of
its alarms goes off meanwhile (the API 5xx rate and p95 latency; the authorizer's failures and the 5xx rate,
which its failures turn into). The canary lasts 15 minutes because those alarms need 2 of 3 five-minute periods:
a 5-minute canary would be over before they could fire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

CANARY = codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_15_MINUTES
ALL_AT_ONCE = codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE


class SafeDeploys(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        production: bool,
        aliases: Mapping[str, tuple[lambda_.Alias, Sequence[cw.IAlarm]]],
    ) -> None:
        super().__init__(scope, construct_id)
        self.application = codedeploy.LambdaApplication(self, "Application")
        self.groups: dict[str, codedeploy.LambdaDeploymentGroup] = {}
        for name, (alias, alarms) in aliases.items():
            self.groups[name] = codedeploy.LambdaDeploymentGroup(
                self,
                name,
                application=self.application,
                alias=alias,
                deployment_config=CANARY if production else ALL_AT_ONCE,
                alarms=list(alarms),
                auto_rollback=codedeploy.AutoRollbackConfig(
                    failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True
                ),
            )
