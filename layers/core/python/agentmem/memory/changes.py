"""A partition's change log: which entries each write changed, numbered in the order the writes counted.

Every process that searches a partition keeps it in memory (agentmem/vectors/exact.py: the vectors, and
the words keyword search ranks by). On Lambda each container is such a process, and an agent's loop
writes in one and searches in another: a process must learn what the others changed without reading
the whole partition again. So each write of entries (a put, a delete, a rewrite), once its entries are
written, takes the next number from the partition's statistics item (``MSTATS``: ``version``, one atomic
add, which also moves the document count and lengths BM25 reads; ``epoch`` names this life of the
partition: an erasure deletes the item, and the next write starts a new epoch at version 1) and writes
the log row ``MLOG#<version>``: the ids it changed, kept for :data:`LOG_SECONDS`.

A reader that holds version ``c`` reads the statistics item (one small read), and if it is at ``v > c``,
the log rows ``c + 1 .. v`` (one query) and the entries they name (one batch read): what it reads follows
what changed, not the size of the partition. A row can be missing for a moment (its writer has taken the
number and not yet written the row): the reader notes the number and looks for that row again next time;
a writer that died between the two leaves its number without a row, which readers forget after
:data:`MISSING_SECONDS` (its write was never acknowledged). Applying a row means reading its entries as
they are now, so rows may be applied in any order, and more than once.

Search results are read from the entries themselves, so an index that is behind can rank an entry that
is gone (it is skipped), never show it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentmem.clock import new_id
from agentmem.errors import ConditionFailed
from agentmem.stores.table import Condition, Table

STATS = "MSTATS"
LOG = "MLOG#"
LOG_SECONDS = 7 * 24 * 3600
"""How long a log row is kept (DynamoDB TTL): a process that has not caught up for longer reads again."""
MAX_LOG_ROWS = 500
"""The most log rows a reader catches up by; further behind, it reads the partition again."""
MAX_LOGGED_IDS = 1000
"""Ids one log row holds; a write that changed more is logged as a reset (readers read again)."""
MISSING_SECONDS = 60
"""How long a reader looks for a log row whose version was taken (longer than any request runs)."""


@dataclass(frozen=True, slots=True)
class Stats:
    """A partition's statistics: its epoch and version, and what BM25 needs."""

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


def log_sk(version: int) -> str:
    return f"{LOG}{version:012d}"


def stats(table: Table, partition: str) -> Stats:
    return Stats.of(table.get(partition, STATS))


def record(
    table: Table,
    partition: str,
    changed: Sequence[str],
    *,
    docs: int = 0,
    length: int = 0,
    context_length: int = 0,
    create: bool = True,
) -> int | None:
    """Log that the entries ``changed`` were written, deleted or rewritten (after the fact), with what it
    did to the BM25 statistics; return its version. ``create``: a partition without statistics gets them
    (a write); otherwise (a delete, a rewrite) nothing is logged there: an erasure swept it, or it never
    held entries, and no reader holds it."""
    deltas = {"version": 1, "docs": docs, "length": length, "context_length": context_length}
    try:  # a plain atomic add (it cannot create the item): the version it returns is this write's own
        version = int(table.increment(partition, STATS, deltas, Condition(exists=True))["version"])
    except ConditionFailed:
        if not create:
            return None
        first = {"pk": partition, "sk": STATS, "epoch": new_id(), **{k: max(0, v) for k, v in deltas.items()}}
        try:  # the first write of the partition (checked against an erasure, as every creating write is)
            table.put(first, Condition(exists=False))
            version = 1
        except ConditionFailed:  # another write created it meanwhile
            version = int(table.increment(partition, STATS, deltas, Condition(exists=True))["version"])
    ids = sorted(set(changed))
    now = int(time.time())
    row = {
        "pk": partition,
        "sk": log_sk(version),
        "ids": ids if len(ids) <= MAX_LOGGED_IDS else None,
        "at": now,
        "ttl": now + LOG_SECONDS,
    }
    table.put(row)
    return version


@dataclass(frozen=True, slots=True)
class Changes:
    """What a reader learnt from the log: the ids changed (None: read the partition again, a row named too
    many), and the versions whose rows are not there (yet)."""

    ids: set[str] | None
    missing: set[int]


def since(table: Table, partition: str, held: int, current: int, pending: Iterable[int] = ()) -> Changes:
    """The ids changed by the writes ``held + 1 .. current`` and by the earlier writes ``pending`` (rows a
    reader found missing before)."""
    wanted = set(range(held + 1, current + 1)) | set(pending)
    if len(wanted) > MAX_LOG_ROWS:
        return Changes(None, set())
    rows = table.query(partition, LOG, start_after=log_sk(held), limit=current - held).items if current > held else []
    earlier = sorted(v for v in pending if v <= held)
    rows += table.batch_get([(partition, log_sk(v)) for v in earlier]) if earlier else []
    ids: set[str] = set()
    found: set[int] = set()
    for row in rows:
        version = int(str(row["sk"])[len(LOG) :])
        if version not in wanted:
            continue
        logged = row.get("ids")
        if not isinstance(logged, list):
            return Changes(None, set())
        ids.update(str(i) for i in logged)
        found.add(version)
    return Changes(ids, wanted - found)


RECENT_ROWS = 100
"""Log rows a reader of the recent writes looks at, newest first."""


def recent(table: Table, partition: str, seconds: float) -> set[str]:
    """The ids changed by the writes of the last ``seconds`` (at most :data:`RECENT_ROWS` writes): what an
    index that shows writes only after a while (OpenSearch Serverless) may not show yet."""
    since_epoch = time.time() - seconds
    ids: set[str] = set()
    for row in table.query(partition, LOG, limit=RECENT_ROWS, descending=True).items:
        if int(row.get("at") or 0) < since_epoch - 1:
            break
        ids.update(str(i) for i in row.get("ids") or [])
    return ids
