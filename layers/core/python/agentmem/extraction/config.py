"""What an app learns from its conversations: its strategies, triggers and token budget (its *memory*,
in AgentCore's words), who owns it, and where that is kept.

An app's memory is one item (``MEM#<app>`` / ``CONFIG``). An app either is a tenant's own app (its key's
app: configured through ``/v1/apps/{app}/strategies``) or was created by a tenant through AgentCore's
``CreateMemory`` (its id is a new app, ``<name>-<10 characters>``, owned by the creating key's app, and
listed under it: ``MEMS#<owner>`` / ``<app>``). A key may act on its own app and on every memory its
app owns (agentmem/api/tenancy.py).

Readers cache an app's memory for :data:`CACHE_SECONDS` in each process: a change reaches every process
within that time, which is why a memory created or updated answers ``CREATING`` / ``UPDATING`` until then
(:meth:`AppMemory.status_at`).
"""

from __future__ import annotations

import json
import secrets
import string
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from agentmem.clock import format_timestamp, parse_timestamp, utc_now
from agentmem.errors import ConditionFailed, Conflict, InvalidInput, NotFound
from agentmem.keys import escape, unescape
from agentmem.stores.table import Condition, Item, Put, Table

CACHE_SECONDS = 5.0
"""How long a process trusts the memory of an app it read (a change shows everywhere within this)."""
CONFIG_SK = "CONFIG"
DELETED = "deleted_at"
"""On the configuration item of a memory that was deleted (its tombstone)."""
MAX_STRATEGIES = 6
"""As AgentCore: at most six strategies per memory."""
DEFAULT_TRIGGER_MESSAGES = 6
"""A session's messages are extracted once this many are new (AgentCore's message trigger: 1..50)."""
DEFAULT_TRIGGER_IDLE_SECONDS = 60
"""... or once the session has been idle this long (AgentCore's idle trigger: 10..3000 s)."""
MAX_INSTRUCTION_CHARS = 30_000

StrategyType = Literal["SEMANTIC", "USER_PREFERENCE", "SUMMARIZATION", "EPISODIC"]
STRATEGY_TYPES: tuple[StrategyType, ...] = ("SEMANTIC", "USER_PREFERENCE", "SUMMARIZATION", "EPISODIC")
DEFAULT_NAMESPACES: dict[StrategyType, str] = {
    "SEMANTIC": "/strategies/{memoryStrategyId}/actors/{actorId}/",
    "USER_PREFERENCE": "/strategies/{memoryStrategyId}/actors/{actorId}/",
    "SUMMARIZATION": "/strategies/{memoryStrategyId}/actors/{actorId}/sessions/{sessionId}/",
    "EPISODIC": "/strategies/{memoryStrategyId}/actors/{actorId}/sessions/{sessionId}/",
}
"""AgentCore's own default namespace templates (its SDK's ``DEFAULT_NAMESPACES``)."""
_ID_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True, slots=True)
class Strategy:
    """One way of learning: what to extract (its type), where its records go (a namespace template), and
    the instructions a tenant appends to its prompts (AgentCore's ``appendToPrompt`` overrides)."""

    id: str
    name: str
    type: StrategyType
    namespace: str
    description: str | None = None
    extraction_instruction: str | None = None
    consolidation_instruction: str | None = None
    custom: bool = False
    """Created as AgentCore's ``customMemoryStrategy`` (an override of the built-in ``type``)."""
    created_at: str = ""
    updated_at: str = ""

    def namespace_for(self, actor: str, session: str) -> str:
        return (
            self.namespace.replace("{actorId}", actor)
            .replace("{sessionId}", session)
            .replace("{memoryStrategyId}", self.id)
        )


@dataclass(frozen=True, slots=True)
class AppMemory:
    app: str
    name: str
    owner: str
    created_at: str
    updated_at: str
    description: str | None = None
    strategies: tuple[Strategy, ...] = ()
    event_expiry_days: int | None = None
    trigger_messages: int = DEFAULT_TRIGGER_MESSAGES
    trigger_idle_seconds: int = DEFAULT_TRIGGER_IDLE_SECONDS
    token_budget: int | None = None
    """Model tokens (input and output) the app may spend on extraction in a calendar month (UTC)."""
    deleting: bool = False
    erasures: dict[str, str] = field(default_factory=dict)
    """While the memory is being deleted: the erasure (deletion id) of each of its users."""

    def status_at(self, now: datetime) -> str:
        """``DELETING``; ``CREATING`` / ``UPDATING`` until every process sees this version; else ``ACTIVE``."""
        if self.deleting:
            return "DELETING"
        if now < parse_timestamp(self.updated_at) + timedelta(seconds=CACHE_SECONDS):
            return "CREATING" if self.updated_at == self.created_at else "UPDATING"
        return "ACTIVE"

    def strategy(self, strategy_id: str) -> Strategy | None:
        return next((s for s in self.strategies if s.id == strategy_id), None)

    def to_item(self) -> Item:
        state = asdict(self)
        state["strategies"] = [asdict(s) for s in self.strategies]
        return {"pk": config_partition(self.app), "sk": CONFIG_SK, "owner": self.owner, "state": json.dumps(state)}

    @classmethod
    def of_item(cls, item: Item) -> AppMemory:
        state = json.loads(item["state"])
        state["strategies"] = tuple(Strategy(**s) for s in state.get("strategies") or ())
        return cls(**state)


def config_partition(app: str) -> str:
    return f"MEM#{escape(app)}"


def owned_partition(owner: str) -> str:
    return f"MEMS#{escape(owner)}"


def new_id(name: str) -> str:
    """An AgentCore-shaped id: the name, a dash and 10 random letters or digits."""
    return f"{name}-{''.join(secrets.choice(_ID_ALPHABET) for _ in range(10))}"


class AppMemories:
    """The apps' memories in the table, cached per process for :data:`CACHE_SECONDS`."""

    def __init__(self, table: Table, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._table = table
        self._clock = clock
        self._cache: dict[str, tuple[float, Item | None]] = {}
        self._lock = threading.Lock()

    def _item(self, app: str, fresh: bool) -> Item | None:
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(app)
        if cached is not None and not fresh and now - cached[0] < CACHE_SECONDS:
            return cached[1]
        item = self._table.get(config_partition(app), CONFIG_SK)
        with self._lock:
            self._cache[app] = (now, item)
        return item

    def get(self, app: str, *, fresh: bool = False) -> AppMemory | None:
        item = self._item(app, fresh)
        return AppMemory.of_item(item) if item is not None and DELETED not in item else None

    def deleted(self, app: str) -> bool:
        """Whether ``app`` is a memory that was deleted (its tombstone: ids are never made twice), read with
        :meth:`get` (the same item)."""
        item = self._item(app, False)
        return item is not None and DELETED in item

    def require(self, app: str) -> AppMemory:
        memory = self.get(app, fresh=True)
        if memory is None:
            raise NotFound(f"no memory {app!r}", code="memory_not_found")
        return memory

    def owner_of(self, app: str) -> str | None:
        memory = self.get(app)
        return memory.owner if memory is not None else None

    def create(self, memory: AppMemory) -> AppMemory:
        """Store a new memory (refused if the app already has one) and list it under its owner."""
        ops = [
            Put(memory.to_item(), Condition(exists=False)),
            Put({"pk": owned_partition(memory.owner), "sk": escape(memory.app), "created_at": memory.created_at}),
        ]
        try:
            self._table.transact_write(ops)
        except ConditionFailed:
            raise Conflict(f"the app {memory.app!r} already has a memory", code="memory_exists") from None
        self._forget(memory.app)
        return memory

    def save(self, before: AppMemory, after: AppMemory) -> AppMemory:
        """Replace ``before`` by ``after`` if it is still stored as read (409 when another change landed)."""
        try:
            self._table.put(after.to_item(), Condition(equals={"state": before.to_item()["state"]}))
        except ConditionFailed:
            raise Conflict("the memory was changed meanwhile; read it again", code="memory_changed") from None
        self._forget(after.app)
        return after

    def put(self, memory: AppMemory) -> AppMemory:
        """Write an app's own memory (created or replaced; its own app owns it)."""
        self._table.put(memory.to_item())
        self._forget(memory.app)
        return memory

    def remove(self, memory: AppMemory) -> None:
        """The memory is gone: its configuration becomes a tombstone (every call on its id answers not found,
        with a key or without), and its owner no longer lists it."""
        tombstone = {"pk": config_partition(memory.app), "sk": CONFIG_SK, "owner": memory.owner, DELETED: self.now()}
        self._table.batch_write(puts=[tombstone], deletes=[(owned_partition(memory.owner), escape(memory.app))])
        self._forget(memory.app)

    def owned(self, owner: str, *, after: str | None = None, limit: int = 100) -> tuple[list[str], str | None]:
        """A page of the apps ``owner`` created memories for, in id order, and where the next page starts."""
        page = self._table.query(owned_partition(owner), limit=limit, start_after=after)
        return [unescape(item["sk"]) for item in page.items], page.next_start

    def now(self) -> str:
        return format_timestamp(self._clock())

    def _forget(self, app: str) -> None:
        with self._lock:
            self._cache.pop(app, None)


def with_strategies(memory: AppMemory, strategies: Sequence[Strategy], now: str) -> AppMemory:
    if len(strategies) > MAX_STRATEGIES:
        raise InvalidInput(f"a memory has at most {MAX_STRATEGIES} strategies", code="too_many_strategies")
    names = [s.name for s in strategies]
    if len(set(names)) != len(names):
        raise InvalidInput("two strategies of one memory share a name", code="duplicate_strategy")
    return replace(memory, strategies=tuple(strategies), updated_at=now)
