"""Workflow: the user-erasure state machine, defined by infra/workflows/delete_user.asl.json, and its re-drive.

The ASL file is the one the tests execute; CDK substitutes ``${DeletionStepsFunctionArn}``. Standard
type, logging ALL (without execution data: inputs name users), X-Ray on; the file itself bounds an execution to a
day (``TimeoutSeconds``: an attempt waits at most its backoff, 12 hours, then runs minutes; CDK's ``timeout`` is
not applied to a definition read from a file).

Re-drive (:meth:`DeletionWorkflow.redrive_with`): an EventBridge rule takes every status change of this state
machine's executions to FAILED or TIMED_OUT to the redrive function, which starts the next attempt with a backoff
(agentmem/deletion/redrive.py); an event EventBridge could not deliver after its retries lands in a queue the
alarm ``ErasuresGivenUp`` watches, as does the function's own count of erasures it gave up on; so does an event
the function itself failed on three times (Lambda's asynchronous retries, then its on-failure destination).
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from agentmem.settings import Env

ASL_FILE = Path(__file__).resolve().parent.parent / "workflows" / "delete_user.asl.json"
REDRIVEN_STATUSES = ["FAILED", "TIMED_OUT"]


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

    def redrive_with(self, function: lambda_.Function, *, removal: RemovalPolicy) -> None:
        """Send every failed or timed-out execution's status change to ``function``, which may start executions
        of this state machine (and nothing else of it)."""
        function.add_environment(Env.DELETION_STATE_MACHINE_ARN, self.state_machine.state_machine_arn)
        self.state_machine.grant_start_execution(function)
        self.undelivered = sqs.Queue(
            self,
            "UndeliveredRedrives",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=removal,
        )
        self.redrive_rule = events.Rule(
            self,
            "FailedExecutions",
            description="agent memory: re-drive user erasures whose execution failed or timed out",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={"status": REDRIVEN_STATUSES, "stateMachineArn": [self.state_machine.state_machine_arn]},
            ),
        )
        function.configure_async_invoke(
            retry_attempts=2, max_event_age=Duration.hours(6), on_failure=destinations.SqsDestination(self.undelivered)
        )
        self.redrive_rule.add_target(
            targets.LambdaFunction(
                function,
                dead_letter_queue=self.undelivered,
                retry_attempts=185,
                max_event_age=Duration.hours(24),
            )
        )

    def grant_start(self, role: iam.IRole) -> None:
        """Start executions and read their status (the API's DELETE {scope} and GET deletions; the running
        executions are listed to find a re-driven attempt of an erasure)."""
        self.state_machine.grant_start_execution(role)
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["states:ListExecutions"], resources=[self.state_machine.state_machine_arn])
        )
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
