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
with a version check, so concurrent writers never duplicate it; each observation is written in a
transaction with a "current content" lock item, so concurrent writers never lose one and never store
the same current fact twice. Index postings are written before the facts they point at and removed
after, so a search never misses a fact; scores of returned entities are recomputed from the facts.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentmem import users
from agentmem.budget import CARD_BUDGET_BYTES, Budget
from agentmem.clock import format_timestamp, new_id, utc_now
from agentmem.errors import ConditionFailed, Conflict, InvalidInput, MalformedRequest, NotFound, PayloadTooLarge
from agentmem.graph import records
from agentmem.keys import Scope, validate_id
from agentmem.models.memory import MAX_TEXT_BYTES, MemoryEntry
from agentmem.search.inverted_index import InvertedIndex, index_terms, terms_per_document
from agentmem.search.tokenize import graph_tokens, tokenize
from agentmem.stores.table import Check, Condition, Delete, Item, Key, Put, Table, WriteOp, check_items, query_all

DEFAULT_TYPE = "general"
MAX_GRAPH_TERMS = 32
"""Distinct tokens a name, a type, an observation or a query is indexed and scored by (the first ones)."""
_OBSERVATIONS_PER_TRANSACTION = 30
_MAX_ATTEMPTS = 20
_CARD_HEADER = "[Known about the user]"


def index_tokens(text: str) -> list[str]:
    """The first ``MAX_GRAPH_TERMS`` distinct graph tokens of ``text`` (SPEC section 2), in order."""
    return list(dict.fromkeys(graph_tokens(text)))[:MAX_GRAPH_TERMS]


def score_entity(query: Sequence[str], name: str, entity_type: str, observations: Iterable[str]) -> int:
    """SPEC section 2: per query token, +3 if the name holds it, +2 if the type does, +1 per observation."""
    return score_tokens(query, name, entity_type, [index_tokens(text) for text in observations])


def score_tokens(query: Sequence[str], name: str, entity_type: str, observations: Iterable[Iterable[str]]) -> int:
    """:func:`score_entity` with the observations already tokenised (their items keep their tokens)."""
    name_tokens = set(index_tokens(name))
    type_tokens = set(index_tokens(entity_type))
    observation_tokens = [set(tokens) for tokens in observations]
    score = 0
    for token in dict.fromkeys(query):
        score += 3 * (token in name_tokens) + 2 * (token in type_tokens)
        score += sum(token in tokens for tokens in observation_tokens)
    return score


def format_profile_card(entities: Sequence[dict[str, Any]]) -> str:
    """``[Known about the user]`` then one ``• Name (type): obs; obs`` line per entity; "" when empty."""
    if not entities:
        return ""
    lines = [_CARD_HEADER]
    for entity in entities:
        line = f"• {entity['name']} ({entity['entity_type']})"
        facts = [o["content"] for o in entity["observations"]]
        if facts:
            line += ": " + "; ".join(facts)
        lines.append(line)
    return "\n".join(lines)


def _is_current(item: Item) -> bool:
    return item.get("expired_at") is None


@dataclass(frozen=True, slots=True)
class TimeSlice:
    """Which facts a read shows. No bounds: the current ones (not expired).

    ``recorded_as_of`` R: the facts recorded by R and still held current at R (as the graph was known).
    ``as_of`` A: the facts whose valid time holds A, as known at R (now when R is absent): a fact
    invalidated after R still counts as open-ended, because at R nobody knew it would end.
    """

    as_of: str | None = None
    recorded_as_of: str | None = None

    def shows(self, item: Item) -> bool:
        if self.as_of is None and self.recorded_as_of is None:
            return _is_current(item)
        known = self.recorded_as_of
        if known is not None and item["recorded_at"] > known:
            return False
        expired = item.get("expired_at")
        ended_then = expired is not None and (known is None or expired <= known)
        if self.as_of is None:
            return not ended_then
        valid_to = item.get("valid_to") if ended_then else None
        return bool(item["valid_from"] <= self.as_of and (valid_to is None or self.as_of < valid_to))


def _entity_out(entity: dict[str, Any], observations: list[Item]) -> dict[str, Any]:
    ordered = sorted(observations, key=lambda o: (o["recorded_at"], o["id"]))
    return {
        "name": entity["name"],
        "entity_type": entity["entity_type"],
        "updated_at": entity["updated_at"],
        "observations": [records.observation_out(o) for o in ordered],
    }


Position = tuple[str, str, str, str]
"""Where a graph read stands: ``("e", name, recorded_at, id)`` (``""`` for the entity itself) or
``("r", recorded_at, id, "")``; entities by name, each with its observations, then relations."""


class _Pager:
    """Fills a graph answer within a byte budget, one observation or relation at a time.

    An entity cut in the middle of its observations comes back on the next page with the rest (so
    a client merges pages by entity name); ``last`` is the position of the last item taken.
    """

    def __init__(self, budget: Budget, after: Position | None = None) -> None:
        self.budget = budget
        self.after = after
        self.last: Position | None = None

    def _new(self, position: Position) -> bool:
        return self.after is None or position > self.after

    def entity(self, entity: dict[str, Any]) -> dict[str, Any] | None:
        """The entity with those of its observations (not on earlier pages) that fit; None if none do."""
        name = entity["name"]
        pending = [o for o in entity["observations"] if self._new(("e", name, o["recorded_at"], o["id"]))]
        head = {**entity, "observations": []}
        if self._new(("e", name, "", "")):
            if not self.budget.take(head):
                return None
            self.last = ("e", name, "", "")
        elif pending:
            self.budget.charge(head)  # repeated on this page for the observations that follow
        else:
            return None
        for observation in pending:
            if not self.budget.take(observation):
                break
            head["observations"].append(observation)
            self.last = ("e", name, observation["recorded_at"], observation["id"])
        return head if head["observations"] or self.last == ("e", name, "", "") else None

    def entities(self, entities: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for entity in entities:
            fitted = None if self.budget.truncated else self.entity(entity)
            if fitted is not None:
                out.append(fitted)
            if self.budget.truncated:
                break
        return out

    def relations(self, relations: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for relation in relations:
            position = ("r", relation["recorded_at"], relation["id"], "")
            if not self._new(position):
                continue
            if not self.budget.take(relation):
                break
            out.append(relation)
            self.last = position
        return out


def _encode_position(position: Position) -> str:
    raw = json.dumps(position, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_position(cursor: str) -> Position:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        value = None
    if not (isinstance(value, list) and len(value) == 4 and all(isinstance(v, str) for v in value)):
        raise MalformedRequest("cursor is not one this API returned", code="invalid_cursor")
    return (value[0], value[1], value[2], value[3])


def _merge_entities(items: Sequence[Item]) -> dict[str, Any]:
    """One entity seen in several visible scopes: the most specific type (project), the latest update."""
    specific = max(items, key=lambda i: i.get("project_id") is not None)
    return {
        "name": specific["name"],
        "entity_type": specific["entity_type"],
        "updated_at": max(i["updated_at"] for i in items),
        "created_at": min(i["created_at"] for i in items),
    }


class GraphMemoryService:
    def __init__(self, table: Table, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._table = users.guarded(table)
        self._clock = clock
        self._episodes = InvertedIndex(self._table, records.EPISODE_INDEX_NAMESPACE)

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
        self._register(scope)
        return [
            self._create_entity(scope, name, spec.get("entity_type"), spec.get("observations") or [])[0]
            for name, spec in zip(names, entities, strict=True)
        ]

    def remember(
        self, scope: Scope, name: str, facts: Sequence[str], entity_type: str | None = None
    ) -> tuple[dict[str, Any], int]:
        """The ``remember`` tool: upsert one entity with facts; return it and how many facts were new."""
        validate_id(name, "name")
        if entity_type is not None:
            validate_id(entity_type, "entity_type")
        self._begin_write(scope)
        self._register(scope)
        return self._create_entity(scope, name, entity_type, facts)

    def _create_entity(
        self, scope: Scope, name: str, entity_type: str | None, facts: Sequence[str]
    ) -> tuple[dict[str, Any], int]:
        now = self._now()
        entity = self._upsert_entity(scope, name, entity_type, now)
        written = self._write_observations(scope, name, list(facts), now, now) if facts else []
        current = [o for o in self._observations(scope.partition, name) if _is_current(o)]
        return _entity_out(entity, current), len(written)

    def _inherited_type(self, scope: Scope, name: str) -> str | None:
        if scope.project_id is None:
            return None
        item = self._table.get(scope.global_scope.partition, records.entity_sk(name))
        return None if item is None else str(item["entity_type"])

    def _upsert_entity(self, scope: Scope, name: str, entity_type: str | None, now: str) -> Item:
        """Create or update the entity item of ``scope``; optimistic concurrency on ``version``.

        The type membership ``GB#<type>#<name>`` and the ``GU`` recency entry move in the same
        transaction as the entity, so they never disagree with it for long.
        """
        partition = scope.partition
        for _ in range(_MAX_ATTEMPTS):
            current = self._table.get(partition, records.entity_sk(name))
            if current is None:
                kind = entity_type or self._inherited_type(scope, name) or DEFAULT_TYPE
                item = self._entity_item(scope, name, kind, created_at=now, updated_at=now, version=1)
                self._table.batch_write(
                    puts=self._name_postings(partition, name) + self._type_postings(partition, kind)
                )
                ops: list[WriteOp] = [
                    Put(item, _absent()),
                    Put(self._updated_item(partition, name, now)),
                    Put(self._member_item(partition, kind, name)),
                ]
                try:
                    self._table.transact_write(ops)
                except ConditionFailed:
                    continue
                return item
            kind = entity_type or current["entity_type"]
            updated_at = max(now, current["updated_at"])
            version = int(current["version"])
            item = self._entity_item(
                scope, name, kind, created_at=current["created_at"], updated_at=updated_at, version=version + 1
            )
            ops = [Put(item, _version_is(version))]
            if updated_at != current["updated_at"]:
                ops.append(Delete(partition, records.updated_sk(current["updated_at"], name)))
                ops.append(Put(self._updated_item(partition, name, updated_at)))
            if kind != current["entity_type"]:
                self._table.batch_write(puts=self._type_postings(partition, kind))
                ops.append(Delete(partition, records.type_member_sk(current["entity_type"], name)))
                ops.append(Put(self._member_item(partition, kind, name)))
            try:
                self._table.transact_write(ops)
            except ConditionFailed:
                continue
            return item
        raise Conflict("the entity is being changed by other requests; retry", code="write_contention")

    def _entity_item(
        self, scope: Scope, name: str, kind: str, *, created_at: str, updated_at: str, version: int
    ) -> Item:
        return {
            "pk": scope.partition,
            "sk": records.entity_sk(name),
            "name": name,
            "entity_type": kind,
            "project_id": scope.project_id,
            "created_at": created_at,
            "updated_at": updated_at,
            "version": version,
        }

    @staticmethod
    def _updated_item(partition: str, name: str, updated_at: str) -> Item:
        return {"pk": partition, "sk": records.updated_sk(updated_at, name), "name": name, "updated_at": updated_at}

    @staticmethod
    def _name_postings(partition: str, name: str) -> list[Item]:
        return [
            {"pk": partition, "sk": records.name_posting_sk(token, name), "name": name} for token in index_tokens(name)
        ]

    @staticmethod
    def _type_postings(partition: str, kind: str) -> list[Item]:
        """One posting per token of a type, shared by every entity of that type (never deleted: a type
        with no members left only costs its few postings)."""
        return [
            {"pk": partition, "sk": records.type_posting_sk(token, kind), "type": kind} for token in index_tokens(kind)
        ]

    @staticmethod
    def _member_item(partition: str, kind: str, name: str) -> Item:
        return {"pk": partition, "sk": records.type_member_sk(kind, name), "name": name}

    def delete_entities(self, scope: Scope, names: Sequence[str]) -> int:
        """SPEC's ``delete_entities``: hard-delete each named entity of this scope; unknown names are skipped."""
        return _count_found(lambda name: self.delete_entity(scope, name), names)

    def delete_observations(self, scope: Scope, ids: Sequence[str]) -> int:
        return _count_found(lambda obs_id: self.delete_observation(scope, obs_id), ids)

    def delete_relations(self, scope: Scope, ids: Sequence[str]) -> int:
        return _count_found(lambda rel_id: self.delete_relation(scope, rel_id), ids)

    def delete_entity(self, scope: Scope, name: str) -> None:
        """Hard-delete the entity of exactly this scope with its observations and relations."""
        validate_id(name, "name")
        self._begin_write(scope)
        partition = scope.partition
        entity = self._table.get(partition, records.entity_sk(name))
        if entity is None:
            raise NotFound(f"no entity {name!r} in this scope", code="entity_not_found")
        self._table.delete(partition, records.entity_sk(name))
        keys: list[Key] = [(partition, records.updated_sk(entity["updated_at"], name))]
        keys += [(partition, p["sk"]) for p in self._name_postings(partition, name)]
        keys.append((partition, records.type_member_sk(entity["entity_type"], name)))
        for obs in self._observations(partition, name):
            keys += self._observation_keys(obs, include_lock=False)
        keys += [(partition, i["sk"]) for i in query_all(self._table, partition, _lock_prefix(name))]
        links = query_all(self._table, partition, records.link_prefix(name))
        relation_ids = [link["sk"].rsplit("#", 1)[1] for link in links]
        for relation in self._table.batch_get([(partition, records.relation_sk(i)) for i in relation_ids]):
            keys += self._relation_keys(relation)
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
        self._register(scope)
        now = self._now()
        start = format_timestamp(valid_from) if valid_from is not None else now
        self._upsert_entity(scope, name, None, now)
        written = self._write_observations(scope, name, list(texts), start, now)
        return [records.observation_out(o) for o in written]

    def _observation_item(self, scope: Scope, name: str, text: str, valid_from: str, recorded_at: str) -> Item:
        obs_id = new_id()
        return {
            "pk": scope.partition,
            "sk": records.observation_sk(name, obs_id),
            "id": obs_id,
            "entity": name,
            "project_id": scope.project_id,
            "content": text,
            "valid_from": valid_from,
            "valid_to": None,
            "recorded_at": recorded_at,
            "expired_at": None,
            "tokens": index_tokens(text),
            "rev": 1,
        }

    @staticmethod
    def _observation_postings(obs: Item) -> list[Item]:
        return [
            {"pk": obs["pk"], "sk": records.observation_posting_sk(t, obs["entity"], obs["id"])} for t in obs["tokens"]
        ]

    @staticmethod
    def _posting_keys(obs: Item) -> list[Key]:
        return [(obs["pk"], records.observation_posting_sk(t, obs["entity"], obs["id"])) for t in obs["tokens"]]

    @staticmethod
    def _observation_ops(obs: Item) -> list[WriteOp]:
        """Lock the content as current (fails if an identical current fact exists), store fact and pointer."""
        partition, name = obs["pk"], obs["entity"]
        lock = {"pk": partition, "sk": records.current_observation_sk(name, obs["content"]), "id": obs["id"]}
        pointer = {"pk": partition, "sk": records.pointer_sk(obs["id"]), "entity": name}
        return [Put(lock, _absent()), Put(obs), Put(pointer)]

    def _write_observations(
        self, scope: Scope, name: str, texts: list[str], valid_from: str, recorded_at: str
    ) -> list[Item]:
        """Store the facts not already current on the entity; return the ones stored."""
        partition = scope.partition
        unique = list(dict.fromkeys(texts))
        locks = self._table.batch_get([(partition, records.current_observation_sk(name, t)) for t in unique])
        held = {lock["sk"] for lock in locks}
        fresh = [
            self._observation_item(scope, name, t, valid_from, recorded_at)
            for t in unique
            if records.current_observation_sk(name, t) not in held
        ]
        if not fresh:
            return []
        self._table.batch_write(puts=[p for obs in fresh for p in self._observation_postings(obs)])
        entity_check = Check(partition, records.entity_sk(name), _present())
        written: list[Item] = []
        for start in range(0, len(fresh), _OBSERVATIONS_PER_TRANSACTION):
            chunk = fresh[start : start + _OBSERVATIONS_PER_TRANSACTION]
            try:
                self._table.transact_write([entity_check, *(op for obs in chunk for op in self._observation_ops(obs))])
                written += chunk
                continue
            except ConditionFailed:
                pass
            for obs in chunk:  # someone raced us on one of them (or deleted the entity): one by one
                try:
                    self._table.transact_write([entity_check, *self._observation_ops(obs)])
                    written.append(obs)
                except ConditionFailed:
                    self._table.batch_write(deletes=self._posting_keys(obs))
        if not written and self._table.get(partition, records.entity_sk(name)) is None:
            raise NotFound(f"no entity {name!r} in this scope", code="entity_not_found")
        return written

    def _find_observation(self, scope: Scope, obs_id: str) -> Item:
        validate_id(obs_id, "id")
        for pointer in self._table.batch_get(
            [(s.partition, records.pointer_sk(obs_id)) for s in scope.visible_scopes()]
        ):
            item = self._table.get(pointer["pk"], records.observation_sk(pointer["entity"], obs_id))
            if item is not None:
                return item
        raise NotFound(f"no observation {obs_id!r} in this scope", code="observation_not_found")

    @staticmethod
    def _observation_keys(obs: Item, *, include_lock: bool = True) -> list[Key]:
        partition = obs["pk"]
        keys: list[Key] = [(partition, obs["sk"]), (partition, records.pointer_sk(obs["id"]))]
        if _is_current(obs):
            keys += GraphMemoryService._posting_keys(obs)
            if include_lock:
                keys.append((partition, records.current_observation_sk(obs["entity"], obs["content"])))
        return keys

    def _scope_of(self, scope: Scope, item: Item) -> Scope:
        return Scope(scope.app, scope.user, item.get("project_id"))

    def invalidate_observation(self, scope: Scope, obs_id: str, valid_to: datetime | None = None) -> dict[str, Any]:
        """Close the fact's valid time; it leaves the current graph and stays in history. Idempotent."""
        self._begin_write(scope)
        for _ in range(_MAX_ATTEMPTS):
            obs = self._find_observation(scope, obs_id)
            if not _is_current(obs):
                return records.observation_out(obs)
            now = self._now()
            closed = self._closed(obs, valid_to, now)
            try:
                self._table.transact_write(
                    [
                        Put(closed, _rev_is(obs)),
                        Delete(obs["pk"], records.current_observation_sk(obs["entity"], obs["content"])),
                    ]
                )
            except ConditionFailed:
                continue
            self._table.batch_write(deletes=self._posting_keys(obs))
            return records.observation_out(closed)
        raise Conflict("the observation is being changed by other requests; retry", code="write_contention")

    @staticmethod
    def _closed(item: Item, valid_to: datetime | None, now: str) -> Item:
        end = format_timestamp(valid_to) if valid_to is not None else now
        if end < item["valid_from"]:
            raise InvalidInput("valid_to must not be before the fact's valid_from", code="invalid_valid_to")
        return {**item, "valid_to": end, "expired_at": now, "rev": int(item["rev"]) + 1}

    def supersede_observation(self, scope: Scope, obs_id: str, content: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Invalidate a current fact and add its replacement on the same entity, in one transaction."""
        self._begin_write(scope)
        obs = self._find_observation(scope, obs_id)
        if not _is_current(obs):
            raise Conflict("the observation is no longer current", code="observation_not_current")
        if content == obs["content"]:
            raise InvalidInput("the new content is identical to the current one", code="identical_content")
        owner = self._scope_of(scope, obs)
        name = obs["entity"]
        now = self._now()
        closed = self._closed(obs, None, now)
        created = self._observation_item(owner, name, content, now, now)
        self._table.batch_write(puts=self._observation_postings(created))
        ops: list[WriteOp] = [
            Check(obs["pk"], records.entity_sk(name), _present()),
            Put(closed, _rev_is(obs)),
            Delete(obs["pk"], records.current_observation_sk(name, obs["content"])),
            *self._observation_ops(created),
        ]
        try:
            self._table.transact_write(ops)
        except ConditionFailed:
            self._table.batch_write(deletes=self._posting_keys(created))
            raise Conflict(
                "the observation changed meanwhile or the entity already holds that fact; nothing was written",
                code="supersede_conflict",
            ) from None
        self._table.batch_write(deletes=self._posting_keys(obs))
        with contextlib.suppress(Conflict):
            self._upsert_entity(owner, name, None, now)
        return records.observation_out(closed), records.observation_out(created)

    def delete_observation(self, scope: Scope, obs_id: str) -> None:
        self._begin_write(scope)
        obs = self._find_observation(scope, obs_id)
        self._table.delete(obs["pk"], obs["sk"])
        self._table.batch_write(deletes=self._observation_keys(obs))

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
        for _ in range(_MAX_ATTEMPTS):
            lock = self._table.get(partition, lock_sk)
            if lock is not None:
                existing = self._table.get(partition, records.relation_sk(lock["id"]))
                if existing is not None:
                    return records.relation_out(existing)
            endpoints = list(dict.fromkeys([source, target]))
            present = {i["name"] for i in self._table.batch_get([(partition, records.entity_sk(n)) for n in endpoints])}
            now = self._now()
            for name in endpoints:
                if name not in present:
                    self._upsert_entity(scope, name, None, now)
            rel_id = new_id()
            item = {
                "pk": partition,
                "sk": records.relation_sk(rel_id),
                "id": rel_id,
                "project_id": scope.project_id,
                "source": source,
                "relation_type": relation_type,
                "target": target,
                "valid_from": now,
                "valid_to": None,
                "recorded_at": now,
                "expired_at": None,
                "rev": 1,
            }
            ops: list[WriteOp] = [Put({"pk": partition, "sk": lock_sk, "id": rel_id}, _absent()), Put(item)]
            for name in endpoints:
                ops.append(Check(partition, records.entity_sk(name), _present()))
                ops.append(Put({"pk": partition, "sk": records.link_sk(name, rel_id)}))
            try:
                self._table.transact_write(ops)
            except ConditionFailed:
                continue
            return records.relation_out(item)
        raise Conflict("the relation is being changed by other requests; retry", code="write_contention")

    def _find_relation(self, scope: Scope, rel_id: str) -> Item:
        validate_id(rel_id, "id")
        found = self._table.batch_get([(s.partition, records.relation_sk(rel_id)) for s in scope.visible_scopes()])
        if not found:
            raise NotFound(f"no relation {rel_id!r} in this scope", code="relation_not_found")
        return found[0]

    @staticmethod
    def _relation_keys(relation: Item) -> list[Key]:
        partition = relation["pk"]
        keys: list[Key] = [(partition, relation["sk"])]
        keys += [(partition, records.link_sk(n, relation["id"])) for n in {relation["source"], relation["target"]}]
        if _is_current(relation):
            lock = records.current_relation_sk(relation["source"], relation["relation_type"], relation["target"])
            keys.append((partition, lock))
        return keys

    def invalidate_relation(self, scope: Scope, rel_id: str, valid_to: datetime | None = None) -> dict[str, Any]:
        self._begin_write(scope)
        for _ in range(_MAX_ATTEMPTS):
            relation = self._find_relation(scope, rel_id)
            if not _is_current(relation):
                return records.relation_out(relation)
            closed = self._closed(relation, valid_to, self._now())
            lock = records.current_relation_sk(relation["source"], relation["relation_type"], relation["target"])
            try:
                self._table.transact_write([Put(closed, _rev_is(relation)), Delete(relation["pk"], lock)])
            except ConditionFailed:
                continue
            return records.relation_out(closed)
        raise Conflict("the relation is being changed by other requests; retry", code="write_contention")

    def delete_relation(self, scope: Scope, rel_id: str) -> None:
        self._begin_write(scope)
        relation = self._find_relation(scope, rel_id)
        self._table.batch_write(deletes=self._relation_keys(relation))

    def _relations_of(self, partitions: Sequence[str], names: Iterable[str]) -> list[Item]:
        keys: list[Key] = []
        for partition in partitions:
            for name in dict.fromkeys(names):
                links = query_all(self._table, partition, records.link_prefix(name))
                keys += [(partition, records.relation_sk(link["sk"].rsplit("#", 1)[1])) for link in links]
        found = self._table.batch_get(list(dict.fromkeys(keys)))
        return sorted(found, key=lambda r: (r["recorded_at"], r["id"]))

    # -- reads -------------------------------------------------------------------------------------

    def _entities(self, scope: Scope, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Visible entities by name, merged across the visible scopes; unknown names are absent."""
        keys = [(s.partition, records.entity_sk(n)) for n in dict.fromkeys(names) for s in scope.visible_scopes()]
        grouped: dict[str, list[Item]] = {}
        for item in self._table.batch_get(keys):
            grouped.setdefault(item["name"], []).append(item)
        return {name: _merge_entities(items) for name, items in grouped.items()}

    def _visible_observations(self, scope: Scope, name: str) -> list[Item]:
        return [o for s in scope.visible_scopes() for o in self._observations(s.partition, name)]

    def search_nodes(self, scope: Scope, query: str, limit: int = 10) -> dict[str, Any]:
        """``results``: entities with a score > 0, best first (ties by name), each with its current
        relations, within the response byte budget (``truncated`` when cut).

        Reads one posting range per query token and scope, then the returned entities only.
        """
        tokens = index_tokens(query)
        if not tokens:
            return {"results": [], "truncated": False}
        partitions = [s.partition for s in scope.visible_scopes()]
        scores: dict[str, int] = {}
        type_bonus: dict[str, int] = {}
        for token in tokens:
            named: set[str] = set()
            typed: set[str] = set()
            for partition in partitions:
                named.update(p["name"] for p in query_all(self._table, partition, records.name_posting_prefix(token)))
                typed.update(p["type"] for p in query_all(self._table, partition, records.type_posting_prefix(token)))
                prefix = records.observation_posting_prefix(token)
                for posting in query_all(self._table, partition, prefix):
                    holder = records.name_of_key(posting["sk"][len(prefix) :].rsplit("#", 1)[0])
                    scores[holder] = scores.get(holder, 0) + 1
            for name in named:
                scores[name] = scores.get(name, 0) + 3
            for kind in typed:
                type_bonus[kind] = type_bonus.get(kind, 0) + 2
        if type_bonus:
            scores = self._add_type_bonus(scope, partitions, scores, type_bonus, limit)
        ranked = sorted((name for name, s in scores.items() if s > 0), key=lambda n: (-scores[n], n))[:limit]
        entities = self._entities(scope, ranked)
        results: list[dict[str, Any]] = []
        for name in ranked:
            entity = entities.get(name)
            if entity is None:
                continue  # postings of an entity deleted meanwhile
            current = [o for o in self._visible_observations(scope, name) if _is_current(o)]
            score = score_tokens(tokens, name, entity["entity_type"], (o["tokens"] for o in current))
            if score <= 0:
                continue
            relations = [r for r in self._relations_of(partitions, [name]) if _is_current(r)]
            results.append(
                {
                    "entity": _entity_out(entity, current),
                    "relations": [records.relation_out(r) for r in relations],
                    "score": score,
                }
            )
        results.sort(key=lambda r: (-r["score"], r["entity"]["name"]))
        pager = _Pager(Budget())
        fitted: list[dict[str, Any]] = []
        for result in results:
            entity = pager.entity(result["entity"])
            if entity is None:
                break
            fitted.append(
                {"entity": entity, "relations": pager.relations(result["relations"]), "score": result["score"]}
            )
            if pager.budget.truncated:
                break
        return {"results": fitted, "truncated": pager.budget.truncated}

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
        entities = self._entities(scope, names)
        out = []
        for name in dict.fromkeys(names):
            if name in entities:
                current = [o for o in self._visible_observations(scope, name) if _is_current(o)]
                out.append(_entity_out(entities[name], current))
        partitions = [s.partition for s in scope.visible_scopes()]
        relations = [r for r in self._relations_of(partitions, entities) if _is_current(r)]
        pager = _Pager(Budget())
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
        after = _decode_position(cursor) if cursor else None
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
            entity = _merge_entities(grouped[name])
            if entity["created_at"] <= horizon or name in observations or name in endpoints:
                entities.append(_entity_out(entity, observations.get(name, [])))
        relations.sort(key=lambda r: (r["recorded_at"], r["id"]))
        pager = _Pager(Budget(), after)
        page = pager.entities(entities)
        related = [] if pager.budget.truncated else pager.relations(records.relation_out(r) for r in relations)
        cut = pager.budget.truncated and pager.last is not None
        return {
            "entities": page,
            "relations": related,
            "truncated": cut,
            "next_cursor": _encode_position(pager.last) if cut and pager.last is not None else None,
        }

    def history(self, scope: Scope, name: str) -> dict[str, Any]:
        """The entity with every observation and relation it ever had (current and past), with timestamps."""
        validate_id(name, "name")
        entity = self._entities(scope, [name]).get(name)
        if entity is None:
            raise NotFound(f"no entity {name!r} in this scope", code="entity_not_found")
        pager = _Pager(Budget())
        out = pager.entity(_entity_out(entity, self._visible_observations(scope, name)))
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
        merged = self._entities(scope, list(dict.fromkeys(names)))
        chosen = sorted(merged.values(), key=lambda e: (e["updated_at"], e["name"]), reverse=True)[:max_entities]
        card = []
        # The text repeats the entities' facts: they take half the card budget, the text the other half.
        pager = _Pager(Budget(CARD_BUDGET_BYTES // 2))
        for entity in chosen:
            current = [o for o in self._visible_observations(scope, entity["name"]) if _is_current(o)]
            newest = sorted(current, key=lambda o: (o["recorded_at"], o["id"]), reverse=True)[:max_observations]
            fitted = pager.entity(_entity_out(entity, newest))
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
        partition = scope.partition
        session_prefix = records.episode_session_prefix(session_id)
        old_ids = [i["sk"][len(session_prefix) :] for i in query_all(self._table, partition, session_prefix)]
        items: list[Item] = []
        side: list[Item] = []
        now = self._clock()
        max_terms = terms_per_document(len(entries))
        for entry in entries:
            text = entry.content.text()
            if not text.strip():
                continue
            size = len(text.encode("utf-8"))
            if size > MAX_TEXT_BYTES:
                raise PayloadTooLarge(
                    f"an entry holds {size} bytes of text; the limit is {MAX_TEXT_BYTES}", code="entry_too_large"
                )
            moment = entry.timestamp or now
            episode_id = new_id(int(moment.timestamp() * 1000))
            tokens = tokenize(text)
            terms = index_terms(tokens, max_terms)
            items.append(
                {
                    "pk": partition,
                    "sk": records.episode_sk(episode_id),
                    "id": episode_id,
                    "session_id": session_id,
                    "project_id": scope.project_id,
                    "author": entry.author,
                    "text": text,
                    "timestamp": format_timestamp(moment),
                    "tokens": sorted(terms),
                    "length": len(tokens),
                }
            )
            side.append({"pk": partition, "sk": session_prefix + episode_id})
            side += self._episodes.postings(partition, episode_id, terms, len(tokens))
        check_items([*side, *items])  # a rejected write must leave nothing behind
        self._register(scope)
        self._table.batch_write(puts=side)
        self._episodes.record(partition, docs=len(items), length=sum(int(i["length"]) for i in items))
        self._table.batch_write(puts=items)
        self._delete_episodes(partition, session_prefix, old_ids)
        return len(items)

    def _delete_episodes(self, partition: str, session_prefix: str, episode_ids: Sequence[str]) -> None:
        if not episode_ids:
            return
        old = self._table.batch_get([(partition, records.episode_sk(i)) for i in episode_ids])
        keys: list[Key] = [(partition, i["sk"]) for i in old]
        for item in old:
            keys += self._episodes.posting_keys(partition, item["id"], item.get("tokens", []))
        keys += [(partition, session_prefix + i) for i in episode_ids]
        self._table.batch_write(deletes=keys)
        self._episodes.forget(partition, docs=len(old), length=sum(int(i.get("length", 0)) for i in old))

    def list_episodes(
        self, scope: Scope, *, session_id: str | None = None, query: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        """``episodes`` newest first; with ``query``, by token overlap (BM25, best first, with a score);
        within the response byte budget (``truncated`` when cut)."""
        episodes = self._episodes_of(scope, session_id=session_id, query=query, limit=limit)
        budget = Budget()
        fitted = []
        for episode in episodes:
            if not budget.take(episode):
                break
            fitted.append(episode)
        return {"episodes": fitted, "truncated": budget.truncated}

    def _episodes_of(
        self, scope: Scope, *, session_id: str | None, query: str | None, limit: int
    ) -> list[dict[str, Any]]:
        if session_id is not None:
            validate_id(session_id, "session_id")
        partitions = [s.partition for s in scope.visible_scopes()]
        if query is not None and query.strip():
            hits = self._episodes.search(partitions, tokenize(query))
            found = {
                (i["pk"], i["id"]): i
                for i in self._table.batch_get([(h.partition, records.episode_sk(h.doc_id)) for h in hits])
            }
            out = []
            for hit in hits:
                item = found.get((hit.partition, hit.doc_id))
                if item is None or (session_id is not None and item.get("session_id") != session_id):
                    continue
                out.append({**records.episode_out(item), "score": hit.score})
                if len(out) >= limit:
                    break
            return out
        items: list[Item] = []
        for partition in partitions:
            if session_id is not None:
                prefix = records.episode_session_prefix(session_id)
                ids = [i["sk"][len(prefix) :] for i in query_all(self._table, partition, prefix)]
                items += self._table.batch_get([(partition, records.episode_sk(i)) for i in ids])
            else:
                items += self._table.query(partition, records.EPISODE, limit=limit, descending=True).items
        items.sort(key=lambda i: (i["timestamp"], i["id"]), reverse=True)
        return [records.episode_out(i) for i in items[:limit]]


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


def _absent() -> Condition:
    return Condition(exists=False)


def _present() -> Condition:
    return Condition(exists=True)


def _version_is(version: int) -> Condition:
    return Condition(equals={"version": version})


def _rev_is(item: Item) -> Condition:
    return Condition(equals={"rev": int(item["rev"])})


def _lock_prefix(name: str) -> str:
    return f"{records.CURRENT_OBSERVATION}{records.entity_key(name)}#"
