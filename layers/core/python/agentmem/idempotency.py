"""Idempotency-Key support: a retried write with the same key and body gets the first answer again.

Records live in the user's own partition (so erasure removes them) and expire with a TTL, never later than
the earliest ``expires_at`` the answer holds. A record past its TTL is absent on both tables (DynamoDB
may keep it for 48 hours more). A key reused with a different request is refused; a key whose first
request is still running answers 409; so does a key whose answer holds something deleted since
(``idempotency_key_stale``): the record keeps the table keys of the items its answer holds (``holds``:
the memory entries and graph items the request wrote, noted through agentmem/held_items.py), and a replay
reads them (one batch): if one is gone (deleted, or expired), replaying would serve it and running the
request again would bring it back, so neither happens and a new key writes again. Deletes of anything
else never stop a replay. A record kept before answers listed what they hold (no ``holds``) is replayed
only if it was recorded after the user's last delete that still wrote the ``FORGOTTEN`` watermark
(agentmem/users.py; nothing writes it any more).

Only writes are recorded (api/middlewares.py): a read answers from the data as it is now.

A claim is refused while the user's erasure runs (the guarded table conditions it on the deletion
mark), and the answer is recorded only over the request's own claim: a claim an erasure removed
meanwhile stays removed, so a retry after the erasure runs anew instead of replaying an erased answer.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass

from agentmem import users
from agentmem.errors import ConditionFailed, Conflict, InvalidInput, PayloadTooLarge
from agentmem.keys import UserRef, escape, validate_id
from agentmem.stores.table import Condition, Item, Key, Table

PREFIX = "IDEM#"
HOLDS = "holds"
"""The record's attribute listing the items its answer holds: ``{pk: [sk, ...]}`` (keys kept compactly,
each partition once)."""
MAX_HELD_ITEMS = 2000
"""The most items a recorded answer may hold (a replay reads them all: 20 batch reads on DynamoDB). A
write creates at most 1,000 (500 graph entities and 500 facts; a session of 500 entries); an answer that
also shows more facts its entities already had, beyond this, is not kept, like an answer over 400 KB:
the write stands and a retry runs again."""
_IN_PROGRESS_SECONDS = 60


@dataclass(frozen=True, slots=True)
class StoredResponse:
    status_code: int
    body: str
    content_type: str


class IdempotencyStore:
    def __init__(self, table: Table, *, ttl_seconds: int = 86400) -> None:
        self._table = users.guarded(table)
        self._ttl = ttl_seconds

    def begin(self, user: UserRef, key: str, fingerprint: str) -> StoredResponse | None:
        """Claim ``key``: None when this request should run, the stored response when it already ran."""
        validate_id(key, "Idempotency-Key")
        sk = PREFIX + escape(key)
        now = int(time.time())
        existing = self._table.get(user.partition, sk)
        if existing is not None:
            if existing["fingerprint"] != fingerprint:
                raise InvalidInput(
                    "this Idempotency-Key was used for a different request", code="idempotency_key_reused"
                )
            if existing.get("status") == "done":
                if not self._still_holds(user, existing):
                    raise Conflict(
                        "the answer to this Idempotency-Key holds memory of this user's that was deleted since "
                        "and is not replayed; send the request with a new key to run it again",
                        code="idempotency_key_stale",
                    )
                return StoredResponse(existing["status_code"], existing["body"], existing["content_type"])
            if existing.get("claimed_until", 0) > now:
                raise Conflict("a request with this Idempotency-Key is still running", code="idempotency_in_progress")
        item = {
            "pk": user.partition,
            "sk": sk,
            "fingerprint": fingerprint,
            "status": "running",
            "claimed_until": now + _IN_PROGRESS_SECONDS,
            "ttl": now + self._ttl,
        }
        try:
            if existing is None:
                self._table.put(item, Condition(exists=False))
            else:
                self._table.put(item, Condition(equals={"claimed_until": existing.get("claimed_until", 0)}))
        except ConditionFailed:
            raise Conflict(
                "a request with this Idempotency-Key is still running", code="idempotency_in_progress"
            ) from None
        return None

    def _still_holds(self, user: UserRef, record: Item) -> bool:
        """Whether every item the recorded answer holds still exists (an expired one does not)."""
        holds = record.get(HOLDS)
        if not isinstance(holds, dict):  # recorded before answers listed what they hold: the watermark's rule
            return int(record.get("recorded_at", 0)) > users.forgotten_at(self._table, user)
        keys = [(pk, sk) for pk, sks in holds.items() for sk in sks]
        found = {(item["pk"], item["sk"]) for item in self._table.batch_get(keys)}
        return found.issuperset(keys)

    def complete(
        self,
        user: UserRef,
        key: str,
        fingerprint: str,
        response: StoredResponse,
        *,
        started_ms: int,
        expires: int | None = None,
        holds: Iterable[Key] = (),
    ) -> None:
        """Record the answer of the request that began at ``started_ms`` over its claim (until ``expires``,
        epoch seconds, at the latest), with the keys of the items it ``holds``; nothing when the claim is
        gone (erased meanwhile). PayloadTooLarge when the record cannot be kept (over 400 KB, or holding
        more than :data:`MAX_HELD_ITEMS`)."""
        held = _by_partition(holds)
        if sum(len(sks) for sks in held.values()) > MAX_HELD_ITEMS:
            raise PayloadTooLarge(
                f"the answer holds more than {MAX_HELD_ITEMS} items; it is not kept", code="item_too_large"
            )
        now = int(time.time())
        ttl = now + self._ttl if expires is None else min(now + self._ttl, expires)
        claim = Condition(equals={"fingerprint": fingerprint, "status": "running"})
        with contextlib.suppress(ConditionFailed):
            self._table.put(
                {
                    "pk": user.partition,
                    "sk": PREFIX + escape(key),
                    "fingerprint": fingerprint,
                    "status": "done",
                    "status_code": response.status_code,
                    "body": response.body,
                    "content_type": response.content_type,
                    "recorded_at": started_ms,
                    HOLDS: held,
                    "ttl": ttl,
                },
                claim,
            )

    def release(self, user: UserRef, key: str) -> None:
        """Forget a claim whose request failed, so a retry runs it again."""
        self._table.delete(user.partition, PREFIX + escape(key))


def _by_partition(keys: Iterable[Key]) -> dict[str, list[str]]:
    """``keys`` as each partition's sort keys (each key once)."""
    held: dict[str, list[str]] = {}
    for pk, sk in dict.fromkeys(keys):
        held.setdefault(pk, []).append(sk)
    return held
