"""The one stack: storage, search, compute, API, workflow, operations.

Context (``-c key=value`` or ``make synth STAGE=... SEARCH_BACKEND=...``):
- ``stage``: ``dev`` (default; everything DESTROYed with the stack, short log retention) or ``prod``
  (table and key RETAINed, deletion protection, standby replicas, longer log retention).
- ``search_backend``: ``opensearch`` (default; Serverless vector collection + stream indexer) or
  ``table`` (exact search over the vectors in the table: no OpenSearch, zero idle cost).
- ``opensearch_vpc`` and ``opensearch_subnets`` (a VPC id and its private subnet ids, comma-separated): the
  collection is reached only through a VPC endpoint there, and the functions that search run there
  (infra/components/search.py). Unset: the collection's endpoint is public, every request signed and authorized.
  The stack makes the VPC endpoints those functions need (DynamoDB's gateway endpoint on ``opensearch_route_tables``,
  the subnets' route tables; interface endpoints for the rest) unless ``opensearch_vpc_endpoints=false``.
- ``extraction_model``: a Bedrock model id (``amazon.nova-micro-v1:0``) or a geographic cross-Region inference
  profile id (``us.amazon.nova-micro-v1:0``) turns on extraction of long-term memories (docs/extraction.md;
  infra/components/extraction.py). Unset (the default): no extraction, nothing of it deployed.
  ``extraction_concurrency`` caps the extraction function (reserved concurrency, default 5);
  ``extraction_model_regions`` names a profile's destination Regions (comma-separated; the US Nova ones when
  unset for a ``us.`` profile).
- ``alarm_email``: who the alarm topic emails (required in ``prod``, which refuses to synthesize without it;
  optional in ``dev``): ``make synth STAGE=prod ALARM_EMAIL=...``, ``-c alarm_email=...`` for ``cdk deploy``.
- ``backup_copy_vault``: a backup vault's ARN in another account: prod's daily AWS Backup of the table is copied
  there (infra/components/backup.py); without it prod's backups stay in the account (a synth warning).
- ``tenants``: how many tenants of each plan tier the stage is sized for (``starter:50,standard:20,scale:2``);
  the stage's throttle is their plans' rates together (infra/components/throttling.py).
- ``embedder``: ``bedrock`` (default: Titan v2) or ``openai`` with ``embedder_url``, ``embedder_model``, and optionally
  ``embedder_dimensions`` and ``embedder_api_key_secret`` (a secret's ARN): infra/components/embeddings.py.
- ``account_concurrency``: the account's Lambda concurrency quota in the Region (default 1,000, Lambda's default):
  every function's reserved concurrency is sized from it (infra/components/compute.py ``Concurrency``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from aws_cdk import Acknowledgment, CfnOutput, RemovalPolicy, Stack, Tags, Validations
from aws_cdk import aws_logs as logs
from constructs import Construct

from agentmem.settings import Env
from infra.components.api import Api, ApiSettings
from infra.components.backup import Backups, check_copy_vault
from infra.components.compute import Compute, ComputeSettings, Concurrency
from infra.components.embeddings import EmbedderSettings
from infra.components.extraction import DEFAULT_RESERVED_CONCURRENCY, ExtractionSettings
from infra.components.operations import Operations
from infra.components.release import SafeDeploys
from infra.components.routes import CONSOLE_ROUTES, PUBLIC_ROUTES
from infra.components.search import PrivateNetwork, VectorSearch
from infra.components.storage import Storage
from infra.components.throttling import TENANTS, stage_limit
from infra.components.workflow import DeletionWorkflow

STAGES = ("dev", "prod")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
SEARCH_BACKENDS = ("opensearch", "table")


@dataclass(frozen=True)
class DeploymentOptions:
    stage: str = "dev"
    search_backend: str = "table"
    extraction_model: str | None = None
    extraction_concurrency: int = DEFAULT_RESERVED_CONCURRENCY
    extraction_model_regions: tuple[str, ...] = ()
    account_concurrency: int = 1000
    alarm_email: str | None = None
    backup_copy_vault: str | None = None
    """A backup vault's ARN in another account: prod's daily backups are copied there (infra/components/backup.py)."""
    tenants: Mapping[str, int] = field(default_factory=dict)
    """Tenants per plan tier the stage is sized for (empty: the stage's default, infra/components/throttling.py)."""
    opensearch_vpc: str | None = None
    opensearch_subnets: tuple[str, ...] = ()
    opensearch_route_tables: tuple[str, ...] = ()
    """The private subnets' route tables: the DynamoDB gateway endpoint is added to them."""
    opensearch_vpc_endpoints: bool = True
    """Whether the stack makes the VPC endpoints the functions in the private subnets need (False: the subnets
    reach AWS's APIs already)."""
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    """The embedding model: Bedrock's Titan v2, or an OpenAI-compatible endpoint (infra/components/embeddings.py)."""

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"context stage must be one of {STAGES}, not {self.stage!r}")
        if self.search_backend not in SEARCH_BACKENDS:
            raise ValueError(f"context search_backend must be one of {SEARCH_BACKENDS}, not {self.search_backend!r}")
        if self.extraction_model is None and self.extraction_model_regions:
            raise ValueError("context extraction_model_regions needs extraction_model")
        if self.production and not self.alarm_email:
            raise ValueError(
                "prod needs an address for its alarms: make synth STAGE=prod ALARM_EMAIL=oncall@example.com "
                "(and -c alarm_email=oncall@example.com for cdk deploy); the alarm topic would otherwise page nobody"
            )
        if self.alarm_email is not None and not _EMAIL.match(self.alarm_email):
            raise ValueError(f"context alarm_email must be an email address, not {self.alarm_email!r}")
        if (self.opensearch_vpc or self.opensearch_subnets) and self.search_backend != "opensearch":
            raise ValueError("context opensearch_vpc and opensearch_subnets are for search_backend=opensearch")
        if self.opensearch_route_tables and not self.opensearch_vpc:
            raise ValueError("context opensearch_route_tables is for a private network (opensearch_vpc)")
        _ = self.extraction, self.private_network, self.concurrency  # checked now, not halfway through the synth
        _ = stage_limit(self.tenants or TENANTS[self.stage])
        if self.backup_copy_vault is not None:
            if not self.production:
                raise ValueError("context backup_copy_vault is for stage=prod (dev keeps no backups)")
            check_copy_vault(self.backup_copy_vault)

    @property
    def extraction(self) -> ExtractionSettings | None:
        if self.extraction_model is None:
            return None
        return ExtractionSettings(
            self.extraction_model,
            reserved_concurrency=self.extraction_concurrency,
            model_regions=self.extraction_model_regions,
        )

    @property
    def concurrency(self) -> Concurrency:
        extraction = self.extraction.reserved_concurrency if self.extraction is not None else 0
        return Concurrency.for_backend(
            self.production, account=self.account_concurrency, extraction=extraction, search_backend=self.search_backend
        )

    @property
    def private_network(self) -> PrivateNetwork | None:
        """The subnets the vector collection is reached from only (None: its endpoint is public, IAM only)."""
        if self.opensearch_vpc is None and not self.opensearch_subnets:
            return None
        return PrivateNetwork(
            self.opensearch_vpc or "",
            self.opensearch_subnets,
            route_tables=self.opensearch_route_tables,
            endpoints=self.opensearch_vpc_endpoints,
        )

    @property
    def reads_the_stream(self) -> bool:
        """Whether a function reads the table's stream: the OpenSearch indexer, extraction."""
        return self.search_backend == "opensearch" or self.extraction_model is not None

    @property
    def production(self) -> bool:
        return self.stage == "prod"

    @property
    def log_retention(self) -> logs.RetentionDays:
        return logs.RetentionDays.THREE_MONTHS if self.production else logs.RetentionDays.TWO_WEEKS


class MemoryServiceStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, options: DeploymentOptions, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.options = options
        Tags.of(self).add("service", "agent-memory")
        Tags.of(self).add("stage", options.stage)

        self.storage = Storage(self, "Storage", production=options.production, stream=options.reads_the_stream)
        self.backups = (
            Backups(
                self, "Backups", table=self.storage.table, key=self.storage.key, copy_vault=options.backup_copy_vault
            )
            if options.production
            else None
        )
        self.search = (
            VectorSearch(
                self,
                "Search",
                stage=options.stage,
                key=self.storage.key,
                production=options.production,
                network=options.private_network,
            )
            if options.search_backend == "opensearch"
            else None
        )
        self.compute = Compute(
            self,
            "Compute",
            settings=ComputeSettings(
                stage=options.stage,
                production=options.production,
                search_backend=options.search_backend,
                log_retention=options.log_retention,
                extraction=options.extraction,
                account_concurrency=options.account_concurrency,
                embedder=options.embedder,
            ),
            storage=self.storage,
            search=self.search,
        )
        self.workflow = DeletionWorkflow(
            self,
            "Workflow",
            steps_function=self.compute.deletion,
            log_retention=options.log_retention,
            production=options.production,
        )
        self.workflow.redrive_with(
            self.compute.redrive, removal=RemovalPolicy.RETAIN if options.production else RemovalPolicy.DESTROY
        )
        self.compute.api.add_environment(Env.DELETION_STATE_MACHINE_ARN, self.workflow.state_machine.state_machine_arn)
        self.workflow.grant_start(self.compute.api.role)  # type: ignore[arg-type]
        self.api = Api(
            self,
            "Api",
            settings=ApiSettings(
                stage=options.stage,
                production=options.production,
                log_retention=options.log_retention,
                tenants=options.tenants,
            ),
            handler=self.compute.api_alias,
            authorizer_function=self.compute.authorizer_alias,
            console_function=self.compute.console,
        )
        self.operations = Operations(
            self,
            "Operations",
            stage=options.stage,
            key=self.storage.key,
            alarm_email=options.alarm_email,
            account_concurrency=options.account_concurrency,
            table=self.storage.table,
            authorizer=self.compute.authorizer,
            api=self.compute.api,
            api_alias=self.compute.api_alias,
            access_logs=self.api.access_logs,
            rest_api=self.api.rest_api,
            functions=self.compute.functions,
            state_machine=self.workflow.state_machine,
            undelivered_redrives=self.workflow.undelivered,
            indexer=self.compute.indexer,
            indexer_mapping=self.compute.indexer_mapping,
            extraction=self.compute.extraction,
            snapshot_dead_letters=self.compute.snapshots.dead_letters if self.compute.snapshots is not None else None,
            backups=self.backups,
        )
        alarms = self.operations.alarms
        self.deploys = SafeDeploys(
            self,
            "Deploys",
            production=options.production,
            aliases={
                "Api": (
                    self.compute.api_alias,
                    [alarms["ApiVersionErrorRate"], alarms["ApiVersionDurationP95"], alarms["Api5xxRate"]],
                ),
                "Authorizer": (self.compute.authorizer_alias, [alarms["AuthorizerFailures"], alarms["Api5xxRate"]]),
            },
            pre_hooks={"Api": self.compute.prehook, "Authorizer": self.compute.prehook},
        )
        CfnOutput(self, "ApiUrl", value=self.api.rest_api.url)
        CfnOutput(self, "ConsoleUrl", value=self.api.rest_api.url_for_path("/console"))
        CfnOutput(self, "TableName", value=self.storage.table.table_name)
        CfnOutput(self, "UsagePlanId", value=self.api.usage_plan.usage_plan_id)
        for tier, plan in self.api.usage_plans.items():
            CfnOutput(self, f"UsagePlanId{tier.capitalize()}", value=plan.usage_plan_id)
        CfnOutput(self, "DeletionStateMachineArn", value=self.workflow.state_machine.state_machine_arn)
        if self.search is not None:
            CfnOutput(self, "OpenSearchEndpoint", value=self.search.endpoint)
        if self.compute.index_failures is not None:
            CfnOutput(self, "IndexerFailuresBucket", value=self.compute.index_failures.bucket_name)
        if self.compute.snapshots is not None:
            CfnOutput(self, "SnapshotsBucket", value=self.compute.snapshots.bucket.bucket_name)
        acknowledge_findings(self)


def _logical_id(stack: Stack, construct: Construct) -> str:
    return str(stack.resolve(stack.get_logical_id(construct.node.default_child)))  # type: ignore[arg-type]


def _acknowledge(scope: Construct, rule: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))


def acknowledge_findings(stack: MemoryServiceStack) -> None:
    """cdk-nag AwsSolutions findings accepted on purpose, each on the narrowest scope, with its reason."""
    xray = (
        "Resource::* comes only from X-Ray active tracing (xray:PutTraceSegments, xray:PutTelemetryRecords), "
        "for the stream consumers dynamodb:ListStreams, and for the functions in private subnets Lambda's "
        "ec2:DescribeNetworkInterfaces and ec2:DescribeSubnets, none of which supports resource-level permissions; "
        "every data action names the table, key, queue, model or collection."
    )
    for fn in stack.compute.functions:
        _acknowledge(fn.role, "AwsSolutions-IAM5[Resource::*]", xray)  # type: ignore[arg-type]
    if stack.search is not None and stack.search.network is not None:
        for fn in stack.compute.search_functions:
            _acknowledge(
                fn.role,  # type: ignore[arg-type]
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*]",
                "Lambda creates and deletes the function's network interfaces in the private subnets with this role; "
                "their ids are only known then. Creation is also bound to the named subnets and security group.",
            )
    _acknowledge(
        stack.workflow.state_machine.role,
        "AwsSolutions-IAM5[Resource::*]",
        "Resource::* comes from X-Ray tracing and from Step Functions' CloudWatch Logs delivery actions "
        "(logs:CreateLogDelivery and friends), neither of which supports resource-level permissions; "
        "the Lambda invoke and table actions name their resources.",
    )
    _acknowledge(
        stack.compute.api.role,  # type: ignore[arg-type]
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        f"<{_logical_id(stack, stack.workflow.state_machine)}.Name>:*]",
        "GET {scope}/deletions/{id} reads executions of this one state machine; execution names are only known "
        "at run time, so the ARN ends in the execution-name wildcard.",
    )
    _acknowledge(
        stack.compute.receipt_key,
        "AwsSolutions-SMG4",
        "The deletion-receipt HMAC key is not rotated on purpose: a receipt names its user by HMAC(key, user), "
        "and a rotated key would make every earlier receipt unreadable on GET {scope}/deletions/{id}.",
    )
    if stack.compute.index_failures is not None:
        _acknowledge(
            stack.compute.index_failures,
            "AwsSolutions-S1",
            "This bucket only receives the stream batches the indexer gave up on, written by Lambda with the indexer's "
            "role; its objects expire in a week. Server access logs would need a second bucket; CloudTrail data "
            "events can record its reads if wanted.",
        )
        _acknowledge(
            stack.compute.indexer.role,  # type: ignore[union-attr,arg-type]
            f"AwsSolutions-IAM5[Resource::<{_logical_id(stack, stack.compute.index_failures)}.Arn>/*]",
            "Lambda names the objects it writes to the indexer's failure bucket (one per batch given up); the role "
            "may put objects there and list the bucket, nothing else.",
        )
    if stack.compute.snapshots is not None:
        snapshots = stack.compute.snapshots
        _acknowledge(
            snapshots.bucket,
            "AwsSolutions-S1",
            "Derived data (search index snapshots) read and written by this stack's functions only, through their "
            "roles; objects expire in 30 days. Server access logs would need a second bucket; CloudTrail data "
            "events can record its reads if wanted.",
        )
        objects = f"AwsSolutions-IAM5[Resource::<{_logical_id(stack, snapshots.bucket)}.Arn>/partitions/*]"
        reason = (
            "One snapshot object per user partition, named by a digest of it (partitions/<sha256>.snap): the names "
            "are only known at run time; the prefix is the only place any role may read, write or delete."
        )
        for fn in (stack.compute.api, stack.compute.deletion, snapshots.function):
            _acknowledge(fn.role, objects, reason)  # type: ignore[arg-type]
        _acknowledge(
            snapshots.dead_letters,
            "AwsSolutions-SQS3",
            "This queue IS the dead-letter queue of the snapshot requests.",
        )
    _acknowledge(
        stack.workflow.undelivered,
        "AwsSolutions-SQS3",
        "This queue IS the dead-letter queue of the EventBridge rule that re-drives failed erasures.",
    )
    if stack.compute.extraction is not None:
        _acknowledge(
            stack.compute.extraction.stream_failures,
            "AwsSolutions-SQS3",
            "This queue IS the on-failure destination of extraction's stream event source mapping.",
        )
    for group in stack.deploys.groups.values():
        _acknowledge(
            group.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]",
            "CodeDeploy's documented managed policy for Lambda deployments: it may read the alarms and move the "
            "alias of the functions it deploys, nothing of the data.",
        )
    for name in ("Api", "Authorizer"):
        _acknowledge(
            stack.deploys.groups[name].role,
            f"AwsSolutions-IAM5[Resource::<{_logical_id(stack, stack.compute.prehook)}.Arn>:*]",
            "CodeDeploy invokes the pre-traffic hook function with this role; the grant covers that one "
            "function's versions and aliases (ARN:*), no other function.",
        )
    if stack.backups is not None:
        _acknowledge(
            stack.backups.selection,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup]",
            "AWS Backup's documented managed policy for the role that backs up the selected resources (the table).",
        )
    if stack.api.firewall is None:
        _acknowledge(
            stack.api.rest_api,
            "AwsSolutions-APIG3",
            "dev has no WAF (a web ACL costs about $10 a month before its first request, docs/deploy.md); prod "
            "attaches one (infra/components/firewall.py). The stage's limits, route limits, usage plans and the "
            "authorizer still apply.",
        )
    _acknowledge(
        stack.api.rest_api,
        "AwsSolutions-COG4",
        "Tenants are machines (agents) that authenticate with per-tenant API keys, resolved by a Lambda REQUEST "
        "authorizer against hashed keys in the table; there are no end-user identities for a Cognito user pool.",
    )
    for method, path in PUBLIC_ROUTES:
        _acknowledge(
            stack.api.methods[(method, path)],
            "AwsSolutions-APIG4",
            f"{method} {path} is public on purpose (health checks, capability discovery, the OpenAPI document); "
            "it reads no tenant data.",
        )
    for method, path in CONSOLE_ROUTES:
        _acknowledge(
            stack.api.methods[(method, path)],
            "AwsSolutions-APIG4",
            f"{method} {path} is public on purpose: the web console's static files (no data); the page's API "
            "calls go through the tenant routes' authorizer with the user's key.",
        )
