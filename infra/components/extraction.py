"""Extraction (memory that learns, docs/extraction.md): the function that turns conversations into long-term
records with a Bedrock model, and what brings sessions to it. Only with the ``extraction_model`` context;
without it nothing here exists and the service stores and searches what it is told, as before.

- The table's stream, filtered to *pending rows* (``XP#<session>`` sort keys in scope partitions ``S#...``,
  inserted or modified: agentmem/extraction/work.py), invokes the function in small batches; a batch that
  keeps failing is recorded in an encrypted queue (the stream's on-failure destination) and the shard moves
  on. The pending rows stay in the table, so the sessions are looked at again with their next write.
- A step that must look again later (the idle trigger, a retry's backoff) sends a delayed message to the
  *wake queue* (agentmem/extraction/queue.py), which the same function consumes; a message that keeps
  failing goes to the wake queue's dead-letter queue.
- The function's reserved concurrency caps how many model conversations run at once (and so the spend rate):
  ``extraction_concurrency``, 5 by default, 4 at least. The stream mapping may use STREAM_SLOTS of it (one batch
  per shard, two shards budgeted) and the wake mapping's MaximumConcurrency is the rest, so wakes are never
  throttled into their dead-letter queue. Both mappings report partial batch failures.
- Its role: the table's reads and writes (as the API's: it writes records, the graph and metering), the
  embedding model, the wake queue's SendMessage, ``bedrock:InvokeModel`` on the one chat model (Converse is
  authorized by InvokeModel), the vector collection as a searcher with OpenSearch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from agentmem.extraction.work import PENDING
from agentmem.keys import SCOPE_TAG
from agentmem.settings import Env
from infra.components.storage import KEY_ACTIONS, KEY_READ_ACTIONS, QUEUE_CONSUMER_ACTIONS, Storage
from infra.components.throttling import extraction_tokens_per_app

DEFAULT_RESERVED_CONCURRENCY = 5
MEMORY_MB = 512
"""A step mostly waits on the model, DynamoDB and the embedder (no model runs in the function): 512 MB is
the API's cold start budget halved, and every second spent waiting costs half of what it would at 1,024."""
TIMEOUT_SECONDS = 300
"""A step asks the model once per strategy (up to six) and once more to consolidate what is not settled, each
call bounded by MEMORY_MODEL_TIMEOUT_SECONDS; a session's lease (10 minutes) outlasts it."""
MODEL_TIMEOUT_SECONDS = 20
"""One model call's bound in the cloud (two attempts at most): a step's batches stay well within the timeout."""
STREAM_BATCH_SIZE = 10
"""Pending-row records per invocation: each may cost a step with several model calls, and the batch has to
fit the timeout (a session named several times in a batch gets one step)."""
STREAM_BATCHING_WINDOW = Duration.seconds(5)
"""Writes into one session within a few seconds arrive together: one step for them."""
STREAM_RETRIES = 3
STREAM_PARALLELIZATION = 1
"""Concurrent batches per stream shard (Lambda's default, set explicitly: the wake mapping is sized from it)."""
STREAM_SHARDS_BUDGETED = 2
"""Stream shards whose pending rows may be in steps at once, as budgeted: the stream mapping may then use up to
STREAM_PARALLELIZATION x STREAM_SHARDS_BUDGETED of the function's reservation, and the wake mapping the rest. A
table with more shards busy with pending rows at once makes stream batches wait on throttles (retried, in order);
what the budget keeps safe is the wakes, which a throttle would send towards the dead-letter queue."""
SQS_MINIMUM_CONCURRENCY = 2
"""The smallest MaximumConcurrency an SQS event source mapping takes."""
STREAM_MAX_RECORD_AGE = Duration.hours(6)
WAKE_BATCH_SIZE = 10
WAKE_MAX_RECEIVES = 5
"""Receives of a wake message before it moves to the dead-letter queue."""
WAKE_VISIBILITY_TIMEOUT = Duration.seconds(6 * TIMEOUT_SECONDS)
"""Lambda's guidance for a queue it consumes: six times the function's timeout, so that a batch throttled by
the reserved concurrency is not counted as failed receives."""
STREAM_SLOTS = STREAM_PARALLELIZATION * STREAM_SHARDS_BUDGETED
GEOGRAPHIC_PROFILES = ("us", "us-gov", "eu", "apac", "jp", "au", "ca")
"""Prefixes of Bedrock's system-defined cross-Region inference profiles tied to a geography
(``us.amazon.nova-micro-v1:0``): the request goes to the profile in the stack's Region and is served by the
model in one of the profile's destination Regions."""
PROFILE_DESTINATIONS: dict[str, tuple[str, ...]] = {"us": ("us-east-1", "us-east-2", "us-west-2")}
"""Destination Regions assumed for a geography when ``extraction_model_regions`` does not say: those of the
US profiles of the Amazon Nova models. Other geographies' lists differ by model, so they must be given
(``aws bedrock get-inference-profile --inference-profile-identifier <id>`` lists its ``models``)."""
_MODEL_ID = re.compile(r"^[a-z][a-z0-9-]*\.[A-Za-z0-9][A-Za-z0-9._:-]*$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")


@dataclass(frozen=True)
class ExtractionSettings:
    """``model_id``: a Bedrock model id (``amazon.nova-micro-v1:0``) or a geographic cross-Region inference
    profile id (``us.amazon.nova-micro-v1:0``); ``model_regions``: the profile's destination Regions."""

    model_id: str
    reserved_concurrency: int = DEFAULT_RESERVED_CONCURRENCY
    model_regions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _MODEL_ID.match(self.model_id):
            raise ValueError(
                f"context extraction_model must be a Bedrock model id (amazon.nova-micro-v1:0) or a geographic "
                f"inference profile id (us.amazon.nova-micro-v1:0), not {self.model_id!r}"
            )
        geography = self.geography
        if self.model_id.startswith("global."):
            raise ValueError(
                "context extraction_model: global inference profiles route to any commercial Region, which this "
                "stack does not grant; use the model id or a geographic profile (us., eu., apac., ...)"
            )
        if self.reserved_concurrency < STREAM_SLOTS + SQS_MINIMUM_CONCURRENCY:
            raise ValueError(
                f"context extraction_concurrency must be {STREAM_SLOTS + SQS_MINIMUM_CONCURRENCY} or more (the "
                f"stream's {STREAM_SLOTS} and SQS's minimum of {SQS_MINIMUM_CONCURRENCY} for wakes), not "
                f"{self.reserved_concurrency}"
            )
        bad = [r for r in self.model_regions if not _REGION.match(r)]
        if bad:
            raise ValueError(f"context extraction_model_regions: not Region names: {bad}")
        if self.model_regions and geography is None:
            raise ValueError("context extraction_model_regions is only for an inference profile id (us.…, eu.…)")
        if geography is not None and not self.destinations:
            raise ValueError(
                f"context extraction_model={self.model_id} is a cross-Region inference profile: name the Regions "
                "it routes to with -c extraction_model_regions=<r1>,<r2> (aws bedrock get-inference-profile "
                f"--inference-profile-identifier {self.model_id} lists them)"
            )

    @property
    def wake_concurrency(self) -> int:
        """The wake mapping's MaximumConcurrency: what the stream mapping leaves of the reservation, so that a wake
        is never throttled (a throttled SQS batch goes back to the queue and counts a receive: after
        WAKE_MAX_RECEIVES it would land in the dead-letter queue without having run)."""
        return self.reserved_concurrency - STREAM_SLOTS

    @property
    def geography(self) -> str | None:
        """The profile's geography (``us``), or None for a model id."""
        prefix = self.model_id.split(".", 1)[0]
        return prefix if prefix in GEOGRAPHIC_PROFILES else None

    @property
    def foundation_model(self) -> str:
        """The model the id names: itself, or the profile's model (``amazon.nova-micro-v1:0``)."""
        return self.model_id.split(".", 1)[1] if self.geography is not None else self.model_id

    @property
    def destinations(self) -> tuple[str, ...]:
        """The Regions a profile's requests may be served in (none for a model id)."""
        if self.geography is None:
            return ()
        return self.model_regions or PROFILE_DESTINATIONS.get(self.geography, ())


def model_arns(stack: Stack, settings: ExtractionSettings) -> list[str]:
    """What ``bedrock:InvokeModel`` must allow for Converse on ``settings.model_id`` from ``stack``'s Region:
    the foundation model there; for a profile, the profile there and its model in every destination Region."""

    def foundation_model(region: str | None = None) -> str:
        return stack.format_arn(
            service="bedrock",
            region=region,
            account="",
            resource="foundation-model",
            resource_name=settings.foundation_model,
        )

    if settings.geography is None:
        return [foundation_model()]
    profile = stack.format_arn(service="bedrock", resource="inference-profile", resource_name=settings.model_id)
    arns = [profile, foundation_model()]
    for region in settings.destinations:
        if region != stack.region:
            arns.append(foundation_model(region))
    return arns


class Extraction(Construct):
    """The wake queue (and its dead-letter queue), the stream's failure queue, the function (made by
    ``new_function`` in this scope, with ``environment`` and the model's settings), its two event source
    mappings and its grants."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: ExtractionSettings,
        storage: Storage,
        removal: RemovalPolicy,
        new_function: Callable[..., lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        self.settings = settings
        key = storage.key
        # Wake messages name a user's scope partition and a session: encrypted with the stack's key.
        self.wake_dlq = sqs.Queue(
            self,
            "WakeDlq",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=removal,
        )
        self.wake_queue = sqs.Queue(
            self,
            "WakeQueue",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            visibility_timeout=WAKE_VISIBILITY_TIMEOUT,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.wake_dlq, max_receive_count=WAKE_MAX_RECEIVES),
            removal_policy=removal,
        )
        # What Lambda records of a stream batch it gave up on: shard and sequence numbers, no item content.
        self.stream_failures = sqs.Queue(
            self,
            "StreamFailures",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=removal,
        )
        self.model_environment = {
            Env.MODEL: "bedrock",
            Env.MODEL_ID: settings.model_id,
            Env.EXTRACTION_QUEUE_URL: self.wake_queue.queue_url,
            Env.MODEL_TIMEOUT_SECONDS: str(MODEL_TIMEOUT_SECONDS),
        }
        """What the functions that write pending rows (the API) and the one that runs the steps share."""
        self.function = new_function(
            "Function",
            "extraction",
            scope=self,
            memory=MEMORY_MB,
            timeout=TIMEOUT_SECONDS,
            description=f"extraction of long-term memories ({settings.model_id})",
            reserved_concurrency=settings.reserved_concurrency,
            # each app's share of the model's tokens a minute (infra/components/throttling.py)
            extra_environment={
                **self.model_environment,
                Env.EXTRACTION_TOKENS_PER_MINUTE: str(extraction_tokens_per_app()),
            },
        )
        storage.stream_mapping(
            "PendingRows",
            self.function,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            filters=[pending_rows_filter()],
            batch_size=STREAM_BATCH_SIZE,
            max_batching_window=STREAM_BATCHING_WINDOW,
            bisect_batch_on_error=True,
            retry_attempts=STREAM_RETRIES,
            max_record_age=STREAM_MAX_RECORD_AGE,
            parallelization_factor=STREAM_PARALLELIZATION,
            report_batch_item_failures=True,
            on_failure=sources.SqsDlq(self.stream_failures),
        )
        lambda_.EventSourceMapping(
            self.function,
            "Wakes",
            target=self.function,
            event_source_arn=self.wake_queue.queue_arn,
            batch_size=WAKE_BATCH_SIZE,
            report_batch_item_failures=True,
            # The pollers invoke at most what the stream mapping leaves of the reservation: a wake is never throttled
            max_concurrency=settings.wake_concurrency,
        )
        # It sends wakes and consumes them (CDK's SqsEventSource would grant the queue's key without a condition):
        # the queue actions on the wake queue only, the key only through SQS.
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["sqs:SendMessage", *QUEUE_CONSUMER_ACTIONS], resources=[self.wake_queue.queue_arn]
            )
        )
        storage.grant_key(self.function.role, sorted({*KEY_ACTIONS, *KEY_READ_ACTIONS}), via=("sqs",))  # type: ignore[arg-type]
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=model_arns(Stack.of(self), settings))
        )


def pending_rows_filter() -> dict[str, str]:
    """The stream records extraction takes: a pending row inserted or written again, in a scope partition."""
    return lambda_.FilterCriteria.filter(
        {
            "eventName": lambda_.FilterRule.or_("INSERT", "MODIFY"),
            "dynamodb": {
                "Keys": {
                    "pk": {"S": lambda_.FilterRule.begins_with(SCOPE_TAG + "#")},
                    "sk": {"S": lambda_.FilterRule.begins_with(PENDING)},
                }
            },
        }
    )
