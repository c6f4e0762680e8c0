"""What the AgentCore data plane's operations share (agentmem/agentcore/events.py and record_operations.py):
the guarded table, the memory service, the actor index, the clock, and the replay of a ``clientToken``."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentmem import held_items, users
from agentmem.agentcore.actors import ActorIndex
from agentmem.clock import format_timestamp, utc_now
from agentmem.errors import PayloadTooLarge
from agentmem.idempotency import IdempotencyStore, StoredResponse
from agentmem.keys import UserRef, scope_of_partition
from agentmem.memory.service import MemoryService
from agentmem.stores.table import Table

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agentmem.extraction.config import AppMemories


class DataPlane:
    def __init__(
        self,
        table: Table,
        memory: MemoryService,
        idempotency: IdempotencyStore,
        *,
        memories: AppMemories | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``memories``: the apps' memories (CreateMemory's), whose ``eventExpiryDuration`` events keep."""
        self._table = users.guarded(table)
        self._memory = memory
        self._idempotency = idempotency
        self._memories = memories
        self._clock = clock
        self._actors = ActorIndex(self._table)

    def _once(
        self, user: UserRef, token: str | None, request: BaseModel, work: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """``work``'s answer, once per ``clientToken`` (botocore sends one with every call and the same one
        with its retries): a retry replays the first answer instead of writing again (agentmem/idempotency.py,
        the store of the REST API's Idempotency-Key, in the user's partition). The record holds the keys of
        ``user``'s items only: a batch's records of other actors are not named in it, so nothing of theirs
        outlives their erasure (their record ids in the answer name a random ref, gone with them)."""
        if not token:
            return work()
        key = "agentcore:" + token
        fingerprint = hashlib.sha256(request.model_dump_json(exclude={"client_token"}).encode("utf-8")).hexdigest()
        stored = self._idempotency.begin(user, key, fingerprint)
        if stored is not None:
            answer: dict[str, Any] = json.loads(stored.body)
            return answer
        started_ms = int(time.time() * 1000)
        try:
            with held_items.collecting() as held:
                answer = work()
        except BaseException:
            self._idempotency.release(user, key)
            raise
        own = [(pk, sk) for pk, sk in held if _owned_by(user, pk)]  # the record names no other actor (erasure)
        try:
            recorded = StoredResponse(200, json.dumps(answer), "application/json")
            self._idempotency.complete(user, key, fingerprint, recorded, started_ms=started_ms, holds=own)
        except PayloadTooLarge:  # an answer too large to keep: the write stands, a retry runs again
            self._idempotency.release(user, key)
        return answer

    def _now(self) -> str:
        return format_timestamp(self._clock())


def _owned_by(user: UserRef, partition: str) -> bool:
    """A partition of ``user``'s: its own, or one of its scopes."""
    scope = scope_of_partition(partition)
    return partition == user.partition or (scope is not None and scope.user_ref == user)
