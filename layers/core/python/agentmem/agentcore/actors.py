"""The actors of AgentCore calls: the user an ``actorId`` (or a record's namespace) names, and the app's actor
index, each actor's row and its ref (what its record ids end with, agentmem/agentcore/records.py), written on
first use unless the user is being erased."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from agentmem import users
from agentmem.agentcore import models, page_tokens
from agentmem.agentcore import records as ac
from agentmem.errors import ConditionFailed, InvalidInput, UserDeletionInProgress
from agentmem.keys import Scope, UserRef, escape, validate_id
from agentmem.stores.table import Check, Condition, Put, Table


@dataclass(frozen=True, slots=True)
class Actor:
    user: UserRef

    @property
    def scope(self) -> Scope:
        return self.user.scope(None)


def actor_of(memory_id: str, actor_id: str) -> Actor:
    if not models.ACTOR_ID.fullmatch(actor_id) or len(actor_id) > 255:
        raise InvalidInput(f"actorId {actor_id!r} must match {models.ACTOR_ID.pattern} (1..255 characters)")
    return Actor(UserRef.of(ac.app_of_memory(memory_id), validate_id(actor_id, "actorId")))


class ActorIndex:
    def __init__(self, table: Table) -> None:
        """``table``: the guarded table (agentmem/users.py), so no row is written for a user being erased."""
        self._table = table

    def list_actors(self, memory_id: str, body: models.ListActorsRequest) -> dict[str, Any]:
        app = ac.app_of_memory(memory_id)
        start = page_tokens.decode(body.next_token, ac.ACTOR_ROW)["after"] if body.next_token else None
        page = self._table.query(ac.index_partition(app), ac.ACTOR_ROW, limit=body.max_results, start_after=start)
        answer: dict[str, Any] = {"actorSummaries": [{"actorId": row["actor"]} for row in page.items]}
        if page.next_start is not None:
            answer["nextToken"] = page_tokens.encode({"after": page.next_start})
        return answer

    def namespace_actor(self, memory_id: str, namespace: str) -> Actor:
        """The actor whose records a namespace holds: of the actors it may name (``org`` or ``org/alice`` in
        ``/actors/org/alice/``), the longest this memory knows (one that wrote an event or had a record), else
        the first segment. One batch read, only when the namespace may name more than one."""
        candidates = [c for c in ac.owners_of(namespace) if models.ACTOR_ID.fullmatch(c) and len(c) <= 255]
        if len(candidates) > 1:
            index = ac.index_partition(ac.app_of_memory(memory_id))
            rows = self._table.batch_get([(index, ac.ACTOR_ROW + escape(c)) for c in candidates])
            known = {row["actor"] for row in rows}
            return actor_of(memory_id, next((c for c in reversed(candidates) if c in known), candidates[0]))
        return actor_of(memory_id, candidates[0] if candidates else ac.owner_of(namespace))

    def register(self, user: UserRef) -> str:
        """The user's ref in the app's actor index, written on first use, unless the user is being erased."""
        found = self.ref_or_none(user)
        if found is not None:
            return found
        ref = ac.new_ref()
        mark = Check(*users.mark_shard_key(user, random.randrange(users.GUARD_SHARDS)), Condition(exists=False))
        absent = Condition(exists=False)
        try:
            self._table.transact_write([mark, Put(ac.actor_row(user, ref), absent), Put(ac.ref_row(user, ref), absent)])
        except ConditionFailed:
            found = self.ref_or_none(user)
            if found is None:
                raise UserDeletionInProgress("this user's data is being deleted; writes are refused") from None
            return found
        return ref

    def ref_or_none(self, user: UserRef) -> str | None:
        row = self._table.get(ac.index_partition(user.app), ac.ACTOR_ROW + escape(user.user))
        return str(row["ref"]) if row is not None else None
