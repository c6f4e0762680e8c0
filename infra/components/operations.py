"""Operations: alarms (to an encrypted SNS topic, which emails ``alarm_email``: required in prod) and one dashboard.

Alarms: API 5xx rate, API p95 latency, the error rate and p95 duration of the API's version its alias runs (what
CodeDeploy watches during a canary), 429 surges at the gateway (from the access log), DynamoDB throttling,
authorizer failures (its errors less the keys it refused), searches degraded to keyword only, Lambda concurrency
near the account's quota, the API function's throttles, the authorizer's throttles, the other functions'
throttles, failed deletions (each is re-driven) and erasures given up; with OpenSearch the batches the indexer gave
up on (what its stream mapping sent to the failure bucket or dropped, per minute) and its stream iterator age; on the
table backend the snapshot requests the snapshot function gave up on (its dead-letter queue); with extraction the
messages in its two failure queues (a wake that kept failing, a stream batch given up); in prod failed backup jobs,
failed copy jobs (with a copy vault) and a day without a completed backup. Missing data is not breaching (an idle
API is healthy), except for the backups: a day with no completed backup is the failure that alarm is for.
The extraction function's throttles raise no alarm: its reserved concurrency is a cap on purpose, and both of its
event sources retry a throttled batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from agentmem.deletion.redrive import ERASURES_GIVEN_UP
from agentmem.observability import KEYS_REJECTED, NAMESPACE, SEARCHES_DEGRADED, SERVICE
from infra.components.backup import START_WINDOW, Backups
from infra.components.extraction import Extraction

FIVE_MINUTES = Duration.minutes(5)
ONE_MINUTE = Duration.minutes(1)
ONE_HOUR = Duration.hours(1)
BACKUP_JOB_HOURS = 3
"""How long the daily backup job may run after its start window before a day without a completed one alarms."""
NO_BACKUP_HOURS = 24 + int(START_WINDOW.to_hours()) + BACKUP_JOB_HOURS
"""A completed backup is expected every 24 hours, give or take the job's start window and its own time: this many
hours without one alarms (hourly periods; an alarm's periods under an hour may span a day at most)."""


@dataclass(frozen=True)
class Thresholds:
    server_error_rate: float = 0.01
    p95_latency_ms: int = 2000
    throttles: int = 1
    failed_deletions: int = 1
    dlq_messages: int = 1
    failed_backups: int = 1
    iterator_age_ms: int = 300_000
    gateway_throttled: int = 100
    """429s the gateway answered in 5 minutes (a plan's own limit answers some; a surge is the stage's)."""
    table_throttles: int = 10
    authorizer_failures: int = 3
    """Authorizer errors that are not a refused key (a crash, a timeout, the table unreachable) in 5 minutes."""
    degraded_searches: int = 5
    account_concurrency_share: float = 0.9
    """Of the account's Lambda quota in use at once: beyond it every function of the account is throttled soon."""


class Operations(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: str,
        key: kms.IKey,
        alarm_email: str | None,
        account_concurrency: int,
        table: dynamodb.ITable,
        authorizer: lambda_.IFunction,
        api: lambda_.IFunction,
        api_alias: lambda_.Alias,
        access_logs: logs.ILogGroup,
        rest_api: apigw.RestApi,
        functions: Sequence[lambda_.Function],
        state_machine: sfn.StateMachine,
        undelivered_redrives: sqs.IQueue,
        indexer: lambda_.Function | None,
        indexer_mapping: lambda_.EventSourceMapping | None,
        extraction: Extraction | None = None,
        snapshot_dead_letters: sqs.IQueue | None = None,
        backups: Backups | None = None,
        thresholds: Thresholds | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        limits = thresholds or Thresholds()
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name=f"agent memory {stage} alarms", master_key=key, enforce_ssl=True
        )
        # CloudWatch publishes alarm notifications to the KMS-encrypted topic: its alarms in this account and
        # Region only (a confused deputy elsewhere cannot use the key through CloudWatch).
        stack = Stack.of(self)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                },
            )
        )
        if alarm_email is not None:  # required in prod (infra/stack.py): an alarm must reach someone
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        self.alarms: dict[str, cw.Alarm] = {}

        server_errors = rest_api.metric_server_error(statistic="Average", period=FIVE_MINUTES)
        self._alarm("Api5xxRate", server_errors, limits.server_error_rate, "share of API requests answered 5xx")
        latency = rest_api.metric_latency(statistic="p95", period=FIVE_MINUTES)
        self._alarm("ApiLatencyP95", latency, limits.p95_latency_ms, "p95 API latency in ms")
        # A surge of 429s from the gateway (the stage's limits, a plan's, the WAF's rate rules), counted from the
        # access log's status: the API's own metrics count them only among all 4xx.
        throttled = access_logs.add_metric_filter(
            "Throttled",
            filter_pattern=logs.FilterPattern.string_value("$.status", "=", "429"),
            metric_namespace=NAMESPACE,
            metric_name="GatewayThrottled",
            metric_value="1",
        ).metric(statistic="Sum", period=FIVE_MINUTES)
        self._alarm("ApiThrottled", throttled, limits.gateway_throttled, "requests the gateway answered 429")
        table_throttles = cw.MathExpression(
            expression="reads+writes",
            using_metrics={
                "reads": table.metric("ReadThrottleEvents", statistic="Sum", period=FIVE_MINUTES),
                "writes": table.metric("WriteThrottleEvents", statistic="Sum", period=FIVE_MINUTES),
            },
            label="DynamoDB throttled requests",
            period=FIVE_MINUTES,
        )
        self._alarm("TableThrottles", table_throttles, limits.table_throttles, "requests DynamoDB throttled")
        # Lambda counts every refused key as an error of the authorizer (it raises "Unauthorized", as API Gateway
        # documents): what is left after the refusals it counts itself is a failure every tenant sees as a 503 (the
        # gateway's AUTHORIZER_FAILURE answer: infra/components/api.py).
        authorizer_failures = cw.MathExpression(
            expression="errors-rejected",
            using_metrics={
                "errors": authorizer.metric_errors(statistic="Sum", period=FIVE_MINUTES),
                "rejected": self._own_metric(KEYS_REJECTED),
            },
            label="authorizer failures (errors that are not a refused key)",
            period=FIVE_MINUTES,
        )
        self._alarm(
            "AuthorizerFailures",
            authorizer_failures,
            limits.authorizer_failures,
            "authorizer failures",
            sustained=False,
        )
        self._alarm(
            "SearchesDegraded",
            self._own_metric(SEARCHES_DEGRADED),
            limits.degraded_searches,
            "searches answered by keyword only (embedder or vector index failing)",
        )
        in_use = cw.Metric(
            namespace="AWS/Lambda", metric_name="ConcurrentExecutions", statistic="Maximum", period=FIVE_MINUTES
        )
        self._alarm(
            "ConcurrencyNearQuota",
            in_use,
            int(account_concurrency * limits.account_concurrency_share),
            "concurrent Lambda executions in the account",
        )
        # The API's and the authorizer's own throttles alarm apart (a tenant holding the API's slots; anonymous
        # traffic filling the authorizer's, which every tenant whose cached answer expired then meets as a 503),
        # the other functions' together.
        for name, fn, what in (
            ("ApiFunctionThrottles", api, "the API function (its reserved concurrency is full)"),
            ("AuthorizerThrottles", authorizer, "the authorizer (answered 503 to callers whose cached answer expired)"),
        ):
            throttled = fn.metric_throttles(statistic="Sum", period=FIVE_MINUTES)
            self._alarm(name, throttled, limits.throttles, f"throttled invocations of {what}", sustained=False)
        self._canary_alarms(api_alias, limits)
        capped = extraction.function if extraction is not None else None
        uncapped = [fn for fn in functions if fn is not capped and fn is not api and fn is not authorizer]
        throttles = cw.MathExpression(
            expression="+".join(f"t{i}" for i in range(len(uncapped))),
            using_metrics={
                f"t{i}": fn.metric_throttles(statistic="Sum", period=FIVE_MINUTES) for i, fn in enumerate(uncapped)
            },
            label="Lambda throttles",
            period=FIVE_MINUTES,
        )
        self._alarm(
            "LambdaThrottles",
            throttles,
            limits.throttles,
            "throttled Lambda invocations (functions other than the API and the authorizer)",
            sustained=False,
        )
        failed = cw.MathExpression(
            expression="failed+timedout+aborted",
            using_metrics={
                "failed": state_machine.metric_failed(statistic="Sum", period=FIVE_MINUTES),
                "timedout": state_machine.metric_timed_out(statistic="Sum", period=FIVE_MINUTES),
                "aborted": state_machine.metric_aborted(statistic="Sum", period=FIVE_MINUTES),
            },
            label="failed user deletions",
            period=FIVE_MINUTES,
        )
        self._alarm(
            "FailedDeletions", failed, limits.failed_deletions, "user erasures that did not succeed", sustained=False
        )
        # An accepted erasure that will not finish by itself: the redrive function gave up on it (six re-drives
        # over about 17 hours), or EventBridge could not deliver its failure to the function.
        given_up = cw.MathExpression(
            expression="gaveup+undelivered",
            using_metrics={
                "gaveup": self._own_metric(ERASURES_GIVEN_UP),
                "undelivered": undelivered_redrives.metric_approximate_number_of_messages_visible(
                    statistic="Maximum", period=FIVE_MINUTES
                ),
            },
            label="erasures given up",
            period=FIVE_MINUTES,
        )
        self._alarm("ErasuresGivenUp", given_up, 1, "accepted erasures that no re-drive will finish", sustained=False)
        if indexer_mapping is not None:
            # What the indexer's stream mapping gave up on, per minute (its event-count metrics, turned on in
            # infra/components/compute.py): batches sent whole to the failure bucket, and records dropped (their
            # delivery there failed). S3's object count of the bucket is a daily metric: it said so a day late.
            def of_mapping(name: str) -> cw.Metric:
                return cw.Metric(
                    namespace="AWS/Lambda",
                    metric_name=name,
                    dimensions_map={"EventSourceMappingUUID": indexer_mapping.event_source_mapping_id},
                    statistic="Sum",
                    period=ONE_MINUTE,
                )

            given_up = cw.MathExpression(
                expression="FILL(delivered, 0) + FILL(dropped, 0)",
                using_metrics={
                    "delivered": of_mapping("OnFailureDestinationDeliveredEventCount"),
                    "dropped": of_mapping("DroppedEventCount"),
                },
                label="stream records the indexer gave up on",
                period=ONE_MINUTE,
            )
            self._alarm(
                "IndexerFailuresKept",
                given_up,
                limits.dlq_messages,
                "stream records the indexer gave up on (sent to its failure bucket, or dropped)",
                sustained=False,
            )
        if indexer is not None:
            age = indexer.metric("IteratorAge", statistic="Maximum", period=FIVE_MINUTES)
            self._alarm("IndexerIteratorAge", age, limits.iterator_age_ms, "how far the indexer lags the table")
        if extraction is not None:
            failures = cw.MathExpression(
                expression="wake+stream",
                using_metrics={
                    "wake": extraction.wake_dlq.metric_approximate_number_of_messages_visible(
                        statistic="Maximum", period=FIVE_MINUTES
                    ),
                    "stream": extraction.stream_failures.metric_approximate_number_of_messages_visible(
                        statistic="Maximum", period=FIVE_MINUTES
                    ),
                },
                label="extraction failures",
                period=FIVE_MINUTES,
            )
            self._alarm(
                "ExtractionFailures",
                failures,
                limits.dlq_messages,
                "wake messages and stream batches extraction gave up on",
                sustained=False,
            )
        if snapshot_dead_letters is not None:
            # A snapshot request that failed MAX_RECEIVES times (infra/components/snapshots.py): the user's searches
            # keep reading the partition whole until one succeeds.
            self._alarm(
                "SnapshotRequestsGivenUp",
                snapshot_dead_letters.metric_approximate_number_of_messages_visible(
                    statistic="Maximum", period=FIVE_MINUTES
                ),
                limits.dlq_messages,
                "snapshot requests the snapshot function gave up on",
                sustained=False,
            )
        if backups is not None:
            self._backup_alarms(backups, limits)

        self.dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"agent-memory-{stage}")
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="API requests and errors",
                left=[
                    rest_api.metric_count(period=FIVE_MINUTES),
                    rest_api.metric_client_error(period=FIVE_MINUTES),
                    rest_api.metric_server_error(period=FIVE_MINUTES),
                ],
            ),
            cw.GraphWidget(
                title="API latency (ms)",
                left=[rest_api.metric_latency(statistic=s, period=FIVE_MINUTES) for s in ("p50", "p95", "p99")],
            ),
            cw.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms.values())),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Lambda errors", left=[fn.metric_errors(period=FIVE_MINUTES) for fn in functions]),
            cw.GraphWidget(
                title="Lambda throttles", left=[fn.metric_throttles(period=FIVE_MINUTES) for fn in functions]
            ),
            cw.GraphWidget(
                title="Lambda duration p95 (ms)",
                left=[fn.metric_duration(statistic="p95", period=FIVE_MINUTES) for fn in functions],
            ),
        )
        pipeline: list[cw.IWidget] = [
            cw.GraphWidget(
                title="User deletions",
                left=[
                    state_machine.metric_started(period=FIVE_MINUTES),
                    state_machine.metric_succeeded(period=FIVE_MINUTES),
                    state_machine.metric_failed(period=FIVE_MINUTES),
                ],
            )
        ]
        if indexer is not None:
            pipeline.append(
                cw.GraphWidget(
                    title="Indexer",
                    left=[indexer.metric_errors(period=FIVE_MINUTES)],
                    right=[indexer.metric("IteratorAge", statistic="Maximum", period=FIVE_MINUTES)],
                )
            )
        if extraction is not None:
            pipeline.append(
                cw.GraphWidget(
                    title="Extraction",
                    left=[
                        extraction.function.metric_invocations(period=FIVE_MINUTES),
                        extraction.function.metric_throttles(period=FIVE_MINUTES),
                    ],
                    right=[
                        extraction.wake_queue.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES),
                        extraction.wake_dlq.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES),
                        extraction.stream_failures.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES),
                    ],
                )
            )
        self.dashboard.add_widgets(*pipeline)

    def _backup_alarms(self, backups: Backups, limits: Thresholds) -> None:
        """AWS Backup's job metrics of the vault (a copy job counts under the vault it copies from): a failed backup
        job, a failed copy to the other account's vault, and no backup completed for :data:`NO_BACKUP_HOURS`
        (a job that never started, was aborted or is stuck raises no failure; its absence does)."""

        def of_vault(name: str, period: Duration) -> cw.Metric:
            return cw.Metric(
                namespace="AWS/Backup",
                metric_name=name,
                dimensions_map={"BackupVaultName": backups.vault.backup_vault_name},
                statistic="Sum",
                period=period,
            )

        self._alarm(
            "BackupJobsFailed",
            of_vault("NumberOfBackupJobsFailed", FIVE_MINUTES),
            limits.failed_backups,
            "failed backup jobs of the table",
            sustained=False,
        )
        if backups.copy_vault is not None:
            self._alarm(
                "CopyJobsFailed",
                of_vault("NumberOfCopyJobsFailed", FIVE_MINUTES),
                limits.failed_backups,
                "failed copies of the table's backups to the other account's vault",
                sustained=False,
            )
        alarm = cw.Alarm(
            self,
            "NoBackupCompleted",
            metric=of_vault("NumberOfBackupJobsCompleted", ONE_HOUR),
            threshold=1,
            evaluation_periods=NO_BACKUP_HOURS,
            datapoints_to_alarm=NO_BACKUP_HOURS,
            comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            # An hour without the metric is an hour without a completed backup.
            treat_missing_data=cw.TreatMissingData.BREACHING,
            alarm_description=f"Agent memory: no backup of the table completed in {NO_BACKUP_HOURS} hours",
        )
        alarm.add_alarm_action(cw_actions.SnsAction(self.topic))
        self.alarms["NoBackupCompleted"] = alarm

    def _canary_alarms(self, alias: lambda_.Alias, limits: Thresholds) -> None:
        """The API's new version as its alias runs it (``ExecutedVersion``: during a canary, the share of requests
        it serves), for CodeDeploy to watch: its error rate (Lambda's errors: crashes, timeouts, a module that does
        not import; an error the API answers itself as a 500 is not one, which the API-wide 5xx rate still sees)
        and its p95 duration. A period without a call of the new version is not breaching: the alarm's dimensions
        move to each new version with the stack update, before its first call, so breaching on missing data would
        stop every deployment at its start and page every quiet night after. What keeps a quiet canary from
        promoting an untried version is the pre-traffic hook (infra/components/release.py), which calls it first."""
        fn = alias.version.lambda_
        dimensions = {
            "FunctionName": fn.function_name,
            "Resource": f"{fn.function_name}:{alias.alias_name}",
            "ExecutedVersion": alias.version.version,
        }

        def of_version(name: str, statistic: str) -> cw.Metric:
            return cw.Metric(
                namespace="AWS/Lambda",
                metric_name=name,
                dimensions_map=dimensions,
                statistic=statistic,
                period=FIVE_MINUTES,
            )

        error_rate = cw.MathExpression(
            expression="errors/invocations",
            using_metrics={"errors": of_version("Errors", "Sum"), "invocations": of_version("Invocations", "Sum")},
            label="error rate of the API's new version",
            period=FIVE_MINUTES,
        )
        self._alarm(
            "ApiVersionErrorRate", error_rate, limits.server_error_rate, "share of the new version's calls failed"
        )
        self._alarm(
            "ApiVersionDurationP95",
            of_version("Duration", "p95"),
            limits.p95_latency_ms,
            "p95 duration in ms of the API's new version",
        )

    def _own_metric(self, name: str) -> cw.Metric:
        """A metric the functions publish (Powertools EMF: the service's namespace and ``service`` dimension)."""
        return cw.Metric(
            namespace=NAMESPACE,
            metric_name=name,
            dimensions_map={"service": SERVICE},
            statistic="Sum",
            period=FIVE_MINUTES,
        )

    def _alarm(
        self, construct_id: str, metric: cw.IMetric, threshold: float, what: str, *, sustained: bool = True
    ) -> None:
        """A rate or latency must hold 2 of 3 periods (``sustained``); a count alarms at once."""
        alarm = cw.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=3 if sustained else 1,
            datapoints_to_alarm=2 if sustained else 1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=f"Agent memory: {what} at or above {threshold}",
        )
        alarm.add_alarm_action(cw_actions.SnsAction(self.topic))
        self.alarms[construct_id] = alarm
