"""Compute: the Lambda functions (API, stream indexer, deletion steps, authorizer, console, the snapshot writer on
the table backend: infra/components/snapshots.py, and extraction when a model is configured:
infra/components/extraction.py) and their layers.

Every function: arm64, Python 3.14, X-Ray active tracing, its own log group with a retention, its own
role holding only what it uses (explicit DynamoDB/KMS actions on the one table and key, no wildcard
actions on data). Handlers live in ``functions/<name>/handler.py``; the domain library comes from the
core layer, third-party packages from the dependency layer (see infra/packaging.py). The console function
serves the web console's files from the core layer: it has that layer only, no store settings, and a role
that writes its logs and traces only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jsii
from aws_cdk import Annotations, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from agentmem.keys import SCOPE_TAG, tenant_partition
from agentmem.memory.records import ENTRY
from agentmem.release_hook import AUTHORIZER_TARGET_ENV, TARGET_ENV
from agentmem.settings import API_MEMORY_MB, Env
from agentmem.tenancy.admission import in_flight_limits
from agentmem.tenancy.keys import lookup_partition
from infra import packaging
from infra.components.embeddings import EmbedderSettings
from infra.components.extraction import Extraction, ExtractionSettings
from infra.components.search import ERASER, INDEXER, SEARCHER, VectorSearch
from infra.components.snapshots import Snapshots
from infra.components.storage import DELETION_ACTIONS, Storage
from infra.components.throttling import IN_FLIGHT_SHARES, embedding_shares

SERVICE_NAME = "agent-memory"
METRICS_NAMESPACE = "AgentMemory"
DELETION_RESERVED_CONCURRENCY = 10
"""Kept for the erasure steps whatever the API's traffic: one execution runs at most 5 steps at once (the
Map's MaxConcurrency 4 beside the vector branch), so two erasures run in full and more queue on the
ASL's Lambda.TooManyRequestsException retries instead of being starved by a tenant's burst."""
AUTHORIZER_PARTITIONS = [lookup_partition("") + "*"]
"""The only partitions the authorizer reads: the operator's (``K#...``), key lookups (``K#<hash>``) and tenant
records (``K#T#<app>``)."""
INDEXER_RETRIES = 10
INDEXER_MAX_RECORD_AGE = Duration.hours(6)
"""A change the indexer cannot apply is retried for hours (an OpenSearch outage), well inside the stream's 24 hours,
then written whole to the failure bucket, from which the runbook replays it (docs/deploy.md)."""
INDEX_FAILURES_KEPT_DAYS = 7
GATEWAY_TIMEOUT_SECONDS = 29
"""API Gateway's integration timeout for a REST API: past it the client gets a 504, whatever the function does."""
API_TIMEOUT_SECONDS = 25
"""The API function's timeout: 4 s under the gateway's, for a cold start and the round trips around the
invocation, so a request that runs out of time ends with the function's own answer, not a 504 while it still
runs (and writes). No write request runs longer (an erasure waits this long after marking the user)."""
LIVE_ALIAS = "live"
"""The alias API Gateway invokes the API and the authorizer through."""
UNRESERVED_FLOOR = 100
"""What Lambda keeps unreserved in an account: it refuses a reservation that would leave less."""
VPC_CALLS = {
    "api": ("dynamodb", "bedrock-runtime", "secretsmanager", "states"),
    "deletion": ("dynamodb", "secretsmanager"),
    "indexer": ("dynamodb", "bedrock-runtime"),
    "extraction": ("dynamodb", "bedrock-runtime", "sqs"),
}
"""The AWS APIs the code of each function that runs in the vector collection's private subnets calls (as VPC endpoint
service names: the table, embeddings and the chat model, the receipt key, the erasure workflow, extraction's wake
queue), which the subnets must reach (infra/components/search.py ``reach``), as Bedrock embeds (an OpenAI-compatible
embedder's: infra/components/embeddings.py ``vpc_calls``). The rest of what their roles hold is
called by Lambda for them: their logs and traces, their network interfaces, the stream and queue their mappings
read, the indexer's failure bucket; the data key only through those services."""


@dataclass(frozen=True)
class Concurrency:
    """Every function's reserved concurrency: a floor the others' traffic cannot take (a tenant's slow requests
    cannot starve the authorizer, the indexer or erasure) and a cap each cannot pass. The stage may take ``share``
    of what the account can reserve (``account`` concurrency, the Region's quota: ``-c account_concurrency``),
    and the API gets what the stage's other functions leave of it: capped below the account's remainder."""

    account: int = 1000
    share: float = 0.8
    authorizer: int = 50
    indexer: int = 20
    deletion: int = DELETION_RESERVED_CONCURRENCY
    console: int = 10
    redrive: int = 2
    prehook: int = 1
    """CodeDeploy's pre-traffic hook: one check of a new API version at a time."""
    extraction: int = 0
    snapshots: int = 0
    minimum_api: int = 10

    @classmethod
    def for_stage(
        cls, production: bool, *, account: int, extraction: int, snapshots: bool = False, indexer: bool | None = None
    ) -> Concurrency:
        """Production takes most of the account; dev a tenth, so both stages fit in one account. ``snapshots``:
        the table backend's snapshot writer (5 in prod, 2 in dev: its queue's mapping polls with at least 2
        concurrent invocations, Lambda's smallest maximum concurrency for SQS, and never more than it reserves:
        infra/components/snapshots.py). ``indexer``: the OpenSearch backend's stream indexer (20 in prod, 2 in dev),
        by default where there is no snapshot writer (the two backends have one each). A function the stack does not
        have reserves 0 and is not counted (the table backend's API lost the 20 of an indexer it did not have)."""
        if indexer is None:
            indexer = not snapshots
        if production:
            return cls(
                account=account, extraction=extraction, indexer=20 if indexer else 0, snapshots=5 if snapshots else 0
            )
        return cls(
            account=account,
            share=0.1,
            authorizer=10,
            indexer=2 if indexer else 0,
            console=2,
            redrive=1,
            extraction=extraction,
            snapshots=2 if snapshots else 0,
        )

    @classmethod
    def for_backend(cls, production: bool, *, account: int, extraction: int, search_backend: str) -> Concurrency:
        """The reservations of a stage with ``search_backend`` (``table``: the snapshot writer and no indexer)."""
        table = search_backend == "table"
        return cls.for_stage(production, account=account, extraction=extraction, snapshots=table, indexer=not table)

    @property
    def budget(self) -> int:
        return int((self.account - UNRESERVED_FLOOR) * self.share)

    @property
    def others(self) -> dict[str, int]:
        """Each function's reservation but the API's, for the functions the stage has (a reservation of 0: none)."""
        reservations = {
            "authorizer": self.authorizer,
            "indexer": self.indexer,
            "deletion": self.deletion,
            "console": self.console,
            "redrive": self.redrive,
            "prehook": self.prehook,
            "extraction": self.extraction,
            "snapshots": self.snapshots,
        }
        return {name: reserved for name, reserved in reservations.items() if reserved > 0}

    @property
    def reserved_for_others(self) -> int:
        return sum(self.others.values())

    @property
    def reservations(self) -> dict[str, int]:
        """Every function's reservation, the API's included, keyed by its handler's name (``functions/<name>``)."""
        return {"api": self.api, **self.others}

    @property
    def total(self) -> int:
        """What the stage reserves of the account's concurrency, all its functions together."""
        return sum(self.reservations.values())

    @property
    def api(self) -> int:
        api = self.budget - self.reserved_for_others
        if api < self.minimum_api:
            raise ValueError(
                f"context account_concurrency={self.account} leaves the API {api} concurrent executions after the "
                f"stage's other functions ({self.reserved_for_others}); ask for a higher Lambda concurrency quota"
            )
        return api


@dataclass(frozen=True)
class ComputeSettings:
    stage: str
    production: bool
    search_backend: str
    log_retention: logs.RetentionDays
    extraction: ExtractionSettings | None = None
    """The model extraction runs with (the ``extraction_model`` context), or None: no extraction."""
    account_concurrency: int = 1000
    """The account's Lambda concurrency quota in the Region (``-c account_concurrency``)."""
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    """The embedding model the functions call (``-c embedder``: infra/components/embeddings.py)."""

    @property
    def concurrency(self) -> Concurrency:
        extraction = self.extraction.reserved_concurrency if self.extraction is not None else 0
        return Concurrency.for_backend(
            self.production, account=self.account_concurrency, extraction=extraction, search_backend=self.search_backend
        )


class Compute(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: ComputeSettings,
        storage: Storage,
        search: VectorSearch | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._removal = RemovalPolicy.RETAIN if settings.production else RemovalPolicy.DESTROY
        self.core_layer = lambda_.LayerVersion(
            self,
            "CoreLayer",
            code=packaging.core_layer_code(),
            compatible_architectures=[packaging.ARCHITECTURE],
            compatible_runtimes=[packaging.RUNTIME],
            description="agentmem: the domain library (layers/core)",
        )
        self.dependency_layer = lambda_.LayerVersion(
            self,
            "DependencyLayer",
            code=packaging.dependency_layer_code(
                use_prebuilt=self.node.try_get_context("dependency_layer") != "source"
            ),
            compatible_architectures=[packaging.ARCHITECTURE],
            compatible_runtimes=[packaging.RUNTIME],
            description="third-party packages for arm64 (layers/deps/requirements.txt)",
        )
        self._code = packaging.functions_code()
        environment = {
            "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            Env.STORE: "dynamodb",
            Env.TABLE_NAME: storage.table.table_name,
            **settings.embedder.environment,
            Env.VECTOR_INDEX: "opensearch" if search is not None else "exact",
            Env.AUTH: "required",
            # An erasure waits this long after marking the user: no API request can still be writing then.
            Env.DELETION_DRAIN_SECONDS: str(API_TIMEOUT_SECONDS + 1),
        }
        if search is not None:
            environment[Env.OPENSEARCH_ENDPOINT] = search.endpoint
            environment[Env.OPENSEARCH_SERVICE] = search.signing_service
        # The HMAC key naming users in deletion receipts: generated once, read at run time, never rotated
        # (a new key would make earlier receipts unreadable to their users).
        self.receipt_key = secretsmanager.Secret(
            self,
            "ReceiptKey",
            description="HMAC key that names users in deletion receipts (agentmem)",
            generate_secret_string=secretsmanager.SecretStringGenerator(exclude_punctuation=True, password_length=64),
            removal_policy=self._removal,
        )
        environment[Env.RECEIPT_KEY_SECRET_ARN] = self.receipt_key.secret_arn
        self.environment = environment

        concurrency = settings.concurrency
        self.api = self._function(
            "Api",
            "api",
            memory=API_MEMORY_MB,
            timeout=API_TIMEOUT_SECONDS,
            description="REST API (API.md)",
            reserved_concurrency=concurrency.api,
            # no tenant holds more of the API's reservation than its tier's share (infra/components/throttling.py)
            extra_environment={
                Env.IN_FLIGHT_LIMITS: in_flight_limits(concurrency.api, IN_FLIGHT_SHARES).to_setting(),
                Env.EMBEDDING_SHARES: embedding_shares().to_setting(),
            },
        )
        self.authorizer = self._function(
            "Authorizer",
            "authorizer",
            memory=512,
            timeout=5,
            description="x-api-key -> tenant (app)",
            reserved_concurrency=concurrency.authorizer,
        )
        # API Gateway calls these two through an alias that CodeDeploy moves from one published version to the
        # next (infra/components/release.py), never through $LATEST.
        self.api_alias = lambda_.Alias(self, "ApiLive", alias_name=LIVE_ALIAS, version=self.api.current_version)
        self.authorizer_alias = lambda_.Alias(
            self, "AuthorizerLive", alias_name=LIVE_ALIAS, version=self.authorizer.current_version
        )
        # CodeDeploy's pre-traffic hook of the API and the authorizer (infra/components/release.py): it may invoke the
        # versions being deployed (a health request, a key never made) and report to their deployment groups, nothing
        # else; no store settings.
        new_version = self.api.current_version.function_arn
        new_authorizer = self.authorizer.current_version.function_arn
        self.prehook = self._function(
            "PreTrafficHook",
            "prehook",
            memory=256,
            timeout=API_TIMEOUT_SECONDS + 30,
            description="pre-traffic check of a new API or authorizer version",
            reserved_concurrency=concurrency.prehook,
            environment={
                "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
                TARGET_ENV: new_version,
                AUTHORIZER_TARGET_ENV: new_authorizer,
            },
        )
        self.prehook.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[new_version, new_authorizer])
        )
        self.deletion = self._function(
            "DeletionSteps",
            "deletion",
            memory=1024,
            timeout=300,
            description="user erasure steps",
            reserved_concurrency=concurrency.deletion,
        )
        # Re-drives failed erasures (infra/components/workflow.py gives it the state machine and its events): the
        # store's settings, but of the table it may read deletion requests (T#<app>) only.
        self.redrive = self._function(
            "Redrive",
            "redrive",
            memory=256,
            timeout=30,
            description="re-drive of failed user erasures",
            reserved_concurrency=concurrency.redrive,
        )
        storage.grant_get_items(self.redrive.role, [tenant_partition("") + "*"])  # type: ignore[arg-type]
        storage.grant_read_write(self.api.role)  # type: ignore[arg-type]
        # Two GetItems per request (the key's lookup item, the tenant record); nothing else of the table.
        storage.grant_get_items(self.authorizer.role, AUTHORIZER_PARTITIONS)  # type: ignore[arg-type]
        storage.grant_actions(self.deletion.role, DELETION_ACTIONS)  # type: ignore[arg-type]
        for fn in (self.api, self.deletion):  # GetSecretValue only (grant_read adds DescribeSecret, never called)
            fn.add_to_role_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.receipt_key.secret_arn])
            )
        self._allow_embeddings(self.api)

        self.extraction: Extraction | None = None
        if settings.extraction is not None:
            self.extraction = Extraction(
                self,
                "Extraction",
                settings=settings.extraction,
                storage=storage,
                removal=self._removal,
                new_function=self._function,
            )
            # The API writes the pending rows (and answers StartMemoryExtractionJob with one); it never calls
            # the model nor sends to the queue, so it gets their settings and no grant.
            for name, value in self.extraction.model_environment.items():
                self.api.add_environment(name, value)
            # Reads the session and the app's memory; writes records, the graph, its cursor and metering.
            storage.grant_read_write(self.extraction.function.role)  # type: ignore[arg-type]
            self._allow_embeddings(self.extraction.function)

        self.snapshots: Snapshots | None = None
        if search is None:  # the table backend: its held indexes start from snapshots
            self.snapshots = Snapshots(
                self,
                "Snapshots",
                storage=storage,
                removal=self._removal,
                new_function=self._function,
                reserved_concurrency=concurrency.snapshots,
            )
            self.snapshots.allow_reads(self.api)
            self.snapshots.allow_erasure(self.deletion)

        self.indexer: lambda_.Function | None = None
        self.indexer_mapping: lambda_.EventSourceMapping | None = None
        """The indexer's stream mapping: its event-count metrics say what it gave up on (operations.py's alarm)."""
        self.search_functions: list[lambda_.Function] = []
        """The functions that call the vector collection (placed in its private subnets when it has them)."""
        self.index_failures: s3.Bucket | None = None
        if search is not None:
            # The batches the indexer gave up on, whole (Lambda writes the invocation record with its payload to an
            # S3 destination; an SQS one gets shard and sequence numbers only): encrypted with the data key, kept a
            # week (they hold memory text; docs/deploy.md's runbook replays them from the table within that).
            self.index_failures = storage.private_bucket(self, "IndexerFailures", kept_days=INDEX_FAILURES_KEPT_DAYS)
            self.indexer = self._function(
                "Indexer",
                "indexer",
                memory=1024,
                timeout=120,
                description="table stream -> OpenSearch",
                reserved_concurrency=concurrency.indexer,
            )
            # PutItem: an entry stored while the embedder was down gets its vector written back (conditional on the
            # entry still existing); UpdateItem: the tenant's embedding counters (metering), and the partition's
            # statistics when DynamoDB TTL removed an entry, whose postings, pointer and session row go by
            # BatchWriteItem/DeleteItem (agentmem/memory/expiry.py). It reads no items.
            storage.grant_actions(
                self.indexer.role,  # type: ignore[arg-type]
                ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"],
            )
            self._allow_embeddings(self.indexer)
            self.indexer_mapping = storage.stream_mapping(
                "TableStream",
                self.indexer,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                filters=[indexed_items_filter()],
                batch_size=100,
                max_batching_window=Duration.seconds(1),
                bisect_batch_on_error=True,
                retry_attempts=INDEXER_RETRIES,
                max_record_age=INDEXER_MAX_RECORD_AGE,
                report_batch_item_failures=True,
                on_failure=FailureBucket(self.index_failures, storage),
                support_s3_on_failure_destination=True,
                # Per-minute counts of the records it sent to the failure bucket or dropped (the alarm's metrics)
                metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
            )
            grants = {
                self.api.role: SEARCHER,
                self.deletion.role: ERASER,
                self.indexer.role: INDEXER,
            }
            if self.extraction is not None:  # weighs candidates against similar records, writes new ones
                grants[self.extraction.function.role] = SEARCHER
            search.allow(
                grants,  # type: ignore[arg-type]
                admins=context_list(self.node.try_get_context("opensearch_admins")),
            )
            placed = {"api": self.api, "deletion": self.deletion, "indexer": self.indexer}
            if self.extraction is not None:
                placed["extraction"] = self.extraction.function
            self.search_functions = list(placed.values())
            search.connect(self.search_functions)
            calls = settings.embedder.vpc_calls(VPC_CALLS)
            search.reach(sorted({service for name in placed for service in calls[name]}))
            if search.network is not None and settings.embedder.url is not None:
                Annotations.of(self).add_warning_v2(
                    "agentmem:embedder-egress",
                    f"embedder=openai in private subnets: they must reach {settings.embedder.url} over HTTPS "
                    "(a NAT gateway, or a private endpoint of the provider; docs/embeddings.md)",
                )
        self.console = self._function(
            "Console",
            "console",
            memory=256,
            timeout=5,
            description="web console files (docs/console.md)",
            reserved_concurrency=concurrency.console,
            layers=[self.core_layer],
            environment={"POWERTOOLS_SERVICE_NAME": SERVICE_NAME},
        )
        extraction = self.extraction.function if self.extraction is not None else None
        snapshots = self.snapshots.function if self.snapshots is not None else None
        self.functions = [
            fn
            for fn in (
                self.api,
                self.authorizer,
                self.deletion,
                self.indexer,
                extraction,
                self.console,
                self.redrive,
                self.prehook,
                snapshots,
            )
            if fn is not None
        ]

    def _function(
        self,
        construct_id: str,
        name: str,
        *,
        memory: int,
        timeout: int,
        description: str,
        reserved_concurrency: int | None = None,
        layers: list[lambda_.ILayerVersion] | None = None,
        environment: dict[str, str] | None = None,
        extra_environment: dict[str, str] | None = None,
        scope: Construct | None = None,
    ) -> lambda_.Function:
        """A function in ``scope`` (this construct by default) with the store's ``environment`` (or the one
        given) plus ``extra_environment``, its own log group and its own role."""
        scope = scope or self
        log_group = logs.LogGroup(
            scope,
            f"{construct_id}Logs",
            retention=self._settings.log_retention,
            removal_policy=self._removal,
        )
        role = iam.Role(
            scope,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"agent memory {name} function",
        )
        log_group.grant_write(role)
        return lambda_.Function(
            scope,
            construct_id,
            description=f"Agent memory: {description}",
            runtime=packaging.RUNTIME,
            architecture=packaging.ARCHITECTURE,
            handler=f"{name}.handler.handler",
            code=self._code,
            layers=layers if layers is not None else [self.core_layer, self.dependency_layer],
            memory_size=memory,
            timeout=Duration.seconds(timeout),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            role=role,
            environment={**(self.environment if environment is None else environment), **(extra_environment or {})},
            reserved_concurrent_executions=reserved_concurrency,
        )

    def _allow_embeddings(self, fn: lambda_.Function) -> None:
        self._settings.embedder.allow(fn)


def indexed_items_filter() -> dict[str, object]:
    """The stream records the indexer acts on (agentmem/vectors/stream.py): entries (``E#``) of scope partitions
    (``S#``), written, rewritten or removed (DynamoDB TTL's removals included). Nothing else invokes it."""
    return lambda_.FilterCriteria.filter(
        {
            "dynamodb": {
                "Keys": {
                    "pk": {"S": lambda_.FilterRule.begins_with(SCOPE_TAG + "#")},
                    "sk": {"S": lambda_.FilterRule.begins_with(ENTRY)},
                }
            }
        }
    )


@jsii.implements(lambda_.IEventSourceDlq)
class FailureBucket:
    """An S3 on-failure destination whose grants are the documented ones: ``s3:PutObject`` on its objects,
    ``s3:ListBucket`` on it, and the data key's ``kms:GenerateDataKey`` through S3 only (CDK's
    ``S3OnFailureDestination`` grants read and write of the bucket and the key unconditioned)."""

    def __init__(self, bucket: s3.IBucket, storage: Storage) -> None:
        self._bucket = bucket
        self._storage = storage

    def bind(
        self, target: lambda_.IEventSourceMapping, target_handler: lambda_.IFunction
    ) -> lambda_.DlqDestinationConfig:
        role = target_handler.role
        assert role is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[self._bucket.arn_for_objects("*")])
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self._bucket.bucket_arn])
        )
        self._storage.grant_key(role, ["kms:GenerateDataKey"], via=("s3",))
        return lambda_.DlqDestinationConfig(destination=self._bucket.bucket_arn)


def context_list(value: object) -> list[str]:
    """A context value given as a list or as a comma-separated string (``-c opensearch_admins=arn1,arn2``)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return [str(part) for part in value] if isinstance(value, list) else []
