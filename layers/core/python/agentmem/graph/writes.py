"""The graph's entity writes: upsert many entities with their new facts in few calls.

One read of every entity of the call, then the scope registry, then the entities in versioned
transactions, several entities per transaction
(one step of each entity per round; the rounds' transactions go together, concurrently on DynamoDB).
A transaction that loses a race is applied again entity by entity, each re-reading its entity, under
the bounded retry. An entity's ``facts`` (content digest -> observation id of its current facts) make
the dedupe and the no-lost-fact guarantee of concurrent writers (see ``agentmem.graph.records``). The
write ends by logging the entities it wrote, for every process's search index
(agentmem/graph/search_index.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentmem import users
from agentmem.clock import new_id
from agentmem.graph import records
from agentmem.graph.scoring import index_tokens
from agentmem.graph.search_index import log_changed
from agentmem.graph.timeslice import is_current
from agentmem.keys import Scope
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import (
    Condition,
    Delete,
    Item,
    Put,
    Table,
    WriteOp,
    check_items,
    query_all,
    size_bound,
    write_outcome,
)
from agentmem.tenancy import metering

DEFAULT_TYPE = "general"
TRANSACTION_OPS = 96
"""Operations per transaction a write groups (the guarded table adds the mark and registry checks)."""
_TRANSACTION_BYTES = 2_000_000
_FACTS_PER_STEP = 40
"""Observations one entity gets per transaction (more facts: several versioned steps)."""


@dataclass(slots=True)
class _Step:
    """One versioned change of one entity: it gets these new observations (and is created, or its
    type and recency move on)."""

    name: str
    kind: str | None
    observations: list[Item]


@dataclass(slots=True)
class _Built:
    step: _Step
    entity: Item
    ops: list[WriteOp]
    kept: list[Item]


@dataclass(slots=True)
class _Write:
    """The state of one multi-entity write: what each entity is known to hold, what was stored."""

    scope: Scope
    now: str
    entities: dict[str, Item | None]
    inherited: dict[str, str]
    digests: dict[str, str]
    """Each new fact's content -> its digest (the key of the entity's ``facts``), computed once."""
    written: dict[str, list[Item]] = field(default_factory=dict)


def observations_of(table: Table, partition: str, name: str) -> list[Item]:
    """Every observation of the entity ``name`` of one partition, current and past."""
    return query_all(table, partition, records.observation_prefix(name))


def facts_of(table: Table, entity: Item) -> dict[str, str]:
    """The entity's current facts (content digest -> observation id); from its observations for an
    entity written before the entity item listed them (layout 1)."""
    facts = entity.get("facts")
    if isinstance(facts, dict):
        return dict(facts)
    current = (o for o in observations_of(table, entity["pk"], entity["name"]) if is_current(o))
    return {records.fact_digest(o["content"]): o["id"] for o in current}


def version_is(version: int) -> Condition:
    return Condition(equals={"version": version})


class EntityWriter:
    def __init__(self, table: Table, now: Callable[[], str]) -> None:
        self._table = table
        self._now = now

    def write(
        self,
        scope: Scope,
        specs: Sequence[tuple[str, str | None, Sequence[str]]],
        valid_from: str | None = None,
        source: str | None = None,
    ) -> tuple[dict[str, Item], dict[str, list[Item]]]:
        """Upsert entities ``(name, type or None, facts)`` of one scope, with the facts not already current
        (``source``: the memory record the new facts were learnt as).

        Return each entity item as stored and the observations this write stored.
        """
        partition = scope.partition
        now = self._now()
        wanted: dict[str, tuple[str | None, list[str]]] = {}
        for name, kind, texts in specs:
            before_kind, before = wanted.get(name, (None, []))
            wanted[name] = (kind or before_kind, list(dict.fromkeys([*before, *texts])))
        names = list(wanted)
        found: dict[str, Item | None] = dict.fromkeys(names)
        found.update({i["name"]: i for i in self._table.batch_get([(partition, records.entity_sk(n)) for n in names])})
        absent = [n for n in names if found[n] is None]
        held = {n: facts_of(self._table, item) for n, item in found.items() if item is not None}
        digests = {t: records.fact_digest(t) for n in names for t in wanted[n][1]}
        fresh = {n: [t for t in wanted[n][1] if digests[t] not in held.get(n, {})] for n in names}
        tokens = {t: index_tokens(t) for n in names for t in fresh[n]}
        start = valid_from or now
        write = _Write(scope, now, entities=found, inherited=self._inherited_types(scope, absent), digests=digests)
        steps: list[_Step] = []
        checked: list[Item] = []
        for n in names:
            observations = [
                records.observation_item(
                    partition,
                    scope.project_id,
                    n,
                    new_id(),
                    t,
                    valid_from=start,
                    recorded_at=now,
                    tokens=tokens[t],
                    source=source,
                )
                for t in fresh[n]
            ]
            for i in range(0, max(len(observations), 1), _FACTS_PER_STEP):
                steps.append(_Step(n, wanted[n][0], observations[i : i + _FACTS_PER_STEP]))
            checked += observations
            checked += [records.pointer_item(o) for o in observations]
            facts = {**held.get(n, {}), **{digests[o["content"]]: o["id"] for o in observations}}
            kind = self._kind(write, n, wanted[n][0])
            checked.append(
                records.entity_item(
                    partition,
                    scope.project_id,
                    n,
                    kind,
                    created_at=now,
                    updated_at=now,
                    version=1,
                    facts=facts,
                )
            )
        registry = users.registry_item(scope)
        check_items([registry, *checked])  # a rejected write must leave nothing behind
        self._table.put(registry)
        self._run(write, steps)
        log_changed(self._table, partition, names)  # every process's search index re-reads these entities
        stored = {n: item for n, item in write.entities.items() if item is not None}
        metering.count(items_stored=sum(len(facts) for facts in write.written.values()))
        return stored, write.written

    def _kind(self, write: _Write, name: str, requested: str | None) -> str:
        current = write.entities.get(name)
        if requested is not None:
            return requested
        if current is not None:
            return str(current["entity_type"])
        return write.inherited.get(name) or DEFAULT_TYPE

    def _inherited_types(self, scope: Scope, names: Sequence[str]) -> dict[str, str]:
        """The types the global scope gives the entities a project write creates."""
        if scope.project_id is None or not names:
            return {}
        partition = scope.global_scope.partition
        return {
            i["name"]: str(i["entity_type"])
            for i in self._table.batch_get([(partition, records.entity_sk(n)) for n in names])
        }

    def _run(self, write: _Write, steps: Sequence[_Step]) -> None:
        """Apply the steps in rounds: each round takes the next step of every entity, grouped into
        transactions of distinct entities sent together (concurrently on DynamoDB). A group that loses
        a race is applied again step by step, each re-reading its entity (bounded)."""
        pending = list(steps)
        while pending:
            groups: list[list[_Built]] = [[]]
            seen: set[str] = set()
            later: list[_Step] = []
            ops = size = 0
            for step in pending:
                if step.name in seen:
                    later.append(step)
                    continue
                seen.add(step.name)
                built = self._build(write, step)
                weight = sum(size_bound(op.item) for op in built.ops if isinstance(op, Put))
                if groups[-1] and (ops + len(built.ops) > TRANSACTION_OPS or size + weight > _TRANSACTION_BYTES):
                    groups.append([])
                    ops = size = 0
                groups[-1].append(built)
                ops += len(built.ops)
                size += weight
            batches = [[op for built in group for op in built.ops] for group in groups]
            if len(batches) == 1:
                outcomes = [write_outcome(self._table.transact_write, batches[0])]
            else:
                outcomes = self._table.transact_write_each(batches)
            for group, outcome in zip(groups, outcomes, strict=True):
                for built in group:
                    if outcome is None:
                        self._record(write, built)
                    else:
                        self._apply(write, built.step)
            pending = later

    def _apply(self, write: _Write, step: _Step) -> None:
        partition = write.scope.partition

        def attempt() -> _Built:
            write.entities[step.name] = self._table.get(partition, records.entity_sk(step.name))
            built = self._build(write, step)
            self._table.transact_write(built.ops)
            return built

        self._record(write, retry_on_conflict(attempt, what="the entity"))

    def _record(self, write: _Write, built: _Built) -> None:
        write.entities[built.step.name] = built.entity
        write.written.setdefault(built.step.name, []).extend(built.kept)

    def _build(self, write: _Write, step: _Step) -> _Built:
        """The transaction of one step against the entity as last read (``write.entities``)."""
        partition = write.scope.partition
        name = step.name
        current = write.entities.get(name)
        facts = facts_of(self._table, current) if current is not None else {}
        kept: list[Item] = []
        for obs in step.observations:
            digest = write.digests[obs["content"]]
            if digest not in facts:  # else an identical current fact was stored meanwhile
                facts[digest] = obs["id"]
                kept.append(obs)
        kind = self._kind(write, name, step.kind)
        ops: list[WriteOp] = []
        if current is None:
            entity = records.entity_item(
                partition,
                write.scope.project_id,
                name,
                kind,
                created_at=write.now,
                updated_at=write.now,
                version=1,
                facts=facts,
            )
            ops += [Put(entity, Condition(exists=False)), Put(records.updated_item(partition, name, write.now))]
        else:
            updated_at = max(write.now, current["updated_at"])
            version = int(current["version"])
            entity = {**current, "entity_type": kind, "updated_at": updated_at, "version": version + 1, "facts": facts}
            entity.setdefault("seg", None)
            ops.append(Put(entity, version_is(version)))
            if updated_at != current["updated_at"]:
                ops.append(Delete(partition, records.updated_sk(current["updated_at"], name)))
                ops.append(Put(records.updated_item(partition, name, updated_at)))
        ops += [Put(obs) for obs in kept]
        ops += [Put(records.pointer_item(obs)) for obs in kept]
        return _Built(step, entity, ops, kept)
