"""GraphMemoryService: a bitemporal knowledge graph per ``(app, user, project)`` on the Table port.

Scoping (SPEC section 1): reads in project P see the global graph and P's graph, merged by entity
name; writes addressed by name (entities, observations, relations, episodes) go to exactly the named
scope. Writes addressed by id (invalidate, supersede, delete) find the fact among the caller's visible
scopes only (an id of another user, app or project is "not found") and change it where it lives.

Time (docs/adr/0400-graph-bitemporal-semantics.md): every observation and relation carries valid time
(``valid_from``/``valid_to``: when it was true in the world) and transaction time (``recorded_at``/
``expired_at``: when this service learned it / stopped holding it current). Invalidating closes the
valid time and stamps ``expired_at``; the fact stays for ``history`` and time-travel reads.

Consistency: one entity is one item keyed by its name, created with a conditional put and updated
with a version check. It lists its current facts (``facts``: content digest -> observation id), and
every observation is written, closed or deleted in one transaction with the entity's versioned put,
so concurrent writers never lose a fact and never store the same current fact twice. A write of many
entities groups them into few transactions (one entity per transaction group; a group that loses a
race is retried entity by entity, bounded). Search segments (:mod:`agentmem.graph.segments`) are
written before the facts they index and taken out after, so a search never misses a fact; the scores
of returned entities are recomputed from the facts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentmem import users
from agentmem.budget import CARD_BUDGET_BYTES, Budget
from agentmem.clock import format_timestamp, new_id, utc_now
from agentmem.errors import Conflict, InvalidInput, NotFound
from agentmem.graph import records, segments
from agentmem.graph.episodes import Episodes
from agentmem.graph.paging import (
    Pager,
    decode_position,
    encode_position,
    entity_out,
    format_profile_card,
    merge_entities,
)
from agentmem.graph.scoring import index_tokens, score_tokens
from agentmem.graph.segments import Pair
from agentmem.graph.timeslice import TimeSlice, is_current
from agentmem.keys import Scope, validate_id
from agentmem.models.memory import MemoryEntry
from agentmem.observability import logger
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import (
    Check,
    Condition,
    Delete,
    Item,
    Key,
    Put,
    Table,
    WriteOp,
    check_items,
    item_size,
    query_all,
    write_outcome,
)

DEFAULT_TYPE = "general"
_TRANSACTION_OPS = 96
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
    dropped: list[Item]


@dataclass(slots=True)
class _Write:
    """The state of one multi-entity write: what each entity is known to hold, what was stored."""

    scope: Scope
    now: str
    seg: str
    names: dict[str, str]
    """The entities whose name this write posted, and in which segment."""
    entities: dict[str, Item | None]
    inherited: dict[str, str]
    types: set[str] = field(default_factory=set)
    written: dict[str, list[Item]] = field(default_factory=dict)
    dropped: list[Item] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)


class GraphMemoryService:
    def __init__(self, table: Table, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._table = users.guarded(table)
        self._clock = clock
        self._episodes = Episodes(self._table, clock)

    def _now(self) -> str:
        return format_timestamp(self._clock())

    def _begin_write(self, scope: Scope) -> None:
        """Refuse a write early while the user's erasure runs (409); the writes themselves are conditioned
        on the mark by the guarded table."""
        users.ensure_writable(self._table, scope.user_ref)

    def _register(self, scope: Scope) -> None:
        """Record the scope in the user's registry (with every write that stores something in it)."""
        self._table.put(users.registry_item(scope))

    # -- entities ----------------------------------------------------------------------------------

    def create_entities(self, scope: Scope, entities: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Upsert entities ``{name, entity_type?, observations?}``; return each with its current observations.

        A known entity keeps its type unless a new one is given; its ``updated_at`` moves on.
        """
        names = [validate_id(e["name"], "name") for e in entities]
        for e in entities:
            if e.get("entity_type") is not None:
                validate_id(e["entity_type"], "entity_type")
        self._begin_write(scope)
        stored, current, _ = self._write_entities(
            scope,
            [
                (name, spec.get("entity_type"), spec.get("observations") or [])
                for name, spec in zip(names, entities, strict=True)
            ],
        )
        return [entity_out(stored[name], current.get(name, [])) for name in names]

    def remember(
        self, scope: Scope, name: str, facts: Sequence[str], entity_type: str | None = None
    ) -> tuple[dict[str, Any], int]:
        """The ``remember`` tool: upsert one entity with facts; return it and how many facts were new."""
        validate_id(name, "name")
        if entity_type is not None:
            validate_id(entity_type, "entity_type")
        self._begin_write(scope)
        stored, current, written = self._write_entities(scope, [(name, entity_type, facts)])
        return entity_out(stored[name], current.get(name, [])), len(written.get(name, []))

    def _write_entities(
        self,
        scope: Scope,
        specs: Sequence[tuple[str, str | None, Sequence[str]]],
        valid_from: str | None = None,
    ) -> tuple[dict[str, Item], dict[str, list[Item]], dict[str, list[Item]]]:
        """Upsert entities ``(name, type or None, facts)`` of one scope, with the facts not already current.

        Return each entity item as stored, its current observations and the observations this write
        stored. One read of every entity, then the segments (and scope registry) in one batch, then the
        entities' transactions, several entities per transaction.
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
        held = {n: self._facts(item) for n, item in found.items() if item is not None}
        fresh = {n: [t for t in wanted[n][1] if records.fact_digest(t) not in held.get(n, {})] for n in names}
        tokens = {t: index_tokens(t) for n in names for t in fresh[n]}
        pairs = [Pair(token, n) for n in names for t in fresh[n] for token in tokens[t]]
        pairs += [p for n in absent for p in segments.name_pairs(n)]
        seg = segments.new_segment(new_id(), len(pairs))
        start = valid_from or now
        write = _Write(
            scope,
            now,
            seg,
            names=dict.fromkeys(absent, seg),
            entities=found,
            inherited=self._inherited_types(scope, absent),
        )
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
                    seg=seg,
                )
                for t in fresh[n]
            ]
            for i in range(0, max(len(observations), 1), _FACTS_PER_STEP):
                steps.append(_Step(n, wanted[n][0], observations[i : i + _FACTS_PER_STEP]))
            checked += observations
            checked += [records.pointer_item(o) for o in observations]
            facts = {**held.get(n, {}), **{records.fact_digest(o["content"]): o["id"] for o in observations}}
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
                    seg=seg,
                )
            )
            if found[n] is None or found[n]["entity_type"] != kind:  # type: ignore[index]
                write.types.add(kind)
        side = segments.segment_items(partition, seg, pairs)
        side += [p for kind in write.types for p in records.type_postings(partition, kind, index_tokens(kind))]
        side.append(users.registry_item(scope))
        check_items([*side, *checked])  # a rejected write must leave nothing behind
        self._table.batch_write(puts=side)
        self._run(write, steps)
        removals = [(o["seg"], p) for o in write.dropped for p in segments.observation_pairs(o)]
        removals += [(seg, p) for n in write.unnamed for p in segments.name_pairs(n)]
        self._unpost(partition, removals)
        stored = {n: item for n, item in write.entities.items() if item is not None}
        return stored, self._current_observations(stored.values(), write.written), write.written

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

    def _facts(self, entity: Item) -> dict[str, str]:
        """The entity's current facts (content digest -> observation id); from its observations for an
        entity written before the entity item listed them (layout 1)."""
        facts = entity.get("facts")
        if isinstance(facts, dict):
            return dict(facts)
        current = (o for o in self._observations(entity["pk"], entity["name"]) if is_current(o))
        return {records.fact_digest(o["content"]): o["id"] for o in current}

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
                weight = sum(item_size(op.item) for op in built.ops if isinstance(op, Put))
                if groups[-1] and (ops + len(built.ops) > _TRANSACTION_OPS or size + weight > _TRANSACTION_BYTES):
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
        name = built.step.name
        if write.names.get(name) == write.seg and built.entity.get("seg") != write.seg:
            write.unnamed.append(name)  # created meanwhile by another writer, whose segment holds the name
            write.names.pop(name)
        write.entities[name] = built.entity
        write.written.setdefault(name, []).extend(built.kept)
        write.dropped += built.dropped

    def _build(self, write: _Write, step: _Step) -> _Built:
        """The transaction of one step against the entity as last read (``write.entities``)."""
        partition = write.scope.partition
        name = step.name
        current = write.entities.get(name)
        facts = self._facts(current) if current is not None else {}
        kept: list[Item] = []
        dropped: list[Item] = []
        for obs in step.observations:
            digest = records.fact_digest(obs["content"])
            if digest in facts:
                dropped.append(obs)  # an identical current fact was stored meanwhile
            else:
                facts[digest] = obs["id"]
                kept.append(obs)
        kind = self._kind(write, name, step.kind)
        ops: list[WriteOp] = []
        if current is None:
            if name not in write.names:  # it was deleted meanwhile: its name is posted anew
                write.names[name] = self._post_name(partition, name)
            entity = records.entity_item(
                partition,
                write.scope.project_id,
                name,
                kind,
                created_at=write.now,
                updated_at=write.now,
                version=1,
                facts=facts,
                seg=write.names[name],
            )
            ops += [
                Put(entity, Condition(exists=False)),
                Put(records.updated_item(partition, name, write.now)),
                Put(records.member_item(partition, kind, name)),
            ]
        else:
            updated_at = max(write.now, current["updated_at"])
            version = int(current["version"])
            entity = {**current, "entity_type": kind, "updated_at": updated_at, "version": version + 1, "facts": facts}
            entity.setdefault("seg", None)
            ops.append(Put(entity, _version_is(version)))
            if updated_at != current["updated_at"]:
                ops.append(Delete(partition, records.updated_sk(current["updated_at"], name)))
                ops.append(Put(records.updated_item(partition, name, updated_at)))
            if kind != current["entity_type"]:
                ops.append(Delete(partition, records.type_member_sk(current["entity_type"], name)))
                ops.append(Put(records.member_item(partition, kind, name)))
        if kind not in write.types:
            self._table.batch_write(puts=records.type_postings(partition, kind, index_tokens(kind)))
            write.types.add(kind)
        ops += [Put(obs) for obs in kept]
        ops += [Put(records.pointer_item(obs)) for obs in kept]
        return _Built(step, entity, ops, kept, dropped)

    def _post_name(self, partition: str, name: str) -> str:
        seg = segments.new_segment(new_id(), 0)
        self._table.batch_write(puts=segments.segment_items(partition, seg, segments.name_pairs(name)))
        return seg

    def _unpost(self, partition: str, removals: Sequence[tuple[str, Pair]]) -> None:
        """Take pairs out of the search segments; a segment that keeps changing keeps them (a search
        scores from the facts, so they cost a read, never a result)."""
        if not removals:
            return
        try:
            segments.unpost(self._table, partition, removals)
        except Conflict:
            logger.warning("graph search segments kept stale pairs under contention", extra={"pairs": len(removals)})

    def _unindex(self, observations: Iterable[Item]) -> None:
        """Take observations that stopped being current out of the search index (either layout)."""
        legacy: list[Key] = []
        by_partition: dict[str, list[tuple[str, Pair]]] = {}
        for obs in observations:
            if "seg" in obs:
                by_partition.setdefault(obs["pk"], []).extend((obs["seg"], p) for p in segments.observation_pairs(obs))
            else:
                legacy += records.legacy_posting_keys(obs)
        for partition, removals in by_partition.items():
            self._unpost(partition, removals)
        if legacy:
            self._table.batch_write(deletes=legacy)

    def delete_entities(self, scope: Scope, names: Sequence[str]) -> int:
        """SPEC's ``delete_entities``: hard-delete each named entity of this scope; unknown names are skipped."""
        return _count_found(lambda name: self.delete_entity(scope, name), names)

    def delete_observations(self, scope: Scope, ids: Sequence[str]) -> int:
        return _count_found(lambda obs_id: self.delete_observation(scope, obs_id), ids)

    def delete_relations(self, scope: Scope, ids: Sequence[str]) -> int:
        return _count_found(lambda rel_id: self.delete_relation(scope, rel_id), ids)

    def delete_entity(self, scope: Scope, name: str) -> None:
        """Hard-delete the entity of exactly this scope with its observations, relations and index pairs."""
        validate_id(name, "name")
        self._begin_write(scope)
        partition = scope.partition
        entity = self._table.get(partition, records.entity_sk(name))
        if entity is None:
            raise NotFound(f"no entity {name!r} in this scope", code="entity_not_found")
        self._table.delete(partition, records.entity_sk(name))
        observations = self._observations(partition, name)
        if entity.get("seg"):
            self._unpost(partition, [(entity["seg"], p) for p in segments.name_pairs(name)])
        self._unindex(o for o in observations if is_current(o))
        keys: list[Key] = [(partition, records.updated_sk(entity["updated_at"], name))]
        keys += [(partition, records.name_posting_sk(token, name)) for token in index_tokens(name)]  # layout 1
        keys.append((partition, records.type_member_sk(entity["entity_type"], name)))
        for obs in observations:
            keys += [(partition, obs["sk"]), (partition, records.pointer_sk(obs["id"]))]
        keys += [(partition, i["sk"]) for i in query_all(self._table, partition, _lock_prefix(name))]  # layout 1
        links = query_all(self._table, partition, records.link_prefix(name))
        relation_ids = [link["sk"].rsplit("#", 1)[1] for link in links]
        for relation in self._table.batch_get([(partition, records.relation_sk(i)) for i in relation_ids]):
            keys += records.relation_keys(relation)
        keys += [(partition, link["sk"]) for link in links]
        self._table.batch_write(deletes=list(dict.fromkeys(keys)))

    # -- observations ------------------------------------------------------------------------------

    def add_observations(
        self, scope: Scope, name: str, texts: Sequence[str], valid_from: datetime | None = None
    ) -> list[dict[str, Any]]:
        """Add facts to a known entity (one visible in this scope); the facts are stored in this scope."""
        validate_id(name, "name")
        self._begin_write(scope)
        visible = self._table.batch_get([(s.partition, records.entity_sk(name)) for s in scope.visible_scopes()])
        if not visible:
            raise NotFound(f"no entity {name!r} in this scope", code="entity_not_found")
        start = format_timestamp(valid_from) if valid_from is not None else None
        _, _, written = self._write_entities(scope, [(name, None, texts)], valid_from=start)
        return [records.observation_out(o) for o in written.get(name, [])]

    def _find_observation(self, scope: Scope, obs_id: str) -> Item:
        validate_id(obs_id, "id")
        for pointer in self._table.batch_get(
            [(s.partition, records.pointer_sk(obs_id)) for s in scope.visible_scopes()]
        ):
            item = self._table.get(pointer["pk"], records.observation_sk(pointer["entity"], obs_id))
            if item is not None:
                return item
        raise NotFound(f"no observation {obs_id!r} in this scope", code="observation_not_found")

    def _forget(self, obs: Item, entity: Item | None, **changes: Any) -> list[WriteOp]:
        """The entity (versioned) without ``obs`` among its current facts, with ``changes``; and, for an
        observation of layout 1, its current-content lock removed."""
        ops: list[WriteOp] = []
        if "seg" not in obs:
            ops.append(Delete(obs["pk"], records.current_observation_sk(obs["entity"], obs["content"])))
        if entity is None:
            return ops
        facts = self._facts(entity)
        digest = records.fact_digest(obs["content"])
        if facts.get(digest) == obs["id"]:
            del facts[digest]
        version = int(entity["version"])
        updated = {**entity, "facts": facts, "version": version + 1, **changes}
        updated.setdefault("seg", None)
        ops.append(Put(updated, _version_is(version)))
        return ops

    def _entity_of(self, obs: Item) -> Item | None:
        return self._table.get(obs["pk"], records.entity_sk(obs["entity"]))

    def invalidate_observation(self, scope: Scope, obs_id: str, valid_to: datetime | None = None) -> dict[str, Any]:
        """Close the fact's valid time; it leaves the current graph and stays in history. Idempotent."""
        self._begin_write(scope)

        def attempt() -> tuple[Item, Item | None]:
            obs = self._find_observation(scope, obs_id)
            if not is_current(obs):
                return obs, None
            closed = self._closed(obs, valid_to, self._now())
            self._table.transact_write([Put(closed, _rev_is(obs)), *self._forget(obs, self._entity_of(obs))])
            return closed, obs

        closed, was = retry_on_conflict(attempt, what="the observation")
        if was is not None:
            self._unindex([was])
        return records.observation_out(closed)

    @staticmethod
    def _closed(item: Item, valid_to: datetime | None, now: str) -> Item:
        end = format_timestamp(valid_to) if valid_to is not None else now
        if end < item["valid_from"]:
            raise InvalidInput("valid_to must not be before the fact's valid_from", code="invalid_valid_to")
        return {**item, "valid_to": end, "expired_at": now, "rev": int(item["rev"]) + 1}

    @staticmethod
    def _check_supersede(obs: Item, content: str) -> None:
        if not is_current(obs):
            raise Conflict("the observation is no longer current", code="observation_not_current")
        if content == obs["content"]:
            raise InvalidInput("the new content is identical to the current one", code="identical_content")

    def supersede_observation(self, scope: Scope, obs_id: str, content: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Invalidate a current fact and add its replacement on the same entity, in one transaction."""
        self._begin_write(scope)
        obs = self._find_observation(scope, obs_id)
        self._check_supersede(obs, content)
        partition, name = obs["pk"], obs["entity"]
        now = self._now()
        tokens = index_tokens(content)
        seg = segments.new_segment(new_id(), len(tokens))
        created = records.observation_item(
            partition,
            obs.get("project_id"),
            name,
            new_id(),
            content,
            valid_from=now,
            recorded_at=now,
            tokens=tokens,
            seg=seg,
        )
        posted = segments.segment_items(partition, seg, segments.observation_pairs(created))
        check_items([*posted, created, records.pointer_item(created)])
        self._table.batch_write(puts=posted)

        def attempt() -> tuple[Item, Item]:
            current = self._find_observation(scope, obs_id)
            self._check_supersede(current, content)
            entity = self._entity_of(current)
            if entity is None or records.fact_digest(content) in self._facts(entity):
                raise Conflict(
                    "the entity is gone or already holds that fact; nothing was written", code="supersede_conflict"
                )
            updated_at = max(now, entity["updated_at"])
            closed = self._closed(current, None, now)
            ops: list[WriteOp] = [Put(closed, _rev_is(current)), *self._forget(current, entity, updated_at=updated_at)]
            entity_put = ops[-1]
            assert isinstance(entity_put, Put)
            entity_put.item["facts"][records.fact_digest(content)] = created["id"]
            ops += [Put(created), Put(records.pointer_item(created))]
            if updated_at != entity["updated_at"]:
                ops.append(Delete(partition, records.updated_sk(entity["updated_at"], name)))
                ops.append(Put(records.updated_item(partition, name, updated_at)))
            self._table.transact_write(ops)
            return closed, current

        try:
            closed, was = retry_on_conflict(attempt, what="the observation")
        except (Conflict, NotFound):
            self._unpost(partition, [(seg, p) for p in segments.observation_pairs(created)])
            raise
        self._unindex([was])
        return records.observation_out(closed), records.observation_out(created)

    def delete_observation(self, scope: Scope, obs_id: str) -> None:
        self._begin_write(scope)

        def attempt() -> Item:
            obs = self._find_observation(scope, obs_id)
            ops: list[WriteOp] = [Delete(obs["pk"], obs["sk"]), Delete(obs["pk"], records.pointer_sk(obs["id"]))]
            if is_current(obs):
                ops += self._forget(obs, self._entity_of(obs))
            self._table.transact_write(ops)
            return obs

        obs = retry_on_conflict(attempt, what="the observation")
        if is_current(obs):
            self._unindex([obs])

    def _observations(self, partition: str, name: str) -> list[Item]:
        return query_all(self._table, partition, records.observation_prefix(name))

    # -- relations ---------------------------------------------------------------------------------

    def create_relations(self, scope: Scope, relations: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
        """Store typed edges; an identical current edge is returned, not stored twice. Missing endpoints
        are created in this scope (type ``general``, or the global entity's type in a project)."""
        for r in relations:
            validate_id(r["source"], "source")
            validate_id(r["target"], "target")
            validate_id(r["relation_type"], "relation_type")
        self._begin_write(scope)
        self._register(scope)
        return [self._create_relation(scope, r["source"], r["relation_type"], r["target"]) for r in relations]

    def _create_relation(self, scope: Scope, source: str, relation_type: str, target: str) -> dict[str, Any]:
        partition = scope.partition
        lock_sk = records.current_relation_sk(source, relation_type, target)

        def attempt() -> dict[str, Any]:
            lock = self._table.get(partition, lock_sk)
            if lock is not None:
                existing = self._table.get(partition, records.relation_sk(lock["id"]))
                if existing is not None:
                    return records.relation_out(existing)
            endpoints = list(dict.fromkeys([source, target]))
            present = {i["name"] for i in self._table.batch_get([(partition, records.entity_sk(n)) for n in endpoints])}
            missing = [n for n in endpoints if n not in present]
            if missing:
                self._write_entities(scope, [(n, None, []) for n in missing])
            rel_id = new_id()
            item = records.relation_item(
                partition, scope.project_id, rel_id, source, relation_type, target, self._now()
            )
            ops: list[WriteOp] = [
                Put({"pk": partition, "sk": lock_sk, "id": rel_id}, Condition(exists=False)),
                Put(item),
            ]
            for name in endpoints:
                ops.append(Check(partition, records.entity_sk(name), Condition(exists=True)))
                ops.append(Put({"pk": partition, "sk": records.link_sk(name, rel_id)}))
            self._table.transact_write(ops)
            return records.relation_out(item)

        return retry_on_conflict(attempt, what="the relation")

    def _find_relation(self, scope: Scope, rel_id: str) -> Item:
        validate_id(rel_id, "id")
        found = self._table.batch_get([(s.partition, records.relation_sk(rel_id)) for s in scope.visible_scopes()])
        if not found:
            raise NotFound(f"no relation {rel_id!r} in this scope", code="relation_not_found")
        return found[0]

    def invalidate_relation(self, scope: Scope, rel_id: str, valid_to: datetime | None = None) -> dict[str, Any]:
        self._begin_write(scope)

        def attempt() -> dict[str, Any]:
            relation = self._find_relation(scope, rel_id)
            if not is_current(relation):
                return records.relation_out(relation)
            closed = self._closed(relation, valid_to, self._now())
            lock = records.current_relation_sk(relation["source"], relation["relation_type"], relation["target"])
            self._table.transact_write([Put(closed, _rev_is(relation)), Delete(relation["pk"], lock)])
            return records.relation_out(closed)

        return retry_on_conflict(attempt, what="the relation")

    def delete_relation(self, scope: Scope, rel_id: str) -> None:
        self._begin_write(scope)
        relation = self._find_relation(scope, rel_id)
        self._table.batch_write(deletes=records.relation_keys(relation))

    def _relations_of(self, partitions: Sequence[str], names: Iterable[str]) -> list[Item]:
        keys: list[Key] = []
        for partition in partitions:
            for name in dict.fromkeys(names):
                links = query_all(self._table, partition, records.link_prefix(name))
                keys += [(partition, records.relation_sk(link["sk"].rsplit("#", 1)[1])) for link in links]
        found = self._table.batch_get(list(dict.fromkeys(keys)))
        return sorted(found, key=lambda r: (r["recorded_at"], r["id"]))

    # -- reads -------------------------------------------------------------------------------------

    def _entity_items(self, scope: Scope, names: Iterable[str]) -> dict[str, list[Item]]:
        """The entity items of the visible scopes by name (one per scope holding it); unknown names absent."""
        keys = [(s.partition, records.entity_sk(n)) for n in dict.fromkeys(names) for s in scope.visible_scopes()]
        grouped: dict[str, list[Item]] = {}
        for item in self._table.batch_get(keys):
            grouped.setdefault(item["name"], []).append(item)
        return grouped

    def _entities(self, scope: Scope, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Visible entities by name, merged across the visible scopes; unknown names are absent."""
        return {name: merge_entities(items) for name, items in self._entity_items(scope, names).items()}

    def _current_observations(
        self, entities: Iterable[Item], known: dict[str, list[Item]] | None = None
    ) -> dict[str, list[Item]]:
        """The current observations of entity items, by entity name: the ids their ``facts`` list, read
        in one batch (those in ``known`` are not read again); by prefix for an item of layout 1."""
        have = {(o["pk"], o["id"]): o for items in (known or {}).values() for o in items}
        out: dict[str, list[Item]] = {}
        keys: list[Key] = []
        for entity in entities:
            name = entity["name"]
            held = out.setdefault(name, [])
            facts = entity.get("facts")
            if not isinstance(facts, dict):
                held += [o for o in self._observations(entity["pk"], name) if is_current(o)]
                continue
            for obs_id in facts.values():
                obs = have.get((entity["pk"], obs_id))
                if obs is not None:
                    held.append(obs)
                else:
                    keys.append((entity["pk"], records.observation_sk(name, obs_id)))
        for obs in self._table.batch_get(keys):
            if is_current(obs):
                out.setdefault(obs["entity"], []).append(obs)
        return out

    def _visible_observations(self, scope: Scope, name: str) -> list[Item]:
        return [o for s in scope.visible_scopes() for o in self._observations(s.partition, name)]

    def search_nodes(self, scope: Scope, query: str, limit: int = 10) -> dict[str, Any]:
        """``results``: entities with a score > 0, best first (ties by name), each with its current
        relations, within the response byte budget (``truncated`` when cut).

        Reads the segment buckets of each query token and scope (their counts bound each entity's score
        from above), then scores the best candidates from their facts until no other can beat them.
        """
        tokens = index_tokens(query)
        if not tokens:
            return {"results": [], "truncated": False}
        partitions = [s.partition for s in scope.visible_scopes()]
        bounds: dict[str, int] = {}
        type_bonus: dict[str, int] = {}
        legacy = [p for p in partitions if self._holds_layout_1(p)]
        for token in tokens:
            counts, named = segments.bounds(self._table, partitions, token)
            typed: set[str] = set()
            for partition in partitions:
                typed.update(p["type"] for p in query_all(self._table, partition, records.type_posting_prefix(token)))
            for partition in legacy:  # name and per-observation postings written before segments
                named.update(p["name"] for p in query_all(self._table, partition, records.name_posting_prefix(token)))
                prefix = records.observation_posting_prefix(token)
                for posting in query_all(self._table, partition, prefix):
                    holder = records.name_of_key(posting["sk"][len(prefix) :].rsplit("#", 1)[0])
                    counts[holder] = counts.get(holder, 0) + 1
            for name, count in counts.items():
                bounds[name] = bounds.get(name, 0) + count
            for name in named:
                bounds[name] = bounds.get(name, 0) + 3
            for kind in typed:
                type_bonus[kind] = type_bonus.get(kind, 0) + 2
        if type_bonus:
            bounds = self._add_type_bonus(scope, partitions, bounds, type_bonus, limit)
        ranked = sorted((name for name, b in bounds.items() if b > 0), key=lambda n: (-bounds[n], n))
        scored: list[tuple[int, str, dict[str, Any], list[Item]]] = []
        done = 0
        while done < len(ranked):
            batch = ranked[done : done + max(limit, 1)]
            done += len(batch)
            items = self._entity_items(scope, batch)
            current = self._current_observations(i for group in items.values() for i in group)
            for name in batch:
                if name not in items:
                    continue  # pairs of an entity deleted meanwhile
                entity = merge_entities(items[name])
                facts = current.get(name, [])
                score = score_tokens(tokens, name, entity["entity_type"], (o["tokens"] for o in facts))
                if score > 0:
                    scored.append((score, name, entity, facts))
            scored.sort(key=lambda r: (-r[0], r[1]))
            if len(scored) >= limit and (
                done >= len(ranked)
                or (-scored[limit - 1][0], scored[limit - 1][1]) < (-bounds[ranked[done]], ranked[done])
            ):
                break  # no candidate left can enter the top ``limit``: its bound is below the last one's score
        pager = Pager(Budget())
        fitted: list[dict[str, Any]] = []
        for score, name, entity, facts in scored[:limit]:
            fitted_entity = pager.entity(entity_out(entity, facts))
            if fitted_entity is None:
                break
            relations = [records.relation_out(r) for r in self._relations_of(partitions, [name]) if is_current(r)]
            fitted.append({"entity": fitted_entity, "relations": pager.relations(relations), "score": score})
            if pager.budget.truncated:
                break
        return {"results": fitted, "truncated": pager.budget.truncated}

    def _holds_layout_1(self, partition: str) -> bool:
        """Whether the partition still holds postings of layout 1 (two one-item reads per search)."""
        return any(
            self._table.query(partition, prefix, limit=1).items
            for prefix in (records.NAME_POSTING, records.OBSERVATION_POSTING)
        )

    def _add_type_bonus(
        self, scope: Scope, partitions: Sequence[str], scores: dict[str, int], bonus: dict[str, int], limit: int
    ) -> dict[str, int]:
        """Add +2 per query token in each entity's type without reading every entity of a common type.

        Candidates found by name or observation get the bonus of their own type. Entities matched by
        their type alone all score that type's bonus, so per type only the first ``limit`` members
        (in name order) that are not candidates already can reach the top ``limit``.
        """
        entities = self._entities(scope, list(scores))
        boosted = {
            name: score + bonus.get(entities[name]["entity_type"], 0)
            for name, score in scores.items()
            if name in entities
        }
        for kind, extra in bonus.items():
            for partition in partitions:
                start: str | None = None
                taken = 0
                while taken < limit:
                    page = self._table.query(
                        partition, records.type_member_prefix(kind), limit=limit + 8, start_after=start
                    )
                    for member in page.items:
                        if member["name"] not in boosted:
                            boosted[member["name"]] = extra
                            taken += 1
                    if page.next_start is None:
                        break
                    start = page.next_start
        return boosted

    def open_nodes(self, scope: Scope, names: Sequence[str]) -> dict[str, Any]:
        """The named entities (unknown names are skipped) and the current relations touching them,
        within the response byte budget (``truncated`` when cut)."""
        for name in names:
            validate_id(name, "name")
        items = self._entity_items(scope, names)
        current = self._current_observations(i for group in items.values() for i in group)
        out = [entity_out(merge_entities(items[n]), current.get(n, [])) for n in dict.fromkeys(names) if n in items]
        partitions = [s.partition for s in scope.visible_scopes()]
        relations = [r for r in self._relations_of(partitions, items) if is_current(r)]
        pager = Pager(Budget())
        fitted = pager.entities(out)
        related = [] if pager.budget.truncated else pager.relations(records.relation_out(r) for r in relations)
        return {"entities": fitted, "relations": related, "truncated": pager.budget.truncated}

    def read_graph(
        self,
        scope: Scope,
        *,
        as_of: datetime | None = None,
        recorded_as_of: datetime | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """The whole visible graph: current facts, or the facts of a time slice (see :class:`TimeSlice`).

        An entity is shown when it was recorded by the slice's moments or one of its shown facts is.
        One page holds what fits the response byte budget; ``next_cursor`` (with ``truncated``) resumes.
        """
        after = decode_position(cursor) if cursor else None
        view = TimeSlice(
            format_timestamp(as_of) if as_of is not None else None,
            format_timestamp(recorded_as_of) if recorded_as_of is not None else None,
        )
        grouped: dict[str, list[Item]] = {}
        observations: dict[str, list[Item]] = {}
        relations: list[Item] = []
        for s in scope.visible_scopes():
            for item in query_all(self._table, s.partition, records.ENTITY):
                grouped.setdefault(item["name"], []).append(item)
            for item in query_all(self._table, s.partition, records.OBSERVATION):
                if view.shows(item):
                    observations.setdefault(item["entity"], []).append(item)
            relations += [r for r in query_all(self._table, s.partition, records.RELATION) if view.shows(r)]
        horizon = min(m for m in (view.as_of, view.recorded_as_of, self._now()) if m is not None)
        endpoints = {r["source"] for r in relations} | {r["target"] for r in relations}
        entities = []
        for name in sorted(grouped):
            entity = merge_entities(grouped[name])
            if entity["created_at"] <= horizon or name in observations or name in endpoints:
                entities.append(entity_out(entity, observations.get(name, [])))
        relations.sort(key=lambda r: (r["recorded_at"], r["id"]))
        pager = Pager(Budget(), after)
        page = pager.entities(entities)
        related = [] if pager.budget.truncated else pager.relations(records.relation_out(r) for r in relations)
        cut = pager.budget.truncated and pager.last is not None
        return {
            "entities": page,
            "relations": related,
            "truncated": cut,
            "next_cursor": encode_position(pager.last) if cut and pager.last is not None else None,
        }

    def history(self, scope: Scope, name: str) -> dict[str, Any]:
        """The entity with every observation and relation it ever had (current and past), with timestamps."""
        validate_id(name, "name")
        entity = self._entities(scope, [name]).get(name)
        if entity is None:
            raise NotFound(f"no entity {name!r} in this scope", code="entity_not_found")
        pager = Pager(Budget())
        out = pager.entity(entity_out(entity, self._visible_observations(scope, name)))
        assert out is not None  # the first item always fits
        partitions = [s.partition for s in scope.visible_scopes()]
        relations = (records.relation_out(r) for r in self._relations_of(partitions, [name]))
        out["relations"] = [] if pager.budget.truncated else pager.relations(relations)
        out["truncated"] = pager.budget.truncated
        return out

    def profile_card(self, scope: Scope, max_entities: int = 12, max_observations: int = 5) -> dict[str, Any]:
        """The most recently updated entities with their newest current facts, for a system prompt.

        Reads the ``GU`` index newest first, so its cost grows with the budget, not the graph.
        """
        names: list[str] = []
        for partition in (s.partition for s in scope.visible_scopes()):
            start: str | None = None
            taken = 0
            while taken < max_entities:
                page = self._table.query(
                    partition, records.UPDATED, limit=max_entities + 4, descending=True, start_after=start
                )
                entities = {
                    i["name"]: i
                    for i in self._table.batch_get([(partition, records.entity_sk(p["name"])) for p in page.items])
                }
                for posting in page.items:
                    entity = entities.get(posting["name"])
                    if entity is not None and entity["updated_at"] == posting["updated_at"]:  # else stale
                        names.append(posting["name"])
                        taken += 1
                if page.next_start is None:
                    break
                start = page.next_start
        items = self._entity_items(scope, list(dict.fromkeys(names)))
        merged = {name: merge_entities(group) for name, group in items.items()}
        chosen = sorted(merged.values(), key=lambda e: (e["updated_at"], e["name"]), reverse=True)[:max_entities]
        current = self._current_observations(i for e in chosen for i in items[e["name"]])
        card = []
        # The text repeats the entities' facts: they take half the card budget, the text the other half.
        pager = Pager(Budget(CARD_BUDGET_BYTES // 2))
        for entity in chosen:
            facts = current.get(entity["name"], [])
            newest = sorted(facts, key=lambda o: (o["recorded_at"], o["id"]), reverse=True)[:max_observations]
            fitted = pager.entity(entity_out(entity, newest))
            if fitted is not None:
                card.append(fitted)
            if pager.budget.truncated:
                break
        return {"text": format_profile_card(card), "entities": card, "truncated": pager.budget.truncated}

    # -- episodes ----------------------------------------------------------------------------------

    def add_session(self, scope: Scope, session_id: str, entries: Sequence[MemoryEntry]) -> int:
        """SPEC's ``add_session`` on the graph: the session's turns become episodes."""
        return self.add_episodes(scope, session_id, entries)

    def add_episodes(self, scope: Scope, session_id: str, entries: Sequence[MemoryEntry]) -> int:
        """Store the turns of a session as episodes (replacing that session's episodes in this scope)."""
        validate_id(session_id, "session_id")
        self._begin_write(scope)
        return self._episodes.add(scope, session_id, entries)

    def list_episodes(
        self, scope: Scope, *, session_id: str | None = None, query: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        """``episodes`` newest first; with ``query``, by token overlap (BM25, best first, with a score);
        within the response byte budget (``truncated`` when cut)."""
        return self._episodes.find(scope, session_id=session_id, query=query, limit=limit)


def _count_found(delete: Callable[[str], None], keys: Sequence[str]) -> int:
    """How many of ``keys`` ``delete`` found (and deleted); unknown ones are skipped."""
    deleted = 0
    for key in dict.fromkeys(keys):
        try:
            delete(key)
        except NotFound:
            continue
        deleted += 1
    return deleted


def _version_is(version: int) -> Condition:
    return Condition(equals={"version": version})


def _rev_is(item: Item) -> Condition:
    return Condition(equals={"rev": int(item["rev"])})


def _lock_prefix(name: str) -> str:
    return f"{records.CURRENT_OBSERVATION}{records.entity_key(name)}#"
