"""The erasures a restored table does not know of, and the users it still holds for them (docs/erasure.md, "After
restoring a backup").

A backup or a point-in-time restore brings back every user erased after its time. The receipts that say who
was erased are in the table that was running (``T#<app>`` / ``DELREQ#<deletion id>``, agentmem/deletion/records.py),
and they name the user only by a keyed hash: :func:`receipts_since` lists the receipts of the erasures that
ended at or after a time (or have not ended), and :func:`users_held` finds, among the users the restored table
lists for each app (``AU#<app>``, agentmem/users.py), those whose keyed hash a receipt holds: the users to erase
again there before any of it is served. An erasure the restored table holds as ended (:func:`ended_in`) is in the
backup already: what the table holds of its user was written after it, and stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from agentmem import users
from agentmem.clock import parse_timestamp
from agentmem.deletion import records
from agentmem.keys import TENANT_TAG, UserRef, unescape
from agentmem.stores.table import Item, Key, Table

USERS_PAGE = 500


@dataclass(frozen=True)
class Receipt:
    """One erasure's receipt as the table holds it (never the user id once it has ended)."""

    app: str
    deletion_id: str
    status: str
    started_at: str
    finished_at: str | None
    user_hash: str
    running: bool
    """Whether its request still names the user: the erasure has not ended (nor been superseded)."""


def app_of_tenant_partition(pk: str) -> str | None:
    """The app of a tenant partition ``T#<app>`` (the inverse of ``keys.tenant_partition``); None for others."""
    parts = pk.split("#")
    if len(parts) != 2 or parts[0] != TENANT_TAG:
        return None
    return unescape(parts[1])


def receipt_keys(table: Table) -> Iterator[Key]:
    """The key of every receipt in the table: a Scan of the whole table on DynamoDB (an operator's job)."""
    scan = getattr(table, "scan_keys", None)
    if scan is None:
        raise TypeError(f"{type(table).__name__} cannot list its receipts (it has no scan_keys)")
    for pk, sk in scan(records.DELETION_REQUEST):
        if app_of_tenant_partition(pk) is not None:
            yield pk, sk


def receipt_of(item: Item) -> Receipt:
    app = app_of_tenant_partition(str(item["pk"]))
    assert app is not None, item["pk"]
    return Receipt(
        app=app,
        deletion_id=str(item["deletion_id"]),
        status=str(item.get("status")),
        started_at=str(item.get("started_at")),
        finished_at=str(item["finished_at"]) if item.get("finished_at") else None,
        user_hash=str(item.get("user_hash")),
        running=bool(item.get(records.USER_ID)),
    )


def receipts_since(table: Table, since: datetime) -> list[Receipt]:
    """The receipts of the erasures a copy of the table taken at ``since`` may predate: those that ended at or
    after it, those that have not ended, and those that ended without a time (a request superseded while it
    ran), oldest start first."""
    found = [receipt_of(item) for item in table.batch_get(list(receipt_keys(table)))]
    kept = [r for r in found if r.running or r.finished_at is None or parse_timestamp(r.finished_at) >= since]
    return sorted(kept, key=lambda r: (r.started_at, r.deletion_id))


def ended_in(table: Table, receipts: Iterable[Receipt]) -> set[str]:
    """The deletion ids of ``receipts`` whose erasure ``table`` (a restored copy) holds as ended: the copy was
    taken after it, so it has nothing of the user from before it (what it holds of them was written since)."""
    keys = [records.request_key(r.app, r.deletion_id) for r in receipts]
    return {str(item["deletion_id"]) for item in table.batch_get(keys) if item.get("status") == "SUCCEEDED"}


def app_users(table: Table, app: str) -> Iterator[UserRef]:
    """Every user the table lists for ``app`` (page by page)."""
    after: str | None = None
    while True:
        page, after = users.app_users(table, app, after=after, limit=USERS_PAGE)
        yield from (UserRef(app, user) for user in page)
        if after is None:
            return


def users_held(table: Table, receipt_key: bytes, receipts: Iterable[Receipt]) -> dict[str, UserRef]:
    """Per deletion id, the user of ``table`` whose keyed hash its receipt holds (``receipt_key``: the
    deployment's ``MEMORY_RECEIPT_KEY``); a receipt whose user the table does not list is left out."""
    wanted: dict[tuple[str, str], list[str]] = {}
    for receipt in receipts:
        wanted.setdefault((receipt.app, receipt.user_hash), []).append(receipt.deletion_id)
    held: dict[str, UserRef] = {}
    for app in sorted({app for app, _ in wanted}):
        for user in app_users(table, app):
            for deletion_id in wanted.get((app, records.user_hash(receipt_key, user)), []):
                held[deletion_id] = user
    return held
