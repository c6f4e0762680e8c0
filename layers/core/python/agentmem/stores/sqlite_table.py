"""The embedded Table: one SQLite file in WAL mode, shared safely by threads and processes.

Each thread gets its own connection; every write runs in a ``BEGIN IMMEDIATE`` transaction, so
conditional writes and counters are serialised by SQLite's write lock, across the local server's
worker processes too (a writer waits up to 30 s for the lock). Item writes are fsynced before they
return (``synchronous=FULL``): an acknowledged item survives a power loss. Counters (``increment``)
ride on the next synced commit instead of paying an fsync on every request (see ``increment``).
"""

from __future__ import annotations

import base64
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentmem import capacity
from agentmem.errors import ConditionFailed, InvalidInput, Unavailable
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
    check_item,
    is_expired,
    op_key,
    prefix_upper_bound,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    data TEXT NOT NULL,
    ttl INTEGER,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID
"""
_CHECKPOINT_PAGES = 10_000
"""WAL pages (4 KiB) after which a commit copies the log into the database: SQLite's default is 1,000. A
checkpoint writes each page once however often it changed since the last one, and fsyncs the database, so
fewer, larger checkpoints write less: a graph write of 100 entities dirties ~500 pages, and with the
default every other one paid a ~10 ms checkpoint."""
_WAL_KEPT_BYTES = 64 * 1024 * 1024
"""The log is truncated back to this size after a checkpoint that let it grow beyond."""
_TTL_INDEX = "CREATE INDEX IF NOT EXISTS items_by_ttl ON items (ttl) WHERE ttl IS NOT NULL"
_BYTES_TAG = "__bytes__"


def _refuse_floats(value: dict[str, Any] | list[Any] | tuple[Any, ...]) -> None:
    """DynamoDB stores no floats (boto3 refuses them): neither does this table, so a float is caught here."""
    for inner in value.values() if isinstance(value, dict) else value:
        kind = type(inner)
        if kind is float:
            raise InvalidInput("floats cannot be stored in the table; use str or bytes")
        if kind is dict or kind is list or kind is tuple:
            _refuse_floats(inner)


def _tag_bytes(value: Any) -> Any:
    if isinstance(value, bytes):
        return {_BYTES_TAG: base64.b64encode(value).decode("ascii")}
    raise TypeError(f"{type(value).__name__} cannot be stored in the table")


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_tag_bytes)


def _decode_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _BYTES_TAG in obj:
        return base64.b64decode(obj[_BYTES_TAG])
    return obj


def _dumps(item: Item) -> str:
    body = {k: v for k, v in item.items() if k != "pk" and k != "sk"}
    _refuse_floats(body)
    return _ENCODER.encode(body)


_Row = tuple[str, str, str, int | None]
_UPSERT = "INSERT OR REPLACE INTO items (pk, sk, data, ttl) VALUES (?, ?, ?, ?)"


def row_bound(pk: str, sk: str, data: str) -> int:
    """At least what DynamoDB counts for the item stored as ``data``: four bytes per character of the row
    (the JSON spells every name and value with at least one character per byte or small number DynamoDB
    counts; a test checks the bound on arbitrary items)."""
    return 4 * (len(pk) + len(sk) + len(data)) + 16


def _row(item: Item) -> _Row:
    """The item as a row, refused as DynamoDB refuses it (measured by the row it makes)."""
    pk, sk = item["pk"], item["sk"]
    data = _dumps(item)
    check_item(item, row_bound(pk, sk, data))
    ttl = item.get(TTL_ATTRIBUTE)
    return pk, sk, data, ttl if isinstance(ttl, int) else None


def _loads(pk: str, sk: str, data: str) -> Item:
    # The object hook costs more than the parse itself; most items hold no bytes.
    item: Item = json.loads(data, object_hook=_decode_hook) if _BYTES_TAG in data else json.loads(data)
    item["pk"] = pk
    item["sk"] = sk
    return item


def _holds(condition: Condition | None, current: Item | None) -> bool:
    if condition is None:
        return True
    if condition.exists is True and current is None:
        return False
    if condition.exists is False and current is not None:
        return False
    if condition.absent and (current is None or any(name in current for name in condition.absent)):
        return False
    return all(not (current is None or current.get(name) != expected) for name, expected in condition.equals.items())


def _added(current: Item | None, pk: str, sk: str, deltas: Mapping[str, int]) -> Item:
    item: Item = dict(current) if current is not None else {"pk": pk, "sk": sk}
    for name, delta in deltas.items():
        item[name] = int(item.get(name, 0)) + delta
    return item


def _charge_transaction(ops: Sequence[WriteOp]) -> None:
    capacity.transaction(
        [op.item for op in ops if isinstance(op, Put)],
        [(op.pk, op.sk) for op in ops if isinstance(op, Delete)],
        updates=sum(isinstance(op, Add) for op in ops),
        checks=sum(isinstance(op, Check) for op in ops),
    )


class SqliteTable:
    batches_in_order = True

    def __init__(self, path: str | Path) -> None:
        self._path = str(path)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        with self._write() as conn:
            conn.execute(_SCHEMA)
            conn.execute(_TTL_INDEX)

    @property
    def path(self) -> str:
        return self._path

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                # timeout: how long a writer waits for another thread's or process's write lock.
                conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                # FULL: a commit is on disk (the WAL fsynced) before the write is acknowledged; NORMAL could
                # lose the last commits on power loss.
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_PAGES}")
                conn.execute(f"PRAGMA journal_size_limit={_WAL_KEPT_BYTES}")
            except sqlite3.Error as exc:
                raise Unavailable(f"cannot open the SQLite store: {exc}") from exc
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _write(self, *, synced: bool = True) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        if not synced:
            conn.execute("PRAGMA synchronous=NORMAL")
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise Unavailable(f"the SQLite store is not writable: {exc}") from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")
        finally:
            if not synced:
                conn.execute("PRAGMA synchronous=FULL")

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    # -- reads -------------------------------------------------------------------------------------

    def _held(self, conn: sqlite3.Connection, pk: str, sk: str) -> Item | None:
        """The item as stored, expired or not."""
        row = conn.execute("SELECT data FROM items WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
        return _loads(pk, sk, row[0]) if row is not None else None

    def _get(self, conn: sqlite3.Connection, pk: str, sk: str) -> Item | None:
        item = self._held(conn, pk, sk)
        return None if item is None or is_expired(item) else item

    def get(self, pk: str, sk: str) -> Item | None:
        item = self._held(self._connection(), pk, sk)
        capacity.get(item)
        return None if item is None or is_expired(item) else item

    def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        conn = self._connection()
        unique = list(dict.fromkeys(keys))
        held = [item for item in (self._held(conn, pk, sk) for pk, sk in unique) if item is not None]
        capacity.batch_get(len(unique), held)
        return [item for item in held if not is_expired(item)]

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
        clauses = ["pk = ?"]
        params: list[Any] = [pk]
        if prefix:
            clauses.append("sk >= ? AND sk < ?")
            params += [prefix, prefix_upper_bound(prefix)]
        if start_after is not None:
            clauses.append("sk < ?" if descending else "sk > ?")
            params.append(start_after)
        if not include_expired:
            clauses.append("(ttl IS NULL OR ttl > ?)")
            params.append(int(time.time()))
        sql = f"SELECT sk, data FROM items WHERE {' AND '.join(clauses)} ORDER BY sk {'DESC' if descending else 'ASC'}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit + 1)
        rows = self._connection().execute(sql, params).fetchall()
        more = limit is not None and len(rows) > limit
        rows = rows[:limit] if limit is not None else rows
        items = [_loads(pk, sk, data) for sk, data in rows]
        capacity.query(items)
        return Page(items, items[-1]["sk"] if more and items else None)

    def scan_keys(self, sk_prefix: str) -> Iterator[Key]:
        """Keys of every item (any partition) whose sort key starts with ``sk_prefix`` (admin jobs only)."""
        rows = (
            self._connection()
            .execute("SELECT pk, sk FROM items WHERE sk >= ? AND sk < ?", (sk_prefix, prefix_upper_bound(sk_prefix)))
            .fetchall()
        )
        yield from ((str(pk), str(sk)) for pk, sk in rows)

    def expired_items(self, now: int, limit: int) -> list[Item]:
        """Items whose ``ttl`` is at or before ``now`` (epoch seconds): what the sweep deletes."""
        rows = (
            self._connection()
            .execute("SELECT pk, sk, data FROM items WHERE ttl IS NOT NULL AND ttl <= ? LIMIT ?", (now, limit))
            .fetchall()
        )
        return [_loads(pk, sk, data) for pk, sk, data in rows]

    # -- writes ------------------------------------------------------------------------------------

    def put(self, item: Item, condition: Condition | None = None) -> None:
        row = _row(item)
        with self._write() as conn:
            capacity.put(item)
            if condition is not None and not _holds(condition, self._get(conn, item["pk"], item["sk"])):
                raise ConditionFailed("the item is not in the state the write required")
            conn.execute(_UPSERT, row)

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None:
        with self._write() as conn:
            capacity.delete(pk, sk)
            if condition is not None and not _holds(condition, self._get(conn, pk, sk)):
                raise ConditionFailed("the item is not in the state the delete required")
            conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", (pk, sk))

    def batch_write(self, puts: Sequence[Item] = (), deletes: Sequence[Key] = ()) -> None:
        if not puts and not deletes:
            return
        rows = [_row(item) for item in puts]
        capacity.batch_write(puts, deletes)
        with self._write() as conn:
            conn.executemany(_UPSERT, rows)
            conn.executemany("DELETE FROM items WHERE pk = ? AND sk = ?", list(deletes))

    def transact_write(self, ops: Sequence[WriteOp]) -> None:
        rows = self._checked_transaction(ops)
        _charge_transaction(ops)
        with self._write() as conn:
            self._apply(conn, ops, rows)

    def transact_write_each(self, batches: Sequence[Sequence[WriteOp]]) -> list[ConditionFailed | None]:
        """Every batch in one SQLite transaction, each inside its own savepoint: a batch whose condition
        fails is rolled back alone, and the others commit together (one fsync rather than one per batch)."""
        if not batches:
            return []
        rows = [self._checked_transaction(ops) for ops in batches]
        for ops in batches:
            _charge_transaction(ops)
        outcomes: list[ConditionFailed | None] = []
        with self._write() as conn:
            for ops, batch_rows in zip(batches, rows, strict=True):
                conn.execute("SAVEPOINT batch")
                try:
                    self._apply(conn, ops, batch_rows)
                except ConditionFailed as refused:
                    conn.execute("ROLLBACK TO batch")
                    outcomes.append(refused)
                else:
                    outcomes.append(None)
                conn.execute("RELEASE batch")
        return outcomes

    @staticmethod
    def _checked_transaction(ops: Sequence[WriteOp]) -> list[_Row | None]:
        """Refuse what DynamoDB refuses in a transaction, before anything is written; return each put's row."""
        if len(ops) > MAX_TRANSACTION_ITEMS:
            raise InvalidInput(f"a transaction holds at most {MAX_TRANSACTION_ITEMS} items")
        if len({op_key(op) for op in ops}) != len(ops):
            raise InvalidInput("a transaction cannot hold two operations on one item")
        return [_row(op.item) if isinstance(op, Put) else None for op in ops]

    def _apply(self, conn: sqlite3.Connection, ops: Sequence[WriteOp], rows: Sequence[_Row | None]) -> None:
        # Only conditions and counters need the current item (most ops of a batch are plain puts).
        current = [
            self._get(conn, *op_key(op)) if op.condition is not None or isinstance(op, Add) else None for op in ops
        ]
        for op, item in zip(ops, current, strict=True):
            if op.condition is not None and not _holds(op.condition, item):
                raise ConditionFailed("a transaction condition did not hold; nothing was written")
        for op, row, item in zip(ops, rows, current, strict=True):
            if row is not None:
                conn.execute(_UPSERT, row)
            elif isinstance(op, Delete):
                conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", (op.pk, op.sk))
            elif isinstance(op, Add):
                conn.execute(_UPSERT, _row(_added(item, op.pk, op.sk, op.deltas)))

    def increment(
        self,
        pk: str,
        sk: str,
        deltas: Mapping[str, int],
        condition: Condition | None = None,
        *,
        expires_at: int | None = None,
    ) -> Item:
        # Counters (usage metering on every request, search statistics, deletion counts) commit without an
        # fsync of their own: WAL frames are replayed in order, so the next synced commit of any process
        # makes them durable too. A power loss can only lose the counter updates made after the last item
        # write; never an item.
        with self._write(synced=False) as conn:
            current = self._get(conn, pk, sk)
            if condition is not None and not _holds(condition, current):
                raise ConditionFailed("the item is not in the state the update required")
            item = _added(current, pk, sk, deltas)
            if expires_at is not None:
                item.setdefault(TTL_ATTRIBUTE, expires_at)
            conn.execute(_UPSERT, _row(item))
        capacity.update(item)
        return item

    def ping(self) -> None:
        try:
            self._connection().execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise Unavailable(f"the SQLite store is unreachable: {exc}") from exc
