"""What an account and Region hold once, for every stage: API Gateway's CloudWatch Logs role.

API Gateway writes a REST API's execution logs with one role per account and Region (its account settings). A
stage's stack that owned it (``cloudWatchRole: true``) took it away from every other stage when deleted; here
it lives in a stack of its own (``AgentMemory-account``), retained, which each stage's stack depends on, so
``cdk deploy AgentMemory-<stage>`` (``make deploy``) deploys it first.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, RemovalPolicy, Stack, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from constructs import Construct

ACCOUNT_STACK = "AgentMemory-account"


class AccountSettingsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str = ACCOUNT_STACK, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.logging_role = iam.Role(
            self,
            "ApiGatewayLogging",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            description="API Gateway's CloudWatch Logs role for this account and Region (execution logs)",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AmazonAPIGatewayPushToCloudWatchLogs")
            ],
        )
        self.logging_role.apply_removal_policy(RemovalPolicy.RETAIN)
        settings = apigw.CfnAccount(self, "ApiGatewaySettings", cloud_watch_role_arn=self.logging_role.role_arn)
        settings.apply_removal_policy(RemovalPolicy.RETAIN)
        Validations.of(self.logging_role).acknowledge(
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                reason="API Gateway's account-level role for execution logs; the AWS managed policy is the documented "
                "one and grants only CloudWatch Logs writes.",
            )
        )
