"""moto's DynamoDB made faithful and affordable for the tests and the bench: one request at a time (as
DynamoDB applies each atomically) and transactions backed up by the items they write."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

_MOTO_DYNAMODB_LOCK = threading.RLock()


def serialise_moto_dynamodb() -> None:
    """Make moto apply each DynamoDB request atomically, as DynamoDB does.

    moto's in-memory backend has no locking, so two threads' UpdateItem ADD or conditional PutItem can
    interleave inside the emulator and lose a write that real DynamoDB never loses. Serialising requests
    restores DynamoDB's per-request atomicity; our code's concurrency is still exercised by real threads.
    """
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_serialised", False):
        return
    original = DynamoHandler.call_action

    def call_action(self: DynamoHandler) -> object:
        with _MOTO_DYNAMODB_LOCK:
            return original(self)

    call_action._serialised = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
    back_up_each_item_a_transaction_writes()


class _ItemBackups:
    """Stands in for the ``copy`` module inside moto's DynamoDB models, and backs transactions up by item.

    moto's ``transact_write_items`` backs up for a rollback with a ``copy.deepcopy`` of the whole table
    *per item of the transaction*: a 25-item transaction on a 20,000-item table took seconds and
    gigabytes, and the suite's workers were killed for memory. Here the transaction saves only what it
    can change, the items under its keys (and the table's stream length), and a failed transaction puts
    exactly those back: the same end state as moto's rollback. The whole-table copy is skipped (moto's
    own rollback then puts back the live table, a no-op). Everywhere else this is ``copy.deepcopy``.
    """

    def __init__(self, table_class: type) -> None:
        self._table_class = table_class
        self._local = threading.local()

    def __getattr__(self, name: str) -> object:
        return getattr(copy, name)

    def deepcopy(self, value: object, memo: dict[int, object] | None = None) -> object:
        if getattr(self._local, "in_transaction", False) and isinstance(value, self._table_class):
            return value
        return copy.deepcopy(value, memo)

    def transaction(self, original: Callable[..., None]) -> Callable[..., None]:
        def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
            saved = [self._save(backend, entry) for entry in transact_items]
            self._local.in_transaction = True
            try:
                original(backend, transact_items)
            except Exception:
                for table, hash_key, range_key, item, stream_length in reversed([s for s in saved if s]):
                    items = table.items[hash_key] if table.range_key_attr else table.items
                    slot = range_key if table.range_key_attr else hash_key
                    if item is None:
                        items.pop(slot, None)
                    else:
                        items[slot] = item
                    if table.stream_shard is not None:
                        del table.stream_shard.items[stream_length:]
                raise
            finally:
                self._local.in_transaction = False

        transact_write_items._item_backups = True  # type: ignore[attr-defined]
        return transact_write_items

    @staticmethod
    def _save(backend: Any, entry: dict[str, Any]) -> tuple[Any, Any, Any, Any, int] | None:
        """The table, key and a copy of the item one op of a transaction may change (None: none)."""
        op = next(iter(entry.values()), None)
        if not isinstance(op, dict):
            return None  # a malformed op: moto refuses the transaction before writing anything
        table = backend.tables.get(op.get("TableName"))
        if table is None:
            return None
        attributes = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        key = op.get("Key") or {name: op.get("Item", {}).get(name) for name in attributes}
        if any(key.get(name) is None for name in attributes):
            return None  # a malformed op: moto refuses the transaction before writing anything
        hash_key, range_key = backend.get_keys_value(table, key)
        current = table.get_item(hash_key, range_key)
        stream_length = 0 if table.stream_shard is None else len(table.stream_shard.items)
        return table, hash_key, range_key, copy.deepcopy(current), stream_length


def back_up_each_item_a_transaction_writes() -> None:
    from moto.dynamodb import models

    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_item_backups", False):
        return
    stand_in = _ItemBackups(models.Table)
    models.copy = stand_in  # type: ignore[assignment]
    backend.transact_write_items = stand_in.transaction(backend.transact_write_items)  # type: ignore[method-assign]


class TransactionConflicts:
    """DynamoDB's transaction conflicts, which moto does not model, on one boto3 DynamoDB client.

    From the DynamoDB Developer Guide ("Transaction conflict handling in DynamoDB"): a transaction
    conflict occurs when

    - a PutItem, UpdateItem or DeleteItem request for an item conflicts with an ongoing TransactWriteItems
      request that includes the same item: the request fails with ``TransactionConflictException``;
    - an item within a TransactWriteItems request is part of another ongoing transaction: the request is
      cancelled (``TransactionCanceledException``), with the reason ``TransactionConflict`` for that item
      and ``None`` for the others. Every item of the request counts, ``ConditionCheck`` items included.

    Here a TransactWriteItems is "ongoing" for ``hold_seconds`` from the moment it is sent (DynamoDB's
    own time to run one, about 10 ms; moto's, queued behind its lock, would overstate it many times).
    ``conflicts`` counts the requests refused, ``transactions`` those that ran.
    """

    def __init__(self, client: Any, hold_seconds: float = 0.010) -> None:
        self._lock = threading.Lock()
        self._in_flight: dict[tuple[str, str], int] = {}
        self._hold = hold_seconds
        self.conflicts = 0
        self.transactions = 0
        events = client.meta.events
        events.register("before-parameter-build.dynamodb.TransactWriteItems", self._begin)
        for operation in ("PutItem", "UpdateItem", "DeleteItem"):
            events.register(f"before-parameter-build.dynamodb.{operation}", self._single)

    @staticmethod
    def _key(key: dict[str, Any]) -> tuple[str, str]:
        return (key["pk"]["S"], key["sk"]["S"])

    def _transaction_keys(self, params: dict[str, Any]) -> list[tuple[str, str]]:
        keys = []
        for action in params["TransactItems"]:
            ((kind, body),) = action.items()
            keys.append(self._key(body["Item"] if kind == "Put" else body["Key"]))
        return keys

    def _refuse(self, operation: str, code: str, message: str, reasons: list[dict[str, str]] | None = None) -> None:
        from botocore.exceptions import ClientError

        self.conflicts += 1
        response: dict[str, Any] = {"Error": {"Code": code, "Message": message}}
        if reasons is not None:
            response["CancellationReasons"] = reasons
        raise ClientError(response, operation)

    def _begin(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        keys = self._transaction_keys(params)
        with self._lock:
            busy = [key in self._in_flight for key in keys]
            if any(busy):
                reasons = [{"Code": "TransactionConflict" if b else "None"} for b in busy]
                self._refuse(
                    "TransactWriteItems",
                    "TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific reasons",
                    reasons,
                )
            for key in keys:
                self._in_flight[key] = self._in_flight.get(key, 0) + 1
            self.transactions += 1
        try:
            time.sleep(self._hold)  # DynamoDB's time to run it (moto's own, behind its lock, is not DynamoDB's)
        finally:
            with self._lock:
                for key in keys:
                    self._in_flight[key] -= 1
                    if not self._in_flight[key]:
                        del self._in_flight[key]

    def _single(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        key = self._key(params["Item"] if "Item" in params else params["Key"])
        with self._lock:
            busy = key in self._in_flight
        if busy:
            self._refuse(model.name, "TransactionConflictException", "Transaction is ongoing for the item")
