"""Safe deploys: the API and the authorizer move to a new published version through CodeDeploy.

API Gateway invokes each through its ``live`` alias (infra/components/compute.py). A deploy publishes a new
version and CodeDeploy shifts the alias to it: in prod a canary (10% of requests for 15 minutes, then all),
in dev all at once. Before any request moves, the pre-traffic hook (functions/prehook, agentmem/release_hook.py)
invokes the new API version with a health request and the new authorizer version with a key that was never made,
and fails the deployment unless the API answers 200 and the authorizer refuses the key, so a version that cannot
start or reach its table never takes traffic, even on a quiet stage (and even behind the authorizer's cache). Then the
deployment stops and the alias goes back to the previous version when one of its alarms goes off meanwhile: for
the API, the error rate and p95 duration of the new version as its alias runs it (``ExecutedVersion``: not diluted
by the 90% the old version serves) and the API-wide 5xx rate (which also sees the 500s the API answers itself);
for the authorizer, its failures and the 5xx rate, which its failures turn into. The canary lasts 15 minutes
because those alarms need 2 of 3 five-minute periods: a 5-minute canary would be over before they could fire.

An alarm already on when a deployment starts stops it at once (CodeDeploy watches the alarms' state, not their
changes): docs/deploy.md's runbook says how to ship a fix while one is on.
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
        pre_hooks: Mapping[str, lambda_.IFunction] | None = None,
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
                pre_hook=(pre_hooks or {}).get(name),
                auto_rollback=codedeploy.AutoRollbackConfig(
                    failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True
                ),
            )
