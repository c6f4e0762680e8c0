"""An app's users, page by page (``GET /v1/apps/{app}/users``): who holds data, how many memory entries, and
when they last wrote.

The list is the app's user index (``AU#<app>``, :mod:`agentmem.users`), in key order; nothing scans the table.
A user whose data predates the index is listed from their next write on (:data:`~agentmem.users.LISTED`).
For each user of a page:

- a user whose erasure has begun (the deletion mark is set) is left out: the index row goes with the erasure's
  sweep, and the user's data is no longer served;
- ``entries`` sums the memory entries each of the user's scopes holds (the global scope and every project),
  as the scope's change log counts them (``MSTATS``, the count the entry limit reads): an expired entry counts
  until the store removes it (DynamoDB TTL within 48 hours, the local sweep at startup), as for the limit;
- ``last_write_at`` is the time of the newest memory write, rewrite or delete the scopes' change logs hold
  (kept :data:`~agentmem.search.changes.LOG_SECONDS`); older than that, the ``timestamp`` of the newest entry
  held; null when the user holds no entry (a user who wrote only to the graph or the store).

A page reads at most :data:`PAGE_SCOPES` scopes (a user's whole registry counts, capped at
:data:`USER_SCOPES`): a page that reaches it ends early, with a cursor, after at least one user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from agentmem import users
from agentmem.clock import format_timestamp
from agentmem.errors import InvalidInput
from agentmem.keys import Scope, UserRef, escape, unescape, validate_id
from agentmem.memory import records
from agentmem.search import changes
from agentmem.stores.table import Table

MAX_LIMIT = 100
PAGE_SCOPES = 200
"""Scopes one page reads at most (each costs a read of its count and one or two of its newest rows)."""
USER_SCOPES = 101
"""Scopes counted per user: the global scope and the user's first 100 projects (in key order)."""
_BATCH = 100


@dataclass(frozen=True, slots=True)
class AppUser:
    user_id: str
    entries: int
    last_write_at: str | None

    def to_json(self) -> dict[str, object]:
        return {"user_id": self.user_id, "entries": self.entries, "last_write_at": self.last_write_at}


def list_users(
    table: Table, app: str, *, limit: int = 20, cursor: str | None = None
) -> tuple[list[AppUser], str | None]:
    """A page of the app's users and the cursor of the next (the last user read; None on the last page)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", code="invalid_limit")
    after = escape(validate_id(cursor, "cursor")) if cursor is not None else None
    page = table.query(users.app_users_partition(app), limit=limit, start_after=after)
    names = [str(item["user"]) for item in page.items]
    refs = [UserRef(app, name) for name in names]
    marked = {item["pk"] for item in _batch_get(table, [users.deletion_mark_key(ref) for ref in refs])}
    listed: list[AppUser] = []
    read = 0
    for at, ref in enumerate(refs):
        if listed and read >= PAGE_SCOPES:  # the page has read its share: the next starts at this user
            return listed, names[at - 1]
        if ref.partition in marked:
            continue
        scopes = _scopes(table, ref)
        read += len(scopes)
        listed.append(_summary(table, ref, scopes))
    return listed, names[-1] if names and page.next_start is not None else None


def _scopes(table: Table, user: UserRef) -> list[Scope]:
    """The user's registered scopes (the global scope first), at most :data:`USER_SCOPES`."""
    registry = table.query(user.partition, users.SCOPE_REGISTRY, limit=USER_SCOPES).items
    projects = [unescape(str(item["sk"])[len(users.SCOPE_REGISTRY) :]) or None for item in registry]
    return [user.scope(project) for project in projects]


def _summary(table: Table, user: UserRef, scopes: Sequence[Scope]) -> AppUser:
    stats = _batch_get(table, [(scope.partition, changes.MEMORY.stats_sk) for scope in scopes])
    entries = sum(max(0, changes.Stats.of(item).docs) for item in stats)
    written = [str(item["pk"]) for item in stats]  # scopes that ever held a memory entry
    newest: int | None = None
    for partition in written:
        rows = table.query(partition, changes.MEMORY.prefix, limit=1, descending=True).items
        if rows and rows[0].get("at") is not None:
            newest = max(newest or 0, int(rows[0]["at"]))
    if newest is not None:
        return AppUser(user.user, entries, _iso(newest))
    said: str | None = None
    for partition in written:
        items = table.query(partition, records.ENTRY, limit=1, descending=True).items
        stamp = items[0].get("timestamp") if items else None
        if isinstance(stamp, str) and (said is None or stamp > said):
            said = stamp
    return AppUser(user.user, entries, said)


def _batch_get(table: Table, keys: Sequence[tuple[str, str]]) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for at in range(0, len(keys), _BATCH):
        found += table.batch_get(keys[at : at + _BATCH])
    return found


def _iso(epoch_seconds: int) -> str:
    return format_timestamp(datetime.fromtimestamp(epoch_seconds, UTC))
