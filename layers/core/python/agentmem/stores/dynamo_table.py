"""The cloud Table: one DynamoDB table (``pk`` hash key, ``sk`` range key, ``ttl`` for expiry).

boto3 lives only here. The client is created on first use (never at import), retries throttling with
botocore's adaptive mode, and AWS error codes are translated into the library's errors.
"""

from __future__ import annotations

import contextvars
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from agentmem import capacity
from agentmem.errors import ConditionFailed, InvalidInput, RateLimited, Unavailable
from agentmem.stores.table import (
    MAX_TRANSACTION_ITEMS,
    TTL_ATTRIBUTE,
    Add,
    Check,
    Condition,
    Delete,
    Item,
    Key,
    Page,
    Put,
    WriteOp,
    check_items,
    is_expired,
    write_outcome,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

T = TypeVar("T")
R = TypeVar("R")

_THROTTLING = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TransactionInProgressException",
    "TransactionConflictException",
}
_BATCH_WRITE_SIZE = 25
_BATCH_GET_SIZE = 100
_MAX_BATCH_ATTEMPTS = 8
_MAX_CONFLICT_ATTEMPTS = 16
_CONFLICT_BACKOFF_BASE = 0.02
_CONFLICT_BACKOFF_CAP = 1.0
"""A refused write waits a random time up to 20 ms, 40 ms, ... 1 s (full jitter) before each new attempt:
at most about 6 s in all, inside API Gateway's 29."""


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; the port speaks int (floats are never stored)."""
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return sorted(_plain(v) for v in value)
    if hasattr(value, "value") and type(value).__name__ == "Binary":
        return bytes(value.value)
    return value


class DynamoTable:
    batches_in_order = False

    def __init__(
        self,
        table_name: str,
        *,
        client: DynamoDBClient | None = None,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        concurrency: int = 8,
    ) -> None:
        self.table_name = table_name
        self._concurrency = max(1, concurrency)
        self._client = client
        self._endpoint_url = endpoint_url
        self._region_name = region_name
        self._serializer: Any = None
        self._deserializer: Any = None

    # -- plumbing ----------------------------------------------------------------------------------

    @property
    def client(self) -> DynamoDBClient:
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "dynamodb",
                endpoint_url=self._endpoint_url,
                region_name=self._region_name,
                config=Config(retries={"max_attempts": 8, "mode": "adaptive"}, connect_timeout=3, read_timeout=10),
            )
        return self._client

    def _to_wire(self, item: Mapping[str, Any]) -> dict[str, Any]:
        if self._serializer is None:
            from boto3.dynamodb.types import TypeSerializer

            self._serializer = TypeSerializer()
        try:
            return {k: self._serializer.serialize(v) for k, v in item.items()}
        except TypeError as exc:
            raise InvalidInput(f"value cannot be stored in DynamoDB: {exc}") from exc

    def _from_wire(self, raw: Mapping[str, Any]) -> Item:
        if self._deserializer is None:
            from boto3.dynamodb.types import TypeDeserializer

            self._deserializer = TypeDeserializer()
        return {k: _plain(self._deserializer.deserialize(v)) for k, v in raw.items()}

    def _retrying(self, operation: str, **kwargs: Any) -> Any:
        """``_call``, run again (bounded, full jitter) while DynamoDB refuses it for contention: throttling,
        or a transaction conflict (DynamoDB cancels a transaction when one of its items, a condition check
        included, is part of another ongoing one, and refuses a single write to such an item). A refused
        request wrote nothing, so running it again is safe."""
        for attempt in range(_MAX_CONFLICT_ATTEMPTS):
            try:
                return self._call(operation, **kwargs)
            except RateLimited:
                if attempt == _MAX_CONFLICT_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, min(_CONFLICT_BACKOFF_CAP, _CONFLICT_BACKOFF_BASE * 2**attempt)))
        raise AssertionError("unreachable")

    def _call(self, operation: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, operation)(**kwargs)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise ConditionFailed("the item is not in the state the write required") from exc
            if code == "TransactionCanceledException":
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if "ConditionalCheckFailed" in reasons:
                    raise ConditionFailed("a transaction condition did not hold; nothing was written") from exc
                if any(r in ("ThrottlingError", "TransactionConflict") for r in reasons):
                    raise RateLimited("the table is busy; retry the request") from exc
                raise Unavailable(f"transaction cancelled: {reasons}") from exc
            if code in _THROTTLING:
                raise RateLimited("the table is throttling requests; retry later") from exc
            if code == "ValidationException":
                raise InvalidInput(f"the table rejected the request: {exc.response['Error'].get('Message')}") from exc
            raise Unavailable(f"DynamoDB error {code}") from exc
        except BotoCoreError as exc:
            raise Unavailable(f"DynamoDB is unreachable: {type(exc).__name__}") from exc

    @staticmethod
    def _condition(condition: Condition | None, names: dict[str, str], values: dict[str, Any]) -> str | None:
        """The condition as DynamoDB evaluates it, with an item past its ``ttl`` (which TTL has not removed
        yet, for up to 48 hours) counted as absent, as every read here and the SQLite table count it."""
        if condition is None:
            return None
        parts: list[str] = []
        if condition.exists is not None or condition.equals or condition.absent:
            names["#ttl"] = TTL_ATTRIBUTE
            values[":now"] = int(time.time())
        if condition.exists is False:
            parts.append("(attribute_not_exists(pk) OR #ttl <= :now)")
        elif condition.exists is True or condition.equals or condition.absent:
            parts.append("attribute_exists(pk) AND (attribute_not_exists(#ttl) OR #ttl > :now)")
        for i, (name, expected) in enumerate(condition.equals.items()):
            names[f"#c{i}"] = name
            values[f":c{i}"] = expected
            parts.append(f"#c{i} = :c{i}")
        for i, name in enumerate(condition.absent):
            names[f"#a{i}"] = name
            parts.append(f"attribute_not_exists(#a{i})")
        return " AND ".join(parts) or None

    def _conditional_args(self, condition: Condition | None) -> dict[str, Any]:
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        expression = self._condition(condition, names, values)
        args: dict[str, Any] = {}
        if expression:
            args["ConditionExpression"] = expression
        if names:
            args["ExpressionAttributeNames"] = names
        if values:
            args["ExpressionAttributeValues"] = self._to_wire(values)
        return args

    @staticmethod
    def _key(pk: str, sk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": sk}}

    # -- reads -------------------------------------------------------------------------------------

    def get(self, pk: str, sk: str) -> Item | None:
        response = self._call("get_item", TableName=self.table_name, Key=self._key(pk, sk), ConsistentRead=True)
        raw = response.get("Item")
        item = self._from_wire(raw) if raw is not None else None
        capacity.get(item)
        return None if item is None or is_expired(item) else item

    def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        unique = list(dict.fromkeys(keys))
        found: list[Item] = []
        for start in range(0, len(unique), _BATCH_GET_SIZE):
            request: dict[str, Any] = {
                self.table_name: {
                    "Keys": [self._key(pk, sk) for pk, sk in unique[start : start + _BATCH_GET_SIZE]],
                    "ConsistentRead": True,
                }
            }
            for attempt in range(_MAX_BATCH_ATTEMPTS):
                asked = len(request[self.table_name]["Keys"])
                response = self._call("batch_get_item", RequestItems=request)
                page = [self._from_wire(raw) for raw in response.get("Responses", {}).get(self.table_name, [])]
                request = response.get("UnprocessedKeys") or {}
                capacity.batch_get(asked - len(request.get(self.table_name, {}).get("Keys", [])), page)
                found.extend(page)
                if not request:
                    break
                _backoff(attempt)
            else:
                raise RateLimited("the table kept throttling a batch read; retry later")
        return [item for item in found if not is_expired(item)]

    def query(
        self,
        pk: str,
        prefix: str = "",
        *,
        limit: int | None = None,
        descending: bool = False,
        start_after: str | None = None,
        include_expired: bool = False,
    ) -> Page:
        args: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk" + (" AND begins_with(sk, :prefix)" if prefix else ""),
            "ExpressionAttributeValues": {":pk": {"S": pk}, **({":prefix": {"S": prefix}} if prefix else {})},
            "ScanIndexForward": not descending,
            "ConsistentRead": True,
        }
        if start_after is not None:
            args["ExclusiveStartKey"] = self._key(pk, start_after)
        items: list[Item] = []
        while True:
            if limit is not None:
                args["Limit"] = limit - len(items)
            response = self._call("query", TableName=self.table_name, **args)
            found = [self._from_wire(raw) for raw in response.get("Items", [])]
            capacity.query(found)
            items.extend(item for item in found if include_expired or not is_expired(item))
            last = response.get("LastEvaluatedKey")
            if last is None:
                return Page(items, None)
            if limit is not None and len(items) >= limit:
                return Page(items, items[-1]["sk"] if items else last["sk"]["S"])
            args["ExclusiveStartKey"] = last

    def scan_keys(self, sk_prefix: str) -> Iterator[Key]:
        """Keys of every item (any partition) whose sort key starts with ``sk_prefix`` (admin jobs only: a Scan)."""
        args: dict[str, Any] = {
            "FilterExpression": "begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":prefix": {"S": sk_prefix}},
            "ProjectionExpression": "pk, sk",
        }
        while True:
            response = self._call("scan", TableName=self.table_name, **args)
            for raw in response.get("Items", []):
                yield raw["pk"]["S"], raw["sk"]["S"]
            last = response.get("LastEvaluatedKey")
            if last is None:
                return
            args["ExclusiveStartKey"] = last

    # -- writes ------------------------------------------------------------------------------------

    def put(self, item: Item, condition: Condition | None = None) -> None:
        check_items([item])
        wire = self._to_wire(item)
        capacity.put(item)
        self._retrying("put_item", TableName=self.table_name, Item=wire, **self._conditional_args(condition))

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None:
        key = self._key(pk, sk)
        capacity.delete(pk, sk)
        self._retrying("delete_item", TableName=self.table_name, Key=key, **self._conditional_args(condition))

    def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        check_items(puts)
        requests: dict[Key, dict[str, Any]] = {}
        for item in puts:
            requests[(item["pk"], item["sk"])] = {"PutRequest": {"Item": self._to_wire(item)}}
        for pk, sk in deletes:
            requests[(pk, sk)] = {"DeleteRequest": {"Key": self._key(pk, sk)}}
        capacity.batch_write(puts, deletes)
        pending = list(requests.values())
        chunks = [pending[start : start + _BATCH_WRITE_SIZE] for start in range(0, len(pending), _BATCH_WRITE_SIZE)]
        self._each(self._batch_write_chunk, chunks)

    def _batch_write_chunk(self, requests: list[dict[str, Any]]) -> None:
        chunk: dict[str, Any] = {self.table_name: requests}
        for attempt in range(_MAX_BATCH_ATTEMPTS):
            response = self._call("batch_write_item", RequestItems=chunk)
            chunk = response.get("UnprocessedItems") or {}
            if not chunk:
                return
            _backoff(attempt)
        raise RateLimited("the table kept throttling a batch write; retry later")

    def _each(self, call: Callable[[T], R], args: Sequence[T]) -> list[R]:
        """``call`` on each of ``args``: concurrently (up to ``concurrency`` threads) when there are several."""
        if len(args) <= 1 or self._concurrency == 1:
            return [call(arg) for arg in args]
        from concurrent.futures import ThreadPoolExecutor

        _ = self.client  # created once, before the threads share it (boto3 clients are thread-safe)
        # Each task runs in a copy of the caller's context, so what it charges counts for the caller.
        tasks = [(contextvars.copy_context(), arg) for arg in args]
        with ThreadPoolExecutor(max_workers=min(self._concurrency, len(args))) as pool:
            return list(pool.map(lambda task: task[0].run(call, task[1]), tasks))

    def transact_write_each(self, batches: Sequence[Sequence[WriteOp]]) -> list[ConditionFailed | None]:
        """Independent transactions, sent concurrently."""
        return self._each(lambda ops: write_outcome(self.transact_write, ops), batches)

    def transact_write(self, ops: Sequence[WriteOp]) -> None:
        """One TransactWriteItems; retried (bounded, with backoff) when cancelled by a conflict or throttling:
        concurrent transactions that touch one item (the user's deletion mark, a partition's statistics)
        cancel each other, and a cancelled transaction wrote nothing, so running it again is safe."""
        if len(ops) > MAX_TRANSACTION_ITEMS:
            raise InvalidInput(f"a transaction holds at most {MAX_TRANSACTION_ITEMS} items")
        check_items(op.item for op in ops if isinstance(op, Put))
        items = [self._transact_item(op) for op in ops]
        if not items:
            return
        capacity.transaction(
            [op.item for op in ops if isinstance(op, Put)],
            [(op.pk, op.sk) for op in ops if isinstance(op, Delete)],
            updates=sum(isinstance(op, Add) for op in ops),
            checks=sum(isinstance(op, Check) for op in ops),
        )
        self._retrying("transact_write_items", TransactItems=items)

    def _transact_item(self, op: WriteOp) -> dict[str, Any]:
        target: dict[str, Any] = {"TableName": self.table_name}
        if isinstance(op, Put):
            target["Item"] = self._to_wire(op.item)
        else:
            target["Key"] = self._key(op.pk, op.sk)
        if isinstance(op, Add):
            target.update(self._update_args(op.deltas, op.condition))
            return {"Update": target}
        target.update(self._conditional_args(op.condition))
        kind = {Put: "Put", Delete: "Delete", Check: "ConditionCheck"}[type(op)]
        return {kind: target}

    def _update_args(self, deltas: Mapping[str, int], condition: Condition | None) -> dict[str, Any]:
        """An ``ADD`` of ``deltas`` (and the condition, if any) as UpdateItem arguments."""
        names = {f"#a{i}": name for i, name in enumerate(deltas)}
        values: dict[str, Any] = {f":a{i}": {"N": str(delta)} for i, delta in enumerate(deltas.values())}
        args: dict[str, Any] = {"UpdateExpression": "ADD " + ", ".join(f"#a{i} :a{i}" for i in range(len(deltas)))}
        conditional = self._conditional_args(condition)
        if "ConditionExpression" in conditional:
            args["ConditionExpression"] = conditional["ConditionExpression"]
        args["ExpressionAttributeNames"] = {**names, **conditional.get("ExpressionAttributeNames", {})}
        args["ExpressionAttributeValues"] = {**values, **conditional.get("ExpressionAttributeValues", {})}
        return args

    def increment(
        self,
        pk: str,
        sk: str,
        deltas: Mapping[str, int],
        condition: Condition | None = None,
        *,
        expires_at: int | None = None,
    ) -> Item:
        args = self._update_args(deltas, condition)
        if expires_at is not None:
            args["UpdateExpression"] += " SET #ttl = if_not_exists(#ttl, :ttl)"
            args["ExpressionAttributeNames"]["#ttl"] = TTL_ATTRIBUTE
            args["ExpressionAttributeValues"][":ttl"] = {"N": str(expires_at)}
        response = self._retrying(
            "update_item", TableName=self.table_name, Key=self._key(pk, sk), ReturnValues="ALL_NEW", **args
        )
        item = self._from_wire(response["Attributes"])
        capacity.update(item)
        return item

    def ping(self) -> None:
        self._call("describe_table", TableName=self.table_name)

    # -- administration ----------------------------------------------------------------------------

    def create(self) -> None:
        """Create the table as the CDK stack does (for local DynamoDB / moto endpoints and tests)."""
        client = self.client
        existing = client.list_tables().get("TableNames", [])
        if self.table_name in existing:
            return
        client.create_table(
            TableName=self.table_name,
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        client.get_waiter("table_exists").wait(TableName=self.table_name)
        client.update_time_to_live(
            TableName=self.table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
        )


def _backoff(attempt: int) -> None:
    time.sleep(min(2.0, 0.05 * (2**attempt)) * random.uniform(0.5, 1.0))
