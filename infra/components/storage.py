"""Storage: the single DynamoDB table, encrypted with a customer managed KMS key."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from agentmem.tenancy.keys import lookup_partition

TABLE_READ_ACTIONS = [
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DescribeTable",
]
TABLE_WRITE_ACTIONS = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"]
DELETION_ACTIONS = [
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
]
"""What the erasure steps do (agentmem.deletion): read the user's items, delete them in batches, write the
mark, the status and the receipt."""
OPERATOR_PARTITIONS = [lookup_partition("") + "*"]
"""Partitions only the operator writes (with the CLI's own credentials): the API key lookups (``K#<hash>``) and
the tenant records and key records (``K#T#<app>``: quota, usage-plan key), which the authorizer trusts. No
function role may touch them, except the authorizer's GetItem."""
KEY_ACTIONS = ["kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
"""What a service encrypting with the data key for its caller needs (DynamoDB, SQS, S3 ask KMS for data keys
and to decrypt them; none encrypts with the key itself, so no role holds ``kms:Encrypt``)."""
KEY_READ_ACTIONS = ["kms:Decrypt", "kms:DescribeKey"]
STREAM_READ_ACTIONS = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
QUEUE_CONSUMER_ACTIONS = [
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
]
"""What an SQS event source mapping does with its function's role (the queues encrypted with the data key)."""


def via_service(scope: Construct, *services: str) -> dict[str, dict[str, list[str]]]:
    """The condition that lets a role use the data key only through these services (``dynamodb``, ``sqs``,
    ``s3``) in the stack's Region, never directly: a role that leaks cannot decrypt what it copies out."""
    region = Stack.of(scope).region
    return {"StringEquals": {"kms:ViaService": [f"{service}.{region}.amazonaws.com" for service in services]}}


class Storage(Construct):
    """On-demand, PITR, CMK, TTL on ``ttl``; RETAIN + deletion protection + Contributor Insights (throttled keys)
    in prod. A stream (NEW_AND_OLD_IMAGES) only when something reads it (``stream``: the OpenSearch indexer,
    extraction): a stream nobody reads is a 24-hour copy of every write, personal data included, for nothing."""

    def __init__(self, scope: Construct, construct_id: str, *, production: bool, stream: bool) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.RETAIN if production else RemovalPolicy.DESTROY
        self._removal = removal
        self.key = kms.Key(
            self,
            "DataKey",
            description="Agent memory: table, queues, topic and vector collection",
            enable_key_rotation=True,
            removal_policy=removal,
            pending_window=Duration.days(30 if production else 7),
        )
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=self.key,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if stream else None,
            time_to_live_attribute="ttl",
            deletion_protection=production,
            removal_policy=removal,
            # In prod, CloudWatch Contributor Insights names the keys DynamoDB throttles (a busy tenant's hot item,
            # whose throttling is everyone's TableThrottles alarm): throttled-keys mode, meant to stay on, costs its
            # rules and only the throttled requests' events; the accessed-and-throttled mode (every request's event)
            # is for an investigation (docs/deploy.md). Dev: off.
            contributor_insights_specification=dynamodb.ContributorInsightsSpecification(
                enabled=True, mode=dynamodb.ContributorInsightsMode.THROTTLED_KEYS
            )
            if production
            else None,
        )

    def grant_read(self, role: iam.IRole) -> None:
        self._grant(role, TABLE_READ_ACTIONS)

    def grant_read_write(self, role: iam.IRole) -> None:
        self._grant(role, TABLE_READ_ACTIONS + TABLE_WRITE_ACTIONS)

    def grant_actions(self, role: iam.IRole, actions: list[str]) -> None:
        self._grant(role, actions)

    def grant_get_items(self, role: iam.IRole, partitions: list[str]) -> None:
        """GetItem only, and only of items whose partition key matches one of ``partitions`` (wildcards)."""
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem"],
                resources=[self.table.table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": partitions}},
            )
        )
        self.grant_key(role, KEY_READ_ACTIONS)

    def private_bucket(self, scope: Construct, construct_id: str, *, kept_days: int) -> s3.Bucket:
        """A bucket for data derived from the table: encrypted with its key, no public access, TLS only, each
        object deleted ``kept_days`` after it was written; kept or deleted with the stack as the key is.

        Prod keeps the table, the key and so these buckets: what they hold stays readable. Dev deletes the table and
        the key with the stack, so it deletes these buckets too, emptied first (CloudFormation deletes no bucket that
        holds objects): a bucket kept after its key is gone holds nothing anyone can read again, only memory text
        nobody can erase, and a bucket name taken. Emptying is CDK's auto-delete custom resource (a small Node.js
        function of CDK's, in dev only, run when the stack is deleted: not one of the stack's functions); keeping the
        key instead would keep a key billed every month after each dev stack, for data derived from a table gone."""
        production = self._removal == RemovalPolicy.RETAIN
        return s3.Bucket(
            scope,
            construct_id,
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(kept_days))],
            removal_policy=self._removal,
            auto_delete_objects=not production,
        )

    def grant_key(
        self, role: iam.IRole, actions: Sequence[str] = KEY_ACTIONS, *, via: Sequence[str] = ("dynamodb",)
    ) -> None:
        """The data key's ``actions``, only through the services ``via`` (:func:`via_service`)."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[self.key.key_arn], conditions=via_service(self, *via))
        )

    def stream_mapping(
        self, construct_id: str, function: lambda_.IFunction, **options: object
    ) -> lambda_.EventSourceMapping:
        """``function``'s event source mapping from the table's stream (``options`` as
        :class:`~aws_cdk.aws_lambda.EventSourceMapping` takes them), and the role's reads of the stream: the
        stream actions on this table's stream, ListStreams (which names no resource) and the key's reads through
        DynamoDB. CDK's ``DynamoEventSource`` would grant the key without that condition."""
        assert self.table.table_stream_arn is not None, "the table has no stream"
        mapping = lambda_.EventSourceMapping(
            function,
            construct_id,
            target=function,
            event_source_arn=self.table.table_stream_arn,
            **options,  # type: ignore[arg-type]
        )
        role = function.role
        assert role is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=STREAM_READ_ACTIONS, resources=[self.table.table_stream_arn])
        )
        role.add_to_principal_policy(iam.PolicyStatement(actions=["dynamodb:ListStreams"], resources=["*"]))
        self.grant_key(role, KEY_READ_ACTIONS)
        return mapping

    def _grant(self, role: iam.IRole, actions: list[str]) -> None:
        """Explicit actions on this table and its key only (no wildcard actions, no index/* resources), and
        none of them on an item of :data:`OPERATOR_PARTITIONS` (an explicit deny: a compromised function
        cannot mint an API key)."""
        role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=[self.table.table_arn]))
        role.add_to_principal_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                actions=actions,
                resources=[self.table.table_arn],
                conditions={"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": OPERATOR_PARTITIONS}},
            )
        )
        self.grant_key(role)
