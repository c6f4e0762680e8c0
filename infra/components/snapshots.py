"""Snapshots of the table backend's search indexes (agentmem/search/snapshots.py): a container new to a user
loads the user's index from one S3 object and catches up from the change log, instead of reading every entry.

Only with ``search_backend=table`` (OpenSearch holds the vectors itself):
- the bucket: one object per user partition (``partitions/<sha256>.snap``: no user id in a key), encrypted
  with the stack's key, TLS only, no public access; objects expire after :data:`KEPT_DAYS` without being
  written again (derived data: a user whose snapshot expired is read whole once and gets a new one);
- the request queue (encrypted with the stack's key: a message names a user's partition) and its dead-letter
  queue: the API sends a partition's name when a search had to read it whole or catch up far past its
  snapshot; the snapshot function consumes it and writes the object;
- grants: the API reads objects and sends requests; the snapshot function reads the user's items and the
  change log (GetItem, Query), reads and writes objects (and deletes one it wrote across an erasure); the
  erasure steps delete a user's objects and check they are gone. The key only through S3 and SQS.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from agentmem.settings import Env
from infra.components.storage import KEY_ACTIONS, QUEUE_CONSUMER_ACTIONS, Storage

KEPT_DAYS = 30
"""A snapshot not written again for this long is deleted by the bucket's lifecycle (a backstop: an erasure
deletes the user's at once)."""
MEMORY_MB = 1024
"""As the API's: the function holds the user's index, as the API does, to write it."""
TIMEOUT_SECONDS = 60
BATCH_SIZE = 10
VISIBILITY_TIMEOUT = Duration.seconds(6 * TIMEOUT_SECONDS)
"""Lambda's guidance for a queue it consumes: six times the function's timeout."""
MAX_RECEIVES = 3
MIN_SQS_CONCURRENCY = 2
"""Lambda's smallest maximum concurrency for an SQS event source mapping."""
OBJECTS = "partitions/*"
"""Where the objects are (agentmem/search/snapshots.py ``snapshot_key``): every grant names this prefix."""


class Snapshots(Construct):
    """The bucket, the request queue with its dead-letter queue, the snapshot function (made by
    ``new_function`` in this scope) and its mapping; :meth:`allow_reads` and :meth:`allow_erasure` grant the
    API and the erasure steps their part."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: Storage,
        removal: RemovalPolicy,
        new_function: Callable[..., lambda_.Function],
        reserved_concurrency: int,
    ) -> None:
        super().__init__(scope, construct_id)
        if reserved_concurrency < MIN_SQS_CONCURRENCY:
            raise ValueError(
                f"the snapshot function needs a reserved concurrency of at least {MIN_SQS_CONCURRENCY} (its queue's "
                f"mapping invokes it up to that many at once), not {reserved_concurrency}"
            )
        self._storage = storage
        self.bucket = storage.private_bucket(self, "Bucket", kept_days=KEPT_DAYS)
        self.dead_letters = sqs.Queue(
            self,
            "RequestsDlq",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=storage.key,
            enforce_ssl=True,
            retention_period=Duration.days(4),
            removal_policy=removal,
        )
        self.requests = sqs.Queue(
            self,
            "Requests",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=storage.key,
            enforce_ssl=True,
            visibility_timeout=VISIBILITY_TIMEOUT,
            retention_period=Duration.days(1),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letters, max_receive_count=MAX_RECEIVES),
            removal_policy=removal,
        )
        self.environment = {Env.SNAPSHOTS: "s3", Env.SNAPSHOT_BUCKET: self.bucket.bucket_name}
        """What every function that reads or deletes snapshots is given (the API also the queue's URL)."""
        # The writer never asks for a snapshot itself: no queue URL.
        self.function = new_function(
            "Function",
            "snapshots",
            scope=self,
            memory=MEMORY_MB,
            timeout=TIMEOUT_SECONDS,
            description="search index snapshots (table backend)",
            reserved_concurrency=reserved_concurrency,
            extra_environment=self.environment,
        )
        lambda_.EventSourceMapping(
            self,
            "Asked",
            target=self.function,
            event_source_arn=self.requests.queue_arn,
            batch_size=BATCH_SIZE,
            max_batching_window=Duration.seconds(5),
            report_batch_item_failures=True,
            # As many concurrent invocations as the function reserves, never more: a batch the mapping sends past the
            # reservation is throttled, goes back to the queue as a failed receive and, after MAX_RECEIVES of them, to
            # the dead-letter queue though nothing failed (dev's 2 against a reservation of 1 did that). Lambda takes
            # no maximum below 2, so the reservation is at least 2 (infra/components/compute.py Concurrency).
            max_concurrency=reserved_concurrency,
        )
        role = self.function.role
        assert role is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=QUEUE_CONSUMER_ACTIONS, resources=[self.requests.queue_arn])
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                resources=[self.bucket.arn_for_objects(OBJECTS)],
            )
        )
        storage.grant_actions(role, ["dynamodb:GetItem", "dynamodb:Query"])
        storage.grant_key(role, KEY_ACTIONS, via=("s3", "sqs"))

    def allow_reads(self, api: lambda_.Function) -> None:
        """The API: read a snapshot, ask for one."""
        for name, value in self.environment.items():
            api.add_environment(name, value)
        api.add_environment(Env.SNAPSHOT_QUEUE_URL, self.requests.queue_url)
        api.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(OBJECTS)])
        )
        api.add_to_role_policy(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.requests.queue_arn]))
        self._storage.grant_key(api.role, KEY_ACTIONS, via=("s3", "sqs"))  # type: ignore[arg-type]

    def allow_erasure(self, steps: lambda_.Function) -> None:
        """The erasure steps: delete the user's snapshots and check that none is left (HeadObject needs
        s3:GetObject; it reads no content, so no key)."""
        for name, value in self.environment.items():
            steps.add_environment(name, value)
        steps.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:DeleteObject", "s3:GetObject"], resources=[self.bucket.arn_for_objects(OBJECTS)]
            )
        )
