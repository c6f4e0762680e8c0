"""The graph's search index held in process: each entity's search terms (the tokens of its name and type,
and how many of its current observations hold each token), caught up from the partition's graph change
log (agentmem/search/changes.py, :data:`~agentmem.search.changes.GRAPH`), as memory search is (ADR 0004).

``search_nodes`` scores every entity from here by SPEC's rule (per query token: +3 when the name holds
it, +2 when the type does, +1 per current observation that does) and reads only the entities it returns:
what a search reads does not grow with the graph. Every write that changes an entity's name, type or
current facts logs the entity's name; a process re-reads the named entities and their current facts.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agentmem.graph import records
from agentmem.graph.scoring import index_tokens
from agentmem.graph.timeslice import is_current
from agentmem.search import changes
from agentmem.search.changes import Caught, HeldPartitions, Stats
from agentmem.stores.table import Item, Table, query_all

ENTITY_BYTES = 1000
TOKEN_BYTES = 70
WORD_BYTES = 100
"""What Python objects take per entity, per token of its terms and per token of the maps:
:attr:`GraphPartition.nbytes`."""


@dataclass(frozen=True, slots=True)
class Terms:
    """One entity's search terms."""

    entity_type: str
    name: frozenset[str]
    kind: frozenset[str]
    facts: Counter[str]
    """Token -> how many current observations hold it."""


@dataclass
class GraphPartition:
    """The search terms of one partition's entities, by name, and the maps from tokens to entities."""

    place: Caught
    terms: dict[str, Terms] = field(default_factory=dict)
    by_name: dict[str, set[str]] = field(default_factory=dict)
    by_fact: dict[str, dict[str, int]] = field(default_factory=dict)
    by_type_token: dict[str, set[str]] = field(default_factory=dict)
    members: dict[str, set[str]] = field(default_factory=dict)
    """Entity type -> the entities of that type."""
    tokens: int = 0
    """How many tokens the entities' terms hold."""

    @property
    def nbytes(self) -> int:
        """About what the index takes in memory (measured with tracemalloc: tests/integration/test_graph_layout.py)."""
        words = len(self.by_name) + len(self.by_fact) + len(self.by_type_token)
        return len(self.terms) * ENTITY_BYTES + self.tokens * TOKEN_BYTES + words * WORD_BYTES

    @classmethod
    def of(cls, place: Caught, entities: Iterable[Item], observations: Iterable[Item]) -> GraphPartition:
        """The terms of ``entities`` with their current facts among ``observations``."""
        held = cls(place)
        by_entity: dict[str, list[Item]] = {}
        for obs in observations:
            by_entity.setdefault(obs["entity"], []).append(obs)
        for entity in entities:
            name = entity["name"]
            held.set(name, terms_of(entity, _current(entity, by_entity.get(name, []))))
        return held

    def set(self, name: str, terms: Terms | None) -> None:
        """Hold ``terms`` as the entity's (None: the entity is gone)."""
        old = self.terms.pop(name, None)
        if old is not None:
            self.tokens -= len(old.name) + len(old.kind) + len(old.facts)
            for token in old.name:
                self.by_name.get(token, set()).discard(name)
            for token in old.facts:
                self.by_fact.get(token, {}).pop(name, None)
            members = self.members.get(old.entity_type)
            if members is not None:
                members.discard(name)
                if not members:
                    del self.members[old.entity_type]
                    for token in old.kind:
                        self.by_type_token.get(token, set()).discard(old.entity_type)
        if terms is None:
            return
        self.terms[name] = terms
        self.tokens += len(terms.name) + len(terms.kind) + len(terms.facts)
        for token in terms.name:
            self.by_name.setdefault(token, set()).add(name)
        for token, count in terms.facts.items():
            self.by_fact.setdefault(token, {})[name] = count
        self.members.setdefault(terms.entity_type, set()).add(name)
        for token in terms.kind:
            self.by_type_token.setdefault(token, set()).add(terms.entity_type)


def terms_of(entity: Item, observations: Iterable[Item]) -> Terms:
    """An entity's terms from its item and its current observations."""
    facts: Counter[str] = Counter()
    for obs in observations:
        facts.update(set(obs.get("tokens") or index_tokens(obs["content"])))
    kind = str(entity["entity_type"])
    return Terms(kind, frozenset(index_tokens(entity["name"])), frozenset(index_tokens(kind)), facts)


def _current(entity: Item, observations: Iterable[Item]) -> list[Item]:
    """The entity's current observations among ``observations`` (those its ``facts`` list; of an entity of
    layout 1, those still current)."""
    facts = entity.get("facts")
    if isinstance(facts, dict):
        ids = set(facts.values())
        return [o for o in observations if o["id"] in ids]
    return [o for o in observations if is_current(o)]


class GraphSearchIndex:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._held: HeldPartitions[GraphPartition] = HeldPartitions(
            table,
            changes.GRAPH,
            load=self._load,
            read=self._read,
            apply=self._apply,  # type: ignore[arg-type]
            caught=lambda held: held.place,
            size=lambda held: held.nbytes,
        )

    def held(self, partition: str) -> GraphPartition:
        return self._held.get(partition)

    def _load(self, partition: str, current: Stats) -> GraphPartition:
        return GraphPartition.of(
            Caught(current.epoch, current.version),
            query_all(self._table, partition, records.ENTITY, page_size=1000),
            query_all(self._table, partition, records.OBSERVATION, page_size=1000),
        )

    def _read(self, partition: str, names: Sequence[str]) -> list[tuple[str, Terms | None]]:
        """The current terms of the named entities (None for those gone)."""
        entities = {i["name"]: i for i in self._table.batch_get([(partition, records.entity_sk(n)) for n in names])}
        keys = []
        layout_1: dict[str, list[Item]] = {}
        for name, entity in entities.items():
            facts = entity.get("facts")
            if isinstance(facts, dict):
                keys += [(partition, records.observation_sk(name, obs_id)) for obs_id in facts.values()]
            else:
                layout_1[name] = query_all(self._table, partition, records.observation_prefix(name))
        observations: dict[str, list[Item]] = dict(layout_1)
        for obs in self._table.batch_get(keys):
            observations.setdefault(obs["entity"], []).append(obs)
        return [
            (
                name,
                terms_of(entities[name], _current(entities[name], observations.get(name, [])))
                if name in entities
                else None,
            )
            for name in names
        ]

    @staticmethod
    def _apply(held: GraphPartition, _changed: set[str], read: Sequence[tuple[str, Terms | None]], _: Stats) -> None:
        for name, terms in read:
            held.set(name, terms)

    def scores(self, partitions: Sequence[str], tokens: Sequence[str], limit: int) -> dict[str, int]:
        """Every entity of the partitions (one graph: an entity in several is merged, the last partition's
        type winning) with a positive score for ``tokens``; of the entities matched by their type alone,
        only the first ``limit`` by name of each type (they all score alike: the others cannot beat them)."""
        held = [self.held(p) for p in partitions]
        query = list(dict.fromkeys(tokens))
        scores: dict[str, int] = {}
        for token in query:
            for name in set().union(*(part.by_name.get(token, set()) for part in held)):
                scores[name] = scores.get(name, 0) + 3
            for part in held:
                for name, count in part.by_fact.get(token, {}).items():
                    scores[name] = scores.get(name, 0) + count
        typed = [token for token in query if any(token in part.by_type_token for part in held)]
        if typed:
            for name in list(scores):
                scores[name] += 2 * sum(token in _kind(name, held) for token in typed)
            for part in held:
                for token in typed:
                    for kind in part.by_type_token.get(token, set()):
                        others = (n for n in part.members.get(kind, ()) if n not in scores)
                        for name in heapq.nsmallest(limit, others):
                            scores[name] = 2 * sum(t in _kind(name, held) for t in typed)
        return {name: score for name, score in scores.items() if score > 0}


def _kind(name: str, held: Sequence[GraphPartition]) -> frozenset[str]:
    """The tokens of the entity's type: its most specific scope's (the project's, listed last)."""
    for part in reversed(held):
        terms = part.terms.get(name)
        if terms is not None:
            return terms.kind
    return frozenset()


def log_changed(table: Table, partition: str, names: Iterable[str], *, create: bool = True) -> None:
    """Tell every process's graph index that these entities' search terms changed."""
    named = list(dict.fromkeys(names))
    if named:
        changes.GRAPH.record(table, partition, named, create=create)
