"""The AgentCore control plane for memories (CreateMemory, GetMemory, ListMemories, UpdateMemory,
DeleteMemory) on this service's apps (docs/agentcore.md).

A memory is an app: ``CreateMemory`` makes a new app (its id, ``<name>-<10 characters>``, as AgentCore's)
owned by the caller's app, with its strategies (agentmem/extraction/config.py). The caller's key may then use
it as its own app, through the data plane and the REST API. ``DeleteMemory`` erases every user of the memory
with the same workflow as a user's erasure, then the memory itself: the memory is ``DELETING`` until the last
erasure has ended and no write that read it before the delete can still land (a user such a write made is listed
and erased too), and answers ``ResourceNotFoundException`` after, to its owner as to anyone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from agentmem import users
from agentmem.agentcore import control_models as cm
from agentmem.agentcore import records as ac
from agentmem.clock import format_timestamp, parse_timestamp, utc_now
from agentmem.errors import Conflict, Forbidden, InvalidInput, NotFound
from agentmem.extraction import config
from agentmem.extraction.config import AppMemories, AppMemory, Strategy, StrategyType
from agentmem.extraction.service import NO_MODEL
from agentmem.extraction.work import parked_partition
from agentmem.keys import UserRef, escape
from agentmem.stores.table import Table, query_all

ERASURES_PER_CALL = 50
"""User erasures one call of DeleteMemory or GetMemory starts at most (the rest on the next calls)."""
_TYPES: dict[str, StrategyType] = {
    "semantic_memory_strategy": "SEMANTIC",
    "summary_memory_strategy": "SUMMARIZATION",
    "user_preference_memory_strategy": "USER_PREFERENCE",
    "episodic_memory_strategy": "EPISODIC",
}
_OVERRIDES: dict[str, StrategyType] = {
    "semantic_override": "SEMANTIC",
    "summary_override": "SUMMARIZATION",
    "user_preference_override": "USER_PREFERENCE",
    "episodic_override": "EPISODIC",
}
_OVERRIDE_NAMES = {
    "SEMANTIC": "semantic",
    "SUMMARIZATION": "summary",
    "USER_PREFERENCE": "userPreference",
    "EPISODIC": "episodic",
}

Erase = Callable[[UserRef], str]
"""Start (or find running) the erasure of a user; its deletion id."""
ErasureStatus = Callable[[UserRef, str], str]


class MemoryControl:
    def __init__(
        self,
        table: Table,
        memories: AppMemories,
        *,
        model_id: str | None,
        erase: Erase,
        erasure_status: ErasureStatus,
        region: str | None = None,
        clock: Callable[[], datetime] = utc_now,
        drain_seconds: float = config.CACHE_SECONDS,
    ) -> None:
        """``drain_seconds``: how long after DeleteMemory a write that read the memory before it may still land
        (a process trusts what it read for CACHE_SECONDS, and a request runs for the API's timeout): the memory
        is removed only after it, once its users, listed again, are all erased."""
        self._drain = timedelta(seconds=drain_seconds)
        self._table = table
        self._memories = memories
        self._model_id = model_id
        self._erase = erase
        self._erasure_status = erasure_status
        self._region = region or "us-east-1"
        self._clock = clock

    # -- operations -------------------------------------------------------------------------------------

    def create(self, owner: str, body: cm.CreateMemoryRequest) -> dict[str, Any]:
        if body.client_token:
            made = self._table.get(_tokens_partition(owner), body.client_token)
            earlier = self._memories.get(str(made["app"]), fresh=True) if made is not None else None
            if earlier is not None:  # a retry of a create that was answered: the same memory (unless deleted since)
                return {"memory": self._wire(earlier)}
        now = self._now()
        app = config.new_id(body.name)
        strategies = [self._strategy(s, now) for s in body.memory_strategies or ()]
        memory = AppMemory(
            app,
            body.name,
            owner,
            now,
            now,
            description=body.description,
            event_expiry_days=body.event_expiry_duration,
        )
        memory = self._memories.create(config.with_strategies(memory, strategies, now))
        if body.client_token:
            token_ttl = int(self._clock().timestamp()) + 86_400
            self._table.put({"pk": _tokens_partition(owner), "sk": body.client_token, "app": app, "ttl": token_ttl})
        return {"memory": self._wire(memory)}

    def get(self, memory_id: str) -> dict[str, Any]:
        memory = self._progress(self._memories.require(ac.app_of_memory(memory_id)))
        return {"memory": self._wire(memory)}

    def list_memories(self, owner: str, body: cm.ListMemoriesRequest) -> dict[str, Any]:
        after_token = body.next_token
        if after_token is not None and (
            len(after_token.encode("utf-8", "surrogatepass")) > 1024 or not after_token.isprintable()
        ):
            raise InvalidInput("nextToken is not one this API returned", code="invalid_cursor")
        apps, after = self._memories.owned(owner, after=after_token, limit=body.max_results)
        summaries = []
        for app in apps:
            memory = self._memories.get(app, fresh=True)
            if memory is None:
                continue
            wire = self._wire(self._progress(memory))
            summaries.append({k: wire[k] for k in ("arn", "id", "status", "createdAt", "updatedAt")})
        answer: dict[str, Any] = {"memories": summaries}
        if after is not None:
            answer["nextToken"] = after
        return answer

    def update(self, memory_id: str, body: cm.UpdateMemoryRequest) -> dict[str, Any]:
        before = self._memories.require(ac.app_of_memory(memory_id))
        if before.deleting:
            raise Conflict("the memory is being deleted", code="memory_deleting")
        now = self._now()
        after = before
        if body.description is not None:
            after = replace(after, description=body.description)
        if body.event_expiry_duration is not None:
            after = replace(after, event_expiry_days=body.event_expiry_duration)
        changes = body.memory_strategies or cm.ModifyStrategies()
        kept = list(after.strategies)
        for ref in changes.delete_memory_strategies or ():
            if after.strategy(ref.memory_strategy_id) is None:
                raise NotFound(f"no strategy {ref.memory_strategy_id!r} in this memory", code="strategy_not_found")
            kept = [s for s in kept if s.id != ref.memory_strategy_id]
        for change in changes.modify_memory_strategies or ():
            kept = [self._modified(s, change, now) if s.id == change.memory_strategy_id else s for s in kept]
            if all(s.id != change.memory_strategy_id for s in kept):
                raise NotFound(f"no strategy {change.memory_strategy_id!r} in this memory", code="strategy_not_found")
        kept += [self._strategy(s, now) for s in changes.add_memory_strategies or ()]
        after = config.with_strategies(after, kept, now)
        return {"memory": self._wire(self._memories.save(before, after))}

    def delete(self, memory_id: str) -> dict[str, Any]:
        memory = self._memories.require(ac.app_of_memory(memory_id))
        if not memory.deleting:
            memory = self._memories.save(memory, replace(memory, deleting=True, updated_at=self._now()))
        with contextlib.suppress(NotFound):  # deleted at once (nothing held): the delete succeeded all the same
            self._progress(memory)
        return {"memoryId": memory.app, "status": "DELETING"}

    # -- deleting a memory --------------------------------------------------------------------------------

    def _progress(self, memory: AppMemory) -> AppMemory:
        """A deleting memory's next step: start the erasures of users not yet started (a page of them), and
        once every erasure has succeeded, remove what the app itself holds and the memory (NotFound then)."""
        if not memory.deleting:
            return memory
        started = dict(memory.erasures)
        for user in self._users(memory.app):
            if user not in started and len(started) - len(memory.erasures) < ERASURES_PER_CALL:
                started[user] = self._erase(UserRef(memory.app, user))
        statuses = {user: self._erasure_status(UserRef(memory.app, user), d) for user, d in started.items()}
        failed = [user for user, status in statuses.items() if status == "FAILED"]
        for user in failed:  # a failed erasure is started again: its steps are safe to repeat
            started[user] = self._erase(UserRef(memory.app, user))
        if started != memory.erasures:
            memory = self._memories.save(memory, replace(memory, erasures=started))
        done = all(status == "SUCCEEDED" for status in statuses.values()) and not failed
        drained = self._clock() >= parse_timestamp(memory.updated_at) + self._drain  # no stale write can land now
        if done and drained and set(started) >= set(self._users(memory.app)):
            self._remove(memory)
            raise NotFound(f"no memory {memory.app!r}: it was deleted", code="memory_not_found")
        return memory

    def _users(self, app: str) -> list[str]:
        """Every user the app holds data for: its user list, and its AgentCore actors (listed since before)."""
        listed: dict[str, None] = {}
        after: str | None = None
        while True:
            page, after = users.app_users(self._table, app, after=after, limit=500)
            listed.update(dict.fromkeys(page))
            if after is None:
                break
        for row in query_all(self._table, ac.index_partition(app), ac.ACTOR_ROW):
            listed.setdefault(str(row["actor"]), None)
        return list(listed)

    def _remove(self, memory: AppMemory) -> None:
        leftovers = [
            (item["pk"], item["sk"])
            for pk in (
                ac.index_partition(memory.app),
                parked_partition(memory.app),
                users.app_users_partition(memory.app),
            )
            for item in query_all(self._table, pk)
        ]
        self._table.batch_write(deletes=leftovers)
        self._memories.remove(memory)

    # -- strategies -------------------------------------------------------------------------------------

    def _strategy(self, given: cm.StrategyInput, now: str) -> Strategy:
        member, spec = next((k, v) for k, v in given if v is not None)
        extraction = consolidation = None
        custom = member == "custom_memory_strategy"
        if custom:
            assert isinstance(spec, cm.CustomStrategy)
            kind, extraction, consolidation = self._override(spec.configuration)
        else:
            kind = _TYPES[member]
        assert isinstance(spec, cm.BuiltInStrategy)
        template = (spec.namespace_templates or spec.namespaces or [config.DEFAULT_NAMESPACES[kind]])[0]
        return Strategy(
            config.new_id(spec.name),
            spec.name,
            kind,
            ac.check_template(template),
            description=spec.description,
            extraction_instruction=extraction,
            consolidation_instruction=consolidation,
            custom=custom,
            created_at=now,
            updated_at=now,
        )

    @staticmethod
    def _override(configuration: cm.CustomConfiguration | None) -> tuple[StrategyType, str | None, str | None]:
        if configuration is None:
            raise InvalidInput("a custom strategy needs a configuration (an override of a built-in strategy)")
        if configuration.self_managed_configuration is not None:
            raise InvalidInput(
                "self-managed strategies (delivery to SNS and S3) are not offered here: use a built-in strategy "
                "with an override, or write records with BatchCreateMemoryRecords"
            )
        member, override = next((k, v) for k, v in configuration if v is not None)
        extraction = getattr(override, "extraction", None)
        consolidation = getattr(override, "consolidation", None)
        return (
            _OVERRIDES[member],
            extraction.append_to_prompt if extraction is not None else None,
            consolidation.append_to_prompt if consolidation is not None else None,
        )

    @staticmethod
    def _modified(strategy: Strategy, change: cm.ModifyStrategy, now: str) -> Strategy:
        template = (change.namespace_templates or change.namespaces or [strategy.namespace])[0]
        extraction, consolidation = strategy.extraction_instruction, strategy.consolidation_instruction
        if change.configuration is not None:
            extraction = _appended(change.configuration.extraction, extraction)
            consolidation = _appended(change.configuration.consolidation, consolidation)
        return replace(
            strategy,
            namespace=ac.check_template(template),
            description=change.description if change.description is not None else strategy.description,
            extraction_instruction=extraction,
            consolidation_instruction=consolidation,
            updated_at=now,
        )

    # -- wire shapes ------------------------------------------------------------------------------------

    def _wire(self, memory: AppMemory) -> dict[str, Any]:
        now = self._clock()
        wire: dict[str, Any] = {
            "arn": f"arn:aws:bedrock-agentcore:{self._region}:000000000000:memory/{memory.app}",
            "id": memory.app,
            "name": memory.name,
            "eventExpiryDuration": memory.event_expiry_days or 90,
            "status": memory.status_at(now),
            "createdAt": _epoch(memory.created_at),
            "updatedAt": _epoch(memory.updated_at),
            "strategies": [self._wire_strategy(s, memory, now) for s in memory.strategies],
        }
        if memory.description:
            wire["description"] = memory.description
        if memory.strategies and self._model_id is None:
            wire["failureReason"] = NO_MODEL
        return wire

    def _wire_strategy(self, strategy: Strategy, memory: AppMemory, now: datetime) -> dict[str, Any]:
        changed = parse_timestamp(strategy.updated_at or memory.updated_at)
        settled = now >= changed + timedelta(seconds=config.CACHE_SECONDS)
        wire: dict[str, Any] = {
            "strategyId": strategy.id,
            "name": strategy.name,
            "type": "CUSTOM" if strategy.custom else strategy.type,
            "namespaces": [strategy.namespace],
            "namespaceTemplates": [strategy.namespace],
            "status": "ACTIVE" if settled else "CREATING",
        }
        if strategy.description:
            wire["description"] = strategy.description
        if strategy.created_at:
            wire["createdAt"] = _epoch(strategy.created_at)
            wire["updatedAt"] = _epoch(strategy.updated_at or strategy.created_at)
        if strategy.custom:
            wire["configuration"] = _wire_override(strategy, self._model_id or "none")
        return wire

    def _now(self) -> str:
        return format_timestamp(self._clock())


def _appended(change: dict[str, object] | None, current: str | None) -> str | None:
    """The appended prompt a modification sets (any override member's ``appendToPrompt``), else the current one."""
    if not change:
        return current
    for value in change.values():
        if isinstance(value, dict):
            for inner in value.values():
                if isinstance(inner, dict) and isinstance(inner.get("appendToPrompt"), str):
                    return str(inner["appendToPrompt"])
    return current


def _tokens_partition(owner: str) -> str:
    """CreateMemory's client tokens of one owner (a retry answers the memory the first call made), a day each."""
    return f"MEMTOKENS#{escape(owner)}"


def _wire_override(strategy: Strategy, model_id: str) -> dict[str, Any]:
    """A custom strategy's configuration as the model reads it; its model is the one this service runs."""
    name = _OVERRIDE_NAMES[strategy.type]
    wire: dict[str, Any] = {"type": f"{strategy.type.replace('SUMMARIZATION', 'SUMMARY')}_OVERRIDE"}
    if strategy.extraction_instruction:
        wire["extraction"] = {
            "customExtractionConfiguration": {
                f"{name}ExtractionOverride": {"appendToPrompt": strategy.extraction_instruction, "modelId": model_id}
            }
        }
    if strategy.consolidation_instruction:
        wire["consolidation"] = {
            "customConsolidationConfiguration": {
                f"{name}ConsolidationOverride": {
                    "appendToPrompt": strategy.consolidation_instruction,
                    "modelId": model_id,
                }
            }
        }
    return wire


def _epoch(stamp: str) -> float:
    return parse_timestamp(stamp).timestamp()


def owner_may(owner: str | None, caller: str, app: str) -> bool:
    """Whether a key of app ``caller`` may act on app ``app``: its own, or a memory its app created."""
    return caller == app or (owner is not None and owner == caller)


def forbidden() -> Forbidden:
    return Forbidden("this API key belongs to another app, which does not own this memory")
