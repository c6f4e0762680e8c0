"""A partition's change log, and the search indexes held in process that catch up from it (ADR 0004).

Every process that searches a partition keeps it in memory: memory entries (agentmem/search/partition.py)
and graph entities (agentmem/graph/search_index.py). On Lambda each container is such a process, and an
agent's loop writes in one and searches in another: a process must learn what the others changed
without reading the whole partition again. So each write, once its items are written, takes the next
number from the partition's version item (one atomic add, which also moves the counts BM25 reads; its
``epoch`` names this life of the partition: an erasure deletes the item, and the next write starts a new
epoch at version 1) and writes a log row ``<prefix><version>``: the ids (entry ids, entity names) it
changed, kept for :data:`LOG_SECONDS`. Memory entries and graph entities have a log each (:data:`MEMORY`,
:data:`GRAPH`).

A reader that holds version ``c`` reads the version item (one small read), and if it is at ``v > c``,
the log rows ``c + 1 .. v`` (one query) and the items they name: what it reads follows what changed, not
the size of the partition. A row can be missing for a moment (its writer has taken the number and not
yet written the row): the reader notes the number and looks for that row again next time; a writer that
died between the two leaves its number without a row, which readers forget after :data:`MISSING_SECONDS`
(its write was never acknowledged). Applying a row means reading its items as they are now, so rows may
be applied in any order, and more than once. Results are read from the items themselves, so an index that
is behind can rank an item that is gone (it is skipped), never show it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from agentmem.clock import new_id
from agentmem.errors import ConditionFailed
from agentmem.stores.table import Condition, Table

LOG_SECONDS = 7 * 24 * 3600
"""How long a log row is kept (DynamoDB TTL): a process that has not caught up for longer reads again."""
CATCH_UP_MARGIN_SECONDS = 24 * 3600
"""An index that has not caught up for nearly as long as rows are kept reads the partition again."""
MAX_LOG_ROWS = 500
"""The most log rows a reader catches up by; further behind, it reads the partition again."""
MAX_LOGGED_IDS = 1000
"""Ids one log row holds; a write that changed more is logged as a reset (readers read again)."""
MISSING_SECONDS = 60
"""How long a reader looks for a log row whose version was taken (longer than any request runs)."""
RECENT_ROWS = 100
"""Log rows a reader of the recent writes looks at, newest first."""
SEARCH_CACHE_ENV = "MEMORY_SEARCH_CACHE_MB"
"""The megabytes a process may hold of partitions; by default half of a Lambda function's memory
(``AWS_LAMBDA_FUNCTION_MEMORY_SIZE``), or 1,024 elsewhere."""


@dataclass(frozen=True, slots=True)
class Stats:
    """A partition's version item: its epoch and version, and the counts BM25 reads (memory's log)."""

    epoch: str | None = None
    version: int = 0
    docs: int = 0
    length: int = 0
    context_length: int = 0

    @classmethod
    def of(cls, item: dict[str, object] | None) -> Stats:
        if item is None:
            return cls()
        number = {k: int(item.get(k) or 0) for k in ("version", "docs", "length", "context_length")}  # type: ignore[call-overload]
        epoch = item.get("epoch")
        return cls(str(epoch) if epoch is not None else None, **number)


@dataclass(frozen=True, slots=True)
class Changes:
    """What a reader learnt from the log: the ids changed (None: read the partition again, a row named too
    many), and the versions whose rows are not there (yet)."""

    ids: set[str] | None
    missing: set[int]


@dataclass(frozen=True, slots=True)
class ChangeLog:
    """The version item and the log rows of one kind of item, by sort key."""

    stats_sk: str
    prefix: str

    def log_sk(self, version: int) -> str:
        return f"{self.prefix}{version:012d}"

    def stats(self, table: Table, partition: str) -> Stats:
        """The partition's version item as it is now, or as first read within :func:`one_read_of_heads`."""
        shared = _heads.get()
        if shared is None:
            return Stats.of(table.get(partition, self.stats_sk))
        key = (partition, self.stats_sk)
        if key not in shared:
            shared[key] = Stats.of(table.get(partition, self.stats_sk))
        return shared[key]

    def record(
        self,
        table: Table,
        partition: str,
        changed: Iterable[str],
        *,
        docs: int = 0,
        length: int = 0,
        context_length: int = 0,
        create: bool = True,
    ) -> int | None:
        """Log that the items ``changed`` were written, deleted or rewritten (after the fact), with what it
        did to the BM25 counts; return its version. ``create``: a partition without a version item gets one
        (a write); otherwise (a delete, a rewrite) nothing is logged there: an erasure swept it, or it never
        held such items, and no reader holds it."""
        deltas = {"version": 1, "docs": docs, "length": length, "context_length": context_length}
        deltas = {k: v for k, v in deltas.items() if v or k == "version"}
        try:  # a plain atomic add (it cannot create the item): the version it returns is this write's own
            version = int(table.increment(partition, self.stats_sk, deltas, Condition(exists=True))["version"])
        except ConditionFailed:
            if not create:
                return None
            first = {
                "pk": partition,
                "sk": self.stats_sk,
                "epoch": new_id(),
                **{k: max(0, v) for k, v in deltas.items()},
            }
            try:  # the partition's first write (checked against an erasure, as every creating write is)
                table.put(first, Condition(exists=False))
                version = 1
            except ConditionFailed:  # another write created it meanwhile
                version = int(table.increment(partition, self.stats_sk, deltas, Condition(exists=True))["version"])
        ids = sorted(set(changed))
        now = int(time.time())
        table.put(
            {
                "pk": partition,
                "sk": self.log_sk(version),
                "ids": ids if len(ids) <= MAX_LOGGED_IDS else None,
                "at": now,
                "ttl": now + LOG_SECONDS,
            }
        )
        return version

    def since(self, table: Table, partition: str, held: int, current: int, pending: Iterable[int] = ()) -> Changes:
        """The ids changed by the writes ``held + 1 .. current`` and by the earlier writes ``pending`` (rows a
        reader found missing before)."""
        wanted = set(range(held + 1, current + 1)) | set(pending)
        if len(wanted) > MAX_LOG_ROWS:
            return Changes(None, set())
        rows = (
            table.query(partition, self.prefix, start_after=self.log_sk(held), limit=current - held).items
            if current > held
            else []
        )
        earlier = sorted(v for v in pending if v <= held)
        rows += table.batch_get([(partition, self.log_sk(v)) for v in earlier]) if earlier else []
        ids: set[str] = set()
        found: set[int] = set()
        for row in rows:
            version = int(str(row["sk"])[len(self.prefix) :])
            if version not in wanted:
                continue
            logged = row.get("ids")
            if not isinstance(logged, list):
                return Changes(None, set())
            ids.update(str(i) for i in logged)
            found.add(version)
        return Changes(ids, wanted - found)

    def recent(self, table: Table, partition: str, seconds: float) -> set[str]:
        """The ids changed by the writes of the last ``seconds`` (at most :data:`RECENT_ROWS` writes): what an
        index that shows writes only after a while (OpenSearch Serverless) may not show yet."""
        since_epoch = time.time() - seconds
        ids: set[str] = set()
        for row in table.query(partition, self.prefix, limit=RECENT_ROWS, descending=True).items:
            if int(row.get("at") or 0) < since_epoch - 1:
                break
            ids.update(str(i) for i in row.get("ids") or [])
        return ids


_heads: ContextVar[dict[tuple[str, str], Stats] | None] = ContextVar("one_read_of_heads", default=None)


@contextlib.contextmanager
def one_read_of_heads() -> Iterator[None]:
    """Within, each partition's version item is read once: for reads that all happen before any write (a store
    batch's searches: each index of each search read it again before). Never around a write."""
    token = _heads.set({})
    try:
        yield
    finally:
        _heads.reset(token)


MEMORY = ChangeLog("MSTATS", "MLOG#")
"""Memory entries' log: entry ids; its version item also holds the BM25 counts."""
GRAPH = ChangeLog("GVERSION", "GLOG#")
"""Graph entities' log: the names of the entities whose search terms a write changed."""


@dataclass
class Caught:
    """What a held index knows of its place in the log."""

    epoch: str | None
    version: int
    missing: dict[int, float] = field(default_factory=dict)
    """Versions whose rows were not there yet, and when that was first seen."""
    caught_up_at: float = field(default_factory=time.time)
    """When the index last learnt every change logged (a full read, or the log)."""


Held = TypeVar("Held")


def budget_bytes(env: Mapping[str, str] | None = None) -> int:
    """What this process may hold of partitions (:data:`SEARCH_CACHE_ENV`)."""
    env = os.environ if env is None else env
    configured = env.get(SEARCH_CACHE_ENV)
    if configured:
        return int(float(configured) * 2**20)
    function_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
    return int(float(function_mb) * 2**20 // 2) if function_mb else 1024 * 2**20


class HeldBytes:
    """The partitions every index of the process holds, most recently used last, with their sizes: when
    they pass the budget, the least recently used are forgotten (the one just used is kept, whatever its
    size: the search it serves needs it)."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._sizes: OrderedDict[tuple[int, str], int] = OrderedDict()
        self._owners: weakref.WeakValueDictionary[int, HeldPartitions[object]] = weakref.WeakValueDictionary()

    @property
    def limit(self) -> int:
        if self._limit is None:
            self._limit = budget_bytes()
        return self._limit

    @property
    def used(self) -> int:
        with self._lock:
            return sum(self._sizes.values())

    def hold(self, owner: HeldPartitions[Held], partition: str, size: int) -> None:
        """``owner`` holds ``partition`` at ``size`` bytes, just used; forget what no longer fits."""
        key = (id(owner), partition)
        victims = []
        with self._lock:
            self._owners[id(owner)] = owner  # type: ignore[assignment]
            self._sizes[key] = size
            self._sizes.move_to_end(key)
            total = sum(self._sizes.values())
            while total > self.limit and len(self._sizes) > 1:
                victim, freed = self._sizes.popitem(last=False)
                total -= freed
                victims.append(victim)
        for owner_id, name in victims:
            held_by = self._owners.get(owner_id)
            if held_by is not None:
                held_by.forget(name)

    def used_now(self, owner: HeldPartitions[Held], partition: str) -> None:
        with self._lock:
            key = (id(owner), partition)
            if key in self._sizes:
                self._sizes.move_to_end(key)


HELD = HeldBytes()
"""The process's budget, shared by the memory and graph indexes of every service."""


class HeldPartitions(Generic[Held]):
    """Partitions held in process (the most recently used, within the process's :data:`HELD` bytes), each
    read whole once (``load``), or started from a stored form of it (``start``: a snapshot, at an earlier
    place in the log), and then caught up from ``log`` (``apply`` the items of the changed ids)."""

    def __init__(
        self,
        table: Table,
        log: ChangeLog,
        *,
        load: Callable[[str, Stats], Held],
        read: Callable[[str, Sequence[str]], Sequence[object]],
        apply: Callable[[Held, set[str], Sequence[object], Stats], None],
        caught: Callable[[Held], Caught],
        size: Callable[[Held], int],
        start: Callable[[str, Stats], Held | None] | None = None,
        budget: HeldBytes | None = None,
    ) -> None:
        self._table = table
        self._log = log
        self._load, self._read, self._apply, self._caught, self._size = load, read, apply, caught, size
        self._start = start
        self._budget = HELD if budget is None else budget
        self._held: dict[str, Held] = {}
        self._lock = threading.Lock()

    def forget(self, partition: str) -> None:
        with self._lock:
            self._held.pop(partition, None)

    @contextlib.contextmanager
    def steady(self) -> Iterator[None]:
        """No partition of this process is caught up meanwhile (to read one whole, as a snapshot does)."""
        with self._lock:
            yield

    def get(self, partition: str) -> Held:
        """The partition as of its current version."""
        current = self._log.stats(self._table, partition)
        with self._lock:
            held = self._held.get(partition)
        if held is not None and self._caught_up(partition, held, current):
            return held
        started = self._start(partition, current) if self._start is not None else None
        if started is not None and self._caught_up(partition, started, current):
            with self._lock:
                self._held[partition] = started
            self._budget.hold(self, partition, self._size(started))
            return started
        built = self._load(partition, current)
        with self._lock:
            self._held[partition] = built
        self._budget.hold(self, partition, self._size(built))
        return built

    def _caught_up(self, partition: str, held: Held, current: Stats) -> bool:
        """Bring ``held`` to ``current`` from the log; False when the log cannot (another epoch, too far
        behind, rows no longer kept, a write logged as a reset): then it must be read whole."""
        place = self._caught(held)
        now = time.time()
        if place.epoch != current.epoch or place.version > current.version:
            return False
        if place.version == current.version and not place.missing:
            self._budget.used_now(self, partition)
            return True
        if now - place.caught_up_at >= LOG_SECONDS - CATCH_UP_MARGIN_SECONDS:  # its rows may be gone
            return False
        learnt = self._log.since(self._table, partition, place.version, current.version, place.missing)
        if learnt.ids is None:
            return False
        present = self._read(partition, sorted(learnt.ids))
        with self._lock:
            if place.version <= current.version:
                self._apply(held, learnt.ids, present, current)
                place.epoch, place.version = current.epoch, current.version
                seen = {v: place.missing.get(v, now) for v in learnt.missing}
                place.missing = {v: t for v, t in seen.items() if now - t < MISSING_SECONDS}
                place.caught_up_at = now
        self._budget.hold(self, partition, self._size(held))
        return True
