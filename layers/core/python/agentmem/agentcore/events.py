"""AgentCore's events and sessions (CreateEvent, GetEvent, DeleteEvent, ListEvents, ListSessions): an event
is a memory entry of the actor's scope in its session, written, read and erased by the memory service, except
an event that holds no conversational item, kept as an event only (agentmem/agentcore/state_events.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentmem.agentcore import metadata_filters, models, page_tokens, state_events, wire
from agentmem.agentcore import records as ac
from agentmem.agentcore.actors import Actor, actor_of
from agentmem.agentcore.plane import DataPlane
from agentmem.budget import Budget
from agentmem.clock import new_id
from agentmem.errors import NotFound
from agentmem.keys import Scope, unescape
from agentmem.memory import records as memory_records
from agentmem.stores.table import Item

LIST_READ = 1_000
"""Entries one page of ``ListEvents`` reads at most (a filter that matches few answers fewer, with a token)."""


class EventOperations(DataPlane):
    def create_event(self, memory_id: str, body: models.CreateEventRequest) -> dict[str, Any]:
        actor = actor_of(memory_id, body.actor_id)
        session = body.session_id or new_id().lower()
        parts, kinds = ac.payload_parts(body.payload)
        metadata = {ac.check_key(k): v.string_value for k, v in (body.metadata or {}).items()}
        metadata[ac.KIND] = ac.EVENT
        if kinds:
            metadata[ac.PAYLOAD] = " ".join(kinds)
        if body.branch is not None:
            metadata[ac.BRANCH] = body.branch.name
            if body.branch.root_event_id is not None:
                metadata[ac.BRANCH_ROOT] = body.branch.root_event_id
        role = next((ac.ROLES[k] for k in kinds if k in ac.ROLES), None)
        entry = wire.entry(
            {"role": role, "parts": parts}, author=role, timestamp=body.event_timestamp, metadata=metadata
        )
        self._memory.ensure_writable(actor.user)

        config = self._memories.get(actor.user.app) if self._memories is not None else None
        ttl = config.event_expiry_days * 86_400 if config is not None and config.event_expiry_days else None

        def create() -> dict[str, Any]:
            if state_events.is_state(kinds):  # no conversational item: an event only, never a memory
                item = state_events.write(self._table, actor.scope, session, entry, self._clock(), ttl)
            else:
                item = wire.item_of(self._memory.add_entry(actor.scope, entry, session, ttl_seconds=ttl))
            self._actors.register(actor.user)
            return {"event": wire.event(memory_id, actor.user.user, item, include_payload=True)}

        return self._once(actor.user, body.client_token, body, create)

    def get_event(self, memory_id: str, actor_id: str, session_id: str, event_id: str) -> dict[str, Any]:
        actor = actor_of(memory_id, actor_id)
        item = self._event_item(actor, session_id, event_id)
        return {"event": wire.event(memory_id, actor_id, item, include_payload=True)}

    def delete_event(self, memory_id: str, actor_id: str, session_id: str, event_id: str) -> dict[str, Any]:
        actor = actor_of(memory_id, actor_id)
        item = self._event_item(actor, session_id, event_id)
        if str(item["sk"]).startswith(memory_records.EVENT):
            self._table.batch_write(deletes=state_events.keys(item))
        else:
            self._memory.delete_entry(actor.user, item["id"])
        return {"eventId": event_id}

    def _event_item(self, actor: Actor, session_id: str, event_id: str) -> Item:
        entry_id = ac.entry_of_event(event_id)
        item = self._memory.entry_item_of(actor.scope, entry_id) if entry_id is not None else None
        if item is None and entry_id is not None:
            item = state_events.get(self._table, actor.scope, entry_id)
        if item is None or not memory_records.is_live(item, self._now()) or item.get("session_id") != session_id:
            raise NotFound(f"no event {event_id!r} in this session of this actor")
        return item

    def list_events(
        self, memory_id: str, actor_id: str, session_id: str, body: models.ListEventsRequest
    ) -> dict[str, Any]:
        """The session's events newest first (as AgentCore lists them), filtered by branch and metadata."""
        actor = actor_of(memory_id, actor_id)
        state = page_tokens.decode(body.next_token, "", branches=True) if body.next_token else {}
        branch = body.filter.branch if body.filter else None
        allowed: dict[str, str | None] = state.get("branches") or {}
        if branch is not None and not allowed:
            allowed = {_branch_key(branch.name): None}
        where = metadata_filters.event_filter(body.filter.event_metadata if body.filter else None)
        prefix = memory_records.session_prefix(session_id)
        start = prefix + state["after"] if state.get("after") else None
        now = self._now()
        events: list[dict[str, Any]] = []
        last: str | None = None
        exhausted = True
        budget = Budget()  # a page's events within the response budget, however large their payloads
        page = body.max_results + 1 if where is None and branch is None else 100  # a filter reads more to match
        for read, item in enumerate(self._session_items(actor.scope, prefix, start, page), 1):
            if memory_records.matches(item, where, now) and self._on_branch(actor, item, branch, allowed):
                event = wire.event(memory_id, actor_id, item, include_payload=body.include_payloads)
                if not budget.take(event):  # the next page starts with this event
                    exhausted = False
                    break
                events.append(event)
            last = item["id"]
            if len(events) >= body.max_results or read >= LIST_READ:
                exhausted = False
                break
        answer: dict[str, Any] = {"events": events}
        if not exhausted and last is not None:
            answer["nextToken"] = page_tokens.encode({"after": last, "branches": allowed})
        return answer

    def _on_branch(
        self, actor: Actor, item: Item, wanted: models.BranchFilter | None, allowed: dict[str, str | None]
    ) -> bool:
        """Whether an event is on the branch asked for (or, with its parents, before the branch's fork).
        Events come newest first, so a branch's events come before its root, whose branch is added then."""
        if wanted is None:
            return True
        metadata = memory_records.entry_metadata(item)
        branch = _branch_key(metadata.get(ac.BRANCH))
        if branch not in allowed:
            return False
        upto = allowed[branch]
        if upto is not None and item["id"] > upto:
            return False
        root = metadata.get(ac.BRANCH_ROOT)
        if wanted.include_parent_branches and isinstance(root, str):
            root_id = ac.entry_of_event(root)
            root_item = self._memory.entry_item_of(actor.scope, root_id) if root_id else None
            if root_item is not None:
                parent = _branch_key(memory_records.entry_metadata(root_item).get(ac.BRANCH))
                allowed.setdefault(parent, root_item["id"])
        return True

    def _session_items(self, scope: Scope, prefix: str, start: str | None, size: int) -> Iterator[Item]:
        """The session's entry items, newest first, from its index rows (memory/records.py), ``size`` a read."""
        while True:
            page = self._table.query(scope.partition, prefix, limit=size, descending=True, start_after=start)
            ids = [row["sk"][len(prefix) :] for row in page.items]
            wanted = [state_events.item_key(scope.partition, row, prefix) for row in page.items]
            found = {item["id"]: item for item in self._table.batch_get(wanted)}
            yield from (found[i] for i in ids if i in found)
            if page.next_start is None:
                return
            start = page.next_start

    def list_sessions(self, memory_id: str, actor_id: str, body: models.ListSessionsRequest) -> dict[str, Any]:
        """The actor's sessions in id order, each with when its first entry was written (one read each)."""
        actor = actor_of(memory_id, actor_id)
        start = page_tokens.decode(body.next_token, memory_records.SESSION_INDEX)["after"] if body.next_token else None
        summaries: list[dict[str, Any]] = []
        more = False
        while True:
            page = self._table.query(actor.scope.partition, memory_records.SESSION_INDEX, limit=1, start_after=start)
            if not page.items:
                break
            if len(summaries) >= body.max_results:
                more = True
                break
            escaped, _, first = page.items[0]["sk"][len(memory_records.SESSION_INDEX) :].rpartition("#")
            summaries.append({"sessionId": unescape(escaped), "actorId": actor_id, "createdAt": ac.created_at(first)})
            start = f"{memory_records.SESSION_INDEX}{escaped}#~"  # past every row of this session
        answer: dict[str, Any] = {"sessionSummaries": summaries}
        if more and start is not None:
            answer["nextToken"] = page_tokens.encode({"after": start})
        return answer


def _branch_key(name: Any) -> str:
    """Events without a branch are on ``main``."""
    return name if isinstance(name, str) and name != "main" else ""
