"""Workflow: the user-erasure state machine, defined by infra/workflows/delete_user.asl.json.

The ASL file is the one the tests execute; CDK substitutes ``${DeletionStepsFunctionArn}``. Standard
type, logging ALL (without execution data: inputs name users), X-Ray on.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

ASL_FILE = Path(__file__).resolve().parent.parent / "workflows" / "delete_user.asl.json"


class DeletionWorkflow(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        steps_function: lambda_.IFunction,
        log_retention: logs.RetentionDays,
        production: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.logs = logs.LogGroup(
            self,
            "Logs",
            retention=log_retention,
            removal_policy=RemovalPolicy.RETAIN if production else RemovalPolicy.DESTROY,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "DeleteUser",
            definition_body=sfn.DefinitionBody.from_file(str(ASL_FILE)),
            definition_substitutions={"DeletionStepsFunctionArn": steps_function.function_arn},
            state_machine_type=sfn.StateMachineType.STANDARD,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.logs, level=sfn.LogLevel.ALL, include_execution_data=False),
        )
        # A definition read from a file gives CDK nothing to infer permissions from: grant them here. Every
        # Task invokes the steps Lambda (no direct SDK integration), so that is the role's only data grant.
        self.state_machine.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[steps_function.function_arn])
        )

    def grant_start(self, role: iam.IRole) -> None:
        """Start executions and read their status (the API's DELETE {scope} and GET deletions)."""
        self.state_machine.grant_start_execution(role)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["states:DescribeExecution"],
                resources=[
                    Stack.of(self).format_arn(
                        service="states",
                        resource="execution",
                        resource_name=f"{self.state_machine.state_machine_name}:*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
