"""``read_graph`` a page at a time: each page reads a bounded window of the graph, never all of it.

A page reads the next :data:`ENTITY_PAGE` entity names of every visible scope (merged by name, in key
order) with their facts, then, once the entities are done, the next :data:`RELATION_PAGE` relations; it
answers what fits the response budget and a ``next_cursor`` wherever it stopped, so reading a graph of
16,500 items in 8 pages reads each item about once (it read all of them on every page before).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentmem.budget import Budget
from agentmem.graph import records
from agentmem.graph.paging import Pager, Position, encode_position, entity_out, merge_entities
from agentmem.graph.timeslice import TimeSlice
from agentmem.stores.table import Item, Table, query_all

ENTITY_PAGE = 200
"""Entities a page reads at most, per visible scope."""
RELATION_PAGE = 1000
"""Relations a page reads at most, per visible scope."""
CurrentObservations = Callable[[Sequence[Item]], dict[str, list[Item]]]


def _window(
    table: Table, partitions: Sequence[str], prefix: str, start: str | None, size: int
) -> tuple[list[Item], bool]:
    """The items under ``prefix`` of every partition from ``start`` on (inclusive), in key order, up to the
    key every partition has been read to; and whether more may follow."""
    pages = []
    for partition in partitions:
        found = table.get(partition, start) if start is not None else None
        after = start
        page = (
            table.query(partition, prefix, limit=size, start_after=after)
            if start is not None
            else table.query(partition, prefix, limit=size)
        )
        items = ([found] if found is not None else []) + page.items
        pages.append((items, page.next_start is not None))
    bounds = [items[-1]["sk"] for items, full in pages if full and items]
    bound = min(bounds) if bounds else None
    merged = sorted(
        (i for items, _ in pages for i in items if bound is None or i["sk"] <= bound), key=lambda i: i["sk"]
    )
    return merged, bound is not None


def read_page(
    table: Table,
    partitions: Sequence[str],
    view: TimeSlice,
    horizon: str,
    after: Position | None,
    current_observations: CurrentObservations,
) -> dict[str, Any]:
    pager = Pager(Budget(), after)
    entities: list[dict[str, Any]] = []
    more_entities = False
    if after is None or after[0] == "e":
        start = records.entity_sk(after[1]) if after is not None else None
        items, more_entities = _window(table, partitions, records.ENTITY, start, ENTITY_PAGE)
        grouped: dict[str, list[Item]] = {}
        for item in items:
            grouped.setdefault(item["name"], []).append(item)
        shown = _observations(table, view, grouped, current_observations)
        for name, held in grouped.items():
            entity = merge_entities(held)
            if entity["created_at"] <= horizon or name in shown or _related_then(table, view, held):
                entities.append(entity_out(entity, shown.get(name, [])))
    page = pager.entities(entities)
    relations: list[dict[str, Any]] = []
    more_relations = False
    if not pager.budget.truncated and not more_entities:
        start = records.relation_sk(after[2]) if after is not None and after[0] == "r" else None
        found, more_relations = _window(table, partitions, records.RELATION, start, RELATION_PAGE)
        shown_relations = sorted((r for r in found if view.shows(r)), key=lambda r: (r["recorded_at"], r["id"]))
        relations = pager.relations(records.relation_out(r) for r in shown_relations)
    more = pager.budget.truncated or more_entities or more_relations
    resume = pager.last if pager.last is not None else after
    return {
        "entities": page,
        "relations": relations,
        "truncated": more and resume is not None,
        "next_cursor": encode_position(resume) if more and resume is not None else None,
    }


def _observations(
    table: Table, view: TimeSlice, grouped: dict[str, list[Item]], current_observations: CurrentObservations
) -> dict[str, list[Item]]:
    """The shown observations of the entities, by name: the current ones through the entities' ``facts``;
    in a time slice, those of the entities' histories the slice shows."""
    if view.as_of is None and view.recorded_as_of is None:
        return current_observations([i for held in grouped.values() for i in held])
    shown: dict[str, list[Item]] = {}
    for name, held in grouped.items():
        for entity in held:
            for item in query_all(table, entity["pk"], records.observation_prefix(name)):
                if view.shows(item):
                    shown.setdefault(name, []).append(item)
    return shown


def _related_then(table: Table, view: TimeSlice, held: Sequence[Item]) -> bool:
    """Whether the entity takes part in a relation the slice shows (an entity recorded later than the
    slice's horizon is shown only then); never asked of the current view."""
    if view.as_of is None and view.recorded_as_of is None:
        return False
    for entity in held:
        links = query_all(table, entity["pk"], records.link_prefix(entity["name"]))
        keys = [(entity["pk"], records.relation_sk(link["sk"].rsplit("#", 1)[1])) for link in links]
        if any(view.shows(r) for r in table.batch_get(keys)):
            return True
    return False
