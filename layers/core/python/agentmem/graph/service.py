"""GraphMemoryService: a bitemporal knowledge graph per ``(app, user, project)`` on the Table port.

Scoping (SPEC section 1): reads in project P see the global graph and P's graph, merged by entity
name; every write goes to exactly the named scope. Writes addressed by id (invalidate, supersede,
delete) find the fact in that scope only: a global fact addressed from a project, like an id of another
user, app or project, is "not found" (a project never widens a write).

Time (docs/adr/0400-graph-bitemporal-semantics.md): every observation and relation carries valid time
(``valid_from``/``valid_to``: when it was true in the world) and transaction time (``recorded_at``/
``expired_at``: when this service learned it / stopped holding it current). Invalidating closes the
valid time and stamps ``expired_at``; the fact stays for ``history`` and time-travel reads.

Consistency: one entity is one item keyed by its name, created with a conditional put and updated
with a version check. It lists its current facts (``facts``: content digest -> observation id), and
every observation is written, closed or deleted in one transaction with the entity's versioned put,
so concurrent writers never lose a fact and never store the same current fact twice. A write of many
entities groups them into few transactions (:mod:`agentmem.graph.writes`). Every write that changes an
entity's name, type or current facts logs the entity (agentmem/search/changes.py): search ranks from an
index held in process (:mod:`agentmem.graph.search_index`), and the scores of returned entities are
recomputed from their facts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from agentmem import held_items, users
from agentmem.budget import CARD_BUDGET_BYTES, Budget
from agentmem.clock import format_timestamp, new_id, utc_now
from agentmem.errors import Conflict, InvalidInput, NotFound
from agentmem.graph import records
from agentmem.graph.episodes import Episodes
from agentmem.graph.paging import (
    Pager,
    card_relations,
    decode_position,
    entity_out,
    format_profile_card,
    merge_entities,
)
from agentmem.graph.reading import read_page
from agentmem.graph.scoring import index_tokens, score_tokens
from agentmem.graph.search_index import GraphSearchIndex, log_changed
from agentmem.graph.timeslice import TimeSlice, is_current
from agentmem.graph.writes import TRANSACTION_OPS, EntityWriter, facts_of, observations_of, version_is
from agentmem.keys import Scope, validate_id
from agentmem.models.memory import MemoryEntry
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
    op_key,
    query_all,
)
from agentmem.tenancy import metering


class GraphMemoryService:
    def __init__(self, table: Table, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._table = users.guarded(table)
        self._clock = clock
        self._episodes = Episodes(self._table, clock)
        self._writer = EntityWriter(self._table, self._now)
        self._index = GraphSearchIndex(table)

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
        stored, written = self._writer.write(
            scope,
            [
                (name, spec.get("entity_type"), spec.get("observations") or [])
                for name, spec in zip(names, entities, strict=True)
            ],
        )
        current = self._current_observations(stored.values(), written)
        _hold([stored[name] for name in names], *(current.get(name, []) for name in names))
        return [entity_out(stored[name], current.get(name, [])) for name in names]

    def remember(
        self,
        scope: Scope,
        name: str,
        facts: Sequence[str],
        entity_type: str | None = None,
        *,
        source: str | None = None,
    ) -> tuple[dict[str, Any], int]:
        """The ``remember`` tool: upsert one entity with facts; return it and how many facts were new
        (``source``: the memory record extraction learnt them as)."""
        validate_id(name, "name")
        if entity_type is not None:
            validate_id(entity_type, "entity_type")
        self._begin_write(scope)
        stored, written = self._writer.write(scope, [(name, entity_type, facts)], source=source)
        current = self._current_observations(stored.values(), written)
        _hold([stored[name]], current.get(name, []))
        return entity_out(stored[name], current.get(name, [])), len(written.get(name, []))

    def _unindex(self, observations: Iterable[Item]) -> None:
        """Delete the postings of observations of layout 1 (before search segments) that stopped being
        current (later observations have none: they are searched from the index held in process)."""
        legacy = [key for obs in observations if "seg" not in obs for key in records.legacy_posting_keys(obs)]
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
        """Hard-delete the entity of exactly this scope with its observations, relations and index pairs.

        The entity item goes first: a write that read it before fails its version check from then on.
        A write that finds it absent creates the entity anew, possibly while the rest is being swept;
        the sweep spares what that new entity holds (:meth:`_sweep`)."""
        validate_id(name, "name")
        self._begin_write(scope)
        partition = scope.partition
        entity = self._table.get(partition, records.entity_sk(name))
        if entity is None:
            raise NotFound(f"no entity {name!r} in this scope", code="entity_not_found")
        self._table.delete(partition, records.entity_sk(name))
        retry_on_conflict(lambda: self._sweep(partition, entity), what="the entity")
        log_changed(self._table, partition, [name], create=False)

    def _sweep(self, partition: str, gone: Item) -> None:
        """Delete what the deleted entity ``gone`` held. An entity of the same name created since holds its
        current facts and what was recorded since its creation: those are spared, and every batch of
        deletes checks that entity is still as read here, so a write landing meanwhile makes it read again."""
        name = gone["name"]
        again = self._table.get(partition, records.entity_sk(name))
        spared = set(facts_of(self._table, again).values()) if again is not None else set()
        since = str(again["created_at"]) if again is not None else None

        def held_by_gone(item: Item) -> bool:
            return item["id"] not in spared and (since is None or str(item.get("recorded_at") or "") < since)

        observations = [o for o in self._observations(partition, name) if held_by_gone(o)]
        self._unindex(o for o in observations if is_current(o))
        keys: list[Key] = [(partition, records.name_posting_sk(t, name)) for t in index_tokens(name)]  # layout 1
        if again is None or again["updated_at"] != gone["updated_at"]:
            keys.append((partition, records.updated_sk(gone["updated_at"], name)))
        if again is None or again["entity_type"] != gone["entity_type"]:
            keys.append((partition, records.type_member_sk(gone["entity_type"], name)))
        for obs in observations:
            keys += [(partition, obs["sk"]), (partition, records.pointer_sk(obs["id"]))]
        keys += [(partition, i["sk"]) for i in query_all(self._table, partition, _lock_prefix(name))]  # layout 1
        links = {
            row["sk"].rsplit("#", 1)[1]: row for row in query_all(self._table, partition, records.link_prefix(name))
        }
        relations = {r["id"]: r for r in self._table.batch_get([(partition, records.relation_sk(i)) for i in links])}
        for rel_id, link in links.items():
            relation = relations.get(rel_id)
            if relation is None:
                keys.append((partition, link["sk"]))
            elif held_by_gone(relation):
                keys += records.relation_keys(relation)
        as_read = Check(
            partition,
            records.entity_sk(name),
            Condition(exists=False) if again is None else version_is(int(again["version"])),
        )
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), TRANSACTION_OPS):
            self._table.transact_write([as_read, *(Delete(*k) for k in keys[start : start + TRANSACTION_OPS])])

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
        _, written = self._writer.write(scope, [(name, None, texts)], valid_from=start)
        _hold(written.get(name, []))
        return [records.observation_out(o) for o in written.get(name, [])]

    def _find_observation(self, scope: Scope, obs_id: str) -> Item:
        """The observation with this id in exactly this scope (what a write by id may change)."""
        validate_id(obs_id, "id")
        pointer = self._table.get(scope.partition, records.pointer_sk(obs_id))
        item = self._table.get(scope.partition, records.observation_sk(pointer["entity"], obs_id)) if pointer else None
        if item is None:
            raise NotFound(f"no observation {obs_id!r} in this scope", code="observation_not_found")
        return item

    def _forget(self, obs: Item, entity: Item | None, **changes: Any) -> list[WriteOp]:
        """The entity (versioned) without ``obs`` among its current facts, with ``changes``; and, for an
        observation of layout 1, its current-content lock removed."""
        ops: list[WriteOp] = []
        if "seg" not in obs:
            ops.append(Delete(obs["pk"], records.current_observation_sk(obs["entity"], obs["content"])))
        if entity is None:
            return ops
        facts = facts_of(self._table, entity)
        digest = records.fact_digest(obs["content"])
        if facts.get(digest) == obs["id"]:
            del facts[digest]
        version = int(entity["version"])
        updated = {**entity, "facts": facts, "version": version + 1, **changes}
        updated.setdefault("seg", None)
        ops.append(Put(updated, version_is(version)))
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
            log_changed(self._table, was["pk"], [was["entity"]], create=False)
        _hold([closed])
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

    def supersede_observation(
        self, scope: Scope, obs_id: str, content: str, *, source: str | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Invalidate a current fact and add its replacement on the same entity, in one transaction
        (``source``: the memory record extraction learnt the replacement as)."""
        self._begin_write(scope)
        obs = self._find_observation(scope, obs_id)
        self._check_supersede(obs, content)
        partition, name = obs["pk"], obs["entity"]
        now = self._now()
        created = records.observation_item(
            partition,
            obs.get("project_id"),
            name,
            new_id(),
            content,
            valid_from=now,
            recorded_at=now,
            tokens=index_tokens(content),
            source=source,
        )
        check_items([created, records.pointer_item(created)])

        def attempt() -> tuple[Item, Item]:
            current = self._find_observation(scope, obs_id)
            self._check_supersede(current, content)
            entity = self._entity_of(current)
            if entity is None or records.fact_digest(content) in facts_of(self._table, entity):
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

        closed, was = retry_on_conflict(attempt, what="the observation")
        self._unindex([was])
        log_changed(self._table, partition, [name], create=False)
        metering.count(items_stored=1)
        _hold([closed, created])
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
            log_changed(self._table, obs["pk"], [obs["entity"]], create=False)

    def _observations(self, partition: str, name: str) -> list[Item]:
        return observations_of(self._table, partition, name)

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
        wanted = list(dict.fromkeys((r["source"], r["relation_type"], r["target"]) for r in relations))
        made = self._create_relations(scope, wanted)
        held_items.note((scope.partition, records.relation_sk(r["id"])) for r in made.values())
        return [made[(r["source"], r["relation_type"], r["target"])] for r in relations]

    def _create_relations(
        self, scope: Scope, wanted: Sequence[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], dict[str, Any]]:
        """Many relations in few calls: one read of their locks (and of the relations they point at), one
        of their endpoints, the missing endpoints in one entity write, then the new relations packed into
        transactions sent together. A transaction refused (a concurrent writer took a lock, or an endpoint
        was deleted meanwhile) is done again relation by relation, each under the bounded retry."""
        partition = scope.partition
        made: dict[tuple[str, str, str], dict[str, Any]] = {}
        locks = {
            lock["sk"]: lock
            for lock in self._table.batch_get([(partition, records.current_relation_sk(*w)) for w in wanted])
        }
        current = {
            item["id"]: item
            for item in self._table.batch_get([(partition, records.relation_sk(lock["id"])) for lock in locks.values()])
        }
        for w in wanted:
            lock = locks.get(records.current_relation_sk(*w))
            if lock is not None and lock["id"] in current:
                made[w] = records.relation_out(current[lock["id"]])
        new = [w for w in wanted if w not in made]
        if not new:
            return made
        endpoints = list(dict.fromkeys(name for source, _, target in new for name in (source, target)))
        present = {i["name"] for i in self._table.batch_get([(partition, records.entity_sk(n)) for n in endpoints])}
        missing = [n for n in endpoints if n not in present]
        if missing:
            self._writer.write(scope, [(n, None, []) for n in missing])
        now = self._now()
        transactions: list[list[WriteOp]] = [[]]
        packed: list[list[tuple[tuple[str, str, str], Item]]] = [[]]
        for w in new:
            item = records.relation_item(partition, scope.project_id, new_id(), *w, now)
            ops = _relation_ops(item)
            if len(transactions[-1]) + len(ops) > TRANSACTION_OPS:
                transactions.append([])
                packed.append([])
            checked = {op_key(op) for op in transactions[-1] if isinstance(op, Check)}
            transactions[-1] += [op for op in ops if not (isinstance(op, Check) and op_key(op) in checked)]
            packed[-1].append((w, item))
        outcomes = self._table.transact_write_each(transactions)
        for relations, refused in zip(packed, outcomes, strict=True):
            if refused is None:
                metering.count(items_stored=len(relations))
            for w, item in relations:
                made[w] = records.relation_out(item) if refused is None else self._create_relation(scope, *w)
        return made

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
                self._writer.write(scope, [(n, None, []) for n in missing])
            item = records.relation_item(
                partition, scope.project_id, new_id(), source, relation_type, target, self._now()
            )
            self._table.transact_write(_relation_ops(item))
            metering.count(items_stored=1)
            return records.relation_out(item)

        return retry_on_conflict(attempt, what="the relation")

    def _find_relation(self, scope: Scope, rel_id: str) -> Item:
        """The relation with this id in exactly this scope (what a write by id may change)."""
        validate_id(rel_id, "id")
        relation = self._table.get(scope.partition, records.relation_sk(rel_id))
        if relation is None:
            raise NotFound(f"no relation {rel_id!r} in this scope", code="relation_not_found")
        return relation

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

        closed = retry_on_conflict(attempt, what="the relation")
        held_items.note([(scope.partition, records.relation_sk(closed["id"]))])
        return closed

    def delete_relation(self, scope: Scope, rel_id: str) -> None:
        self._begin_write(scope)
        relation = self._find_relation(scope, rel_id)
        self._table.batch_write(deletes=records.relation_keys(relation))

    # -- finding facts to change, by what they say (the MCP tools name facts by content, not by id) ----

    def known_entities(self, scope: Scope, names: Sequence[str]) -> set[str]:
        """The names among ``names`` of entities visible in this scope (whatever their size)."""
        for name in names:
            validate_id(name, "name")
        return set(self._entity_items(scope, names))

    def current_observation_ids(self, scope: Scope, name: str, contents: Iterable[str]) -> list[str]:
        """The ids of the entity's current facts in exactly this scope that say one of ``contents``."""
        validate_id(name, "name")
        entity = self._table.get(scope.partition, records.entity_sk(name))
        if entity is None:
            return []
        facts = facts_of(self._table, entity)
        return [facts[d] for d in dict.fromkeys(records.fact_digest(c) for c in contents) if d in facts]

    def current_relation_ids(self, scope: Scope, triples: Iterable[tuple[str, str, str]]) -> list[str]:
        """The ids of the current relations (source, type, target) in exactly this scope."""
        keys = [(scope.partition, records.current_relation_sk(*t)) for t in dict.fromkeys(triples)]
        return [lock["id"] for lock in self._table.batch_get(keys) if "id" in lock]

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

        Scores come from the graph's search index held in process (agentmem/graph/search_index.py); the
        entities returned are read, and scored again from their facts as read (an index behind by a write
        can name an entity that changed: it is placed by what it holds now)."""
        tokens = index_tokens(query)
        if not tokens:
            return {"results": [], "truncated": False}
        partitions = [s.partition for s in scope.visible_scopes()]
        indexed = self._index.scores(partitions, tokens, limit)
        ranked = sorted(indexed, key=lambda n: (-indexed[n], n))
        scored: list[tuple[int, str, dict[str, Any], list[Item]]] = []
        done = 0
        while done < len(ranked) and len(scored) < limit:
            batch = ranked[done : done + max(limit, 1)]
            done += len(batch)
            items = self._entity_items(scope, batch)
            current = self._current_observations(i for group in items.values() for i in group)
            for name in batch:
                if name not in items:
                    continue  # deleted since the index learnt of it
                entity = merge_entities(items[name])
                facts = current.get(name, [])
                score = score_tokens(tokens, name, entity["entity_type"], (o["tokens"] for o in facts))
                if score > 0:
                    scored.append((score, name, entity, facts))
        scored.sort(key=lambda r: (-r[0], r[1]))
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
        A page reads a bounded window of the graph (:mod:`agentmem.graph.reading`) and holds what fits the
        response byte budget; ``next_cursor`` (with ``truncated``) resumes.
        """
        after = decode_position(cursor) if cursor else None
        view = TimeSlice(
            format_timestamp(as_of) if as_of is not None else None,
            format_timestamp(recorded_as_of) if recorded_as_of is not None else None,
        )
        horizon = min(m for m in (view.as_of, view.recorded_as_of, self._now()) if m is not None)
        partitions = [s.partition for s in scope.visible_scopes()]
        return read_page(self._table, partitions, view, horizon, after, self._current_observations)

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
        names = [e["name"] for e in chosen]
        partitions = [s.partition for s in scope.visible_scopes()]
        told = [r for r in self._relations_of(partitions, names) if is_current(r)]
        lines = card_relations(names, told, max_observations)
        card = []
        related: list[dict[str, Any]] = []
        # The text repeats the entities' facts: they take half the card budget, the text the other half.
        pager = Pager(Budget(CARD_BUDGET_BYTES // 2))
        for entity in chosen:
            facts = current.get(entity["name"], [])
            newest = sorted(facts, key=lambda o: (o["recorded_at"], o["id"]), reverse=True)[:max_observations]
            fitted = pager.entity(entity_out(entity, newest))
            if fitted is not None:
                card.append(fitted)
                related += pager.relations(records.relation_out(r) for r in lines.get(entity["name"], []))
            if pager.budget.truncated:
                break
        return {
            "text": format_profile_card(card, related),
            "entities": card,
            "relations": related,
            "truncated": pager.budget.truncated,
        }

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


def _relation_ops(item: Item) -> list[WriteOp]:
    """Lock the edge as current (refused if it already is), store it, and link it from each endpoint,
    which must exist."""
    partition, rel_id = item["pk"], item["id"]
    lock = records.current_relation_sk(item["source"], item["relation_type"], item["target"])
    ops: list[WriteOp] = [Put({"pk": partition, "sk": lock, "id": rel_id}, Condition(exists=False)), Put(item)]
    for name in dict.fromkeys([item["source"], item["target"]]):
        ops.append(Check(partition, records.entity_sk(name), Condition(exists=True)))
        ops.append(Put({"pk": partition, "sk": records.link_sk(name, rel_id)}))
    return ops


def _hold(*groups: Iterable[Item]) -> None:
    """The answer being built shows these items: an Idempotency-Key replay of it needs them all."""
    held_items.note((item["pk"], item["sk"]) for items in groups for item in items)


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


def _rev_is(item: Item) -> Condition:
    return Condition(equals={"rev": int(item["rev"])})


def _lock_prefix(name: str) -> str:
    return f"{records.CURRENT_OBSERVATION}{records.entity_key(name)}#"
