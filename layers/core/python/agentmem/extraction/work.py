"""Where extraction keeps its work in the table: what is pending, how far each session was extracted, and
what failed for good (parked), so that the work survives a restart and an erasure removes all of it.

In the scope partition of the session (erasure sweeps it with the rest):

- ``XP#<session>``, *pending*: written with every write into a session of an app that learns (in the
  write's own batch), with when it was written. In the cloud its stream record starts the extraction
  function; locally the server's runner is told. Removed once everything up to that write is extracted.
- ``XC#<session>``, the session's *cursor*: the last entry extracted, the session's generation it read,
  the failed attempts of the next batch and when to try again, the lease of the process working on it, and
  the graph writes a batch committed but has not applied yet. A batch's records are written in one
  transaction with the cursor's advance, conditioned on the cursor as read: a batch is written once,
  whatever is delivered twice.
- ``XR#<job>``: a parked job asked to run again (``StartMemoryExtractionJob``).

In the app's partition ``XF#<app>`` (found by ``ListMemoryExtractionJobs``; erasure deletes a user's rows by
the ``U#`` prefix): each parked job twice, ``J#<job>`` (by id) and ``U#<user>#<job>`` (by user).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from agentmem.keys import Scope, UserRef, escape
from agentmem.stores.table import Item, Key, Table, query_all

PENDING = "XP#"
CURSOR = "XC#"
RETRY = "XR#"
PARKED_BY_ID = "J#"
PARKED_BY_USER = "U#"


def pending_sk(session: str) -> str:
    return PENDING + escape(session)


def pending_item(scope: Scope, session: str, now_ms: int) -> Item:
    return {
        "pk": scope.partition,
        "sk": pending_sk(session),
        "session": session,
        "touched_ms": now_ms,
    }


def cursor_sk(session: str) -> str:
    return CURSOR + escape(session)


@dataclass
class Cursor:
    """How far a session was extracted (see the module's docstring)."""

    written: int = 0
    """With ``last``, where extraction has read to, in the order entries were written (their session rows'
    write times, then ids): a turn written late with an earlier time is still read."""
    last: str = ""
    """The id of the last entry extracted ("" for none)."""
    generation: str = ""
    """The session's generation the last batch read (a session written again is read from its start)."""
    attempts: int = 0
    retry_ms: int = 0
    failure: str = ""
    lease: str = ""
    lease_until_ms: int = 0
    graph: list[dict[str, Any]] = field(default_factory=list)
    """Graph writes of a committed batch not yet applied (applied again after a crash: they repeat safely)."""

    def item(self, scope: Scope, session: str) -> Item:
        return {"pk": scope.partition, "sk": cursor_sk(session), "state": json.dumps(asdict(self), sort_keys=True)}

    @classmethod
    def of(cls, item: Item | None) -> Cursor:
        if item is None or not isinstance(item.get("state"), str):
            return cls()
        return cls(**json.loads(item["state"]))


def read_cursor(table: Table, scope: Scope, session: str) -> tuple[Cursor, Item | None]:
    item = table.get(scope.partition, cursor_sk(session))
    return Cursor.of(item), item


def parked_partition(app: str) -> str:
    return f"XF#{escape(app)}"


def parked_items(user: UserRef, job_id: str, job: dict[str, Any]) -> list[Item]:
    """The two rows of a parked job in the app's partition (by id, and by user for erasure)."""
    state = json.dumps(job, sort_keys=True)
    pk = parked_partition(user.app)
    return [
        {"pk": pk, "sk": PARKED_BY_ID + job_id, "user": user.user, "state": state},
        {"pk": pk, "sk": f"{PARKED_BY_USER}{escape(user.user)}#{job_id}", "job": job_id},
    ]


def parked_keys(user: UserRef, job_id: str) -> list[Key]:
    pk = parked_partition(user.app)
    return [(pk, PARKED_BY_ID + job_id), (pk, f"{PARKED_BY_USER}{escape(user.user)}#{job_id}")]


def user_parked_keys(table: Table, user: UserRef) -> list[Key]:
    """Every row naming the user in the app's parked jobs: what an erasure deletes besides the user's own
    partitions."""
    pk = parked_partition(user.app)
    rows = query_all(table, pk, f"{PARKED_BY_USER}{escape(user.user)}#")
    keys: list[Key] = []
    for row in rows:
        keys += [(pk, row["sk"]), (pk, PARKED_BY_ID + str(row["job"]))]
    return keys
