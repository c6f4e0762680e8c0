"""What ``GET {scope}/export`` hands the user, item by item: each stored item in the API's own shape
(API.md's entry, entity, observation, relation, episode and store item), never the table's keys or
bookkeeping (``sk``, ``seg``, ``rev``, an entity's fact ids, an observation's tokens).

Each kind of item the export reads is exported by one function of :data:`SHAPES`, named by the section
of the page it goes to; a kind added to the export is one function there and its section in the page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentmem.deletion import records
from agentmem.errors import Conflict
from agentmem.graph import records as graph_records
from agentmem.memory import records as memory_records
from agentmem.store import records as store_records
from agentmem.stores.retry import CONTENTION_CODE
from agentmem.stores.table import Item

Read = Callable[[str, str], Item | None]
"""Reads one item by its key (the export page's read budget counts it)."""


def entry(item: Item) -> dict[str, Any]:
    return memory_records.entry_from_item(item).to_json()


def entity(item: Item) -> dict[str, Any]:
    """An entity without its observations (they are exported beside it, each naming its entity)."""
    return {
        "name": item["name"],
        "entity_type": item["entity_type"],
        "project_id": item.get("project_id"),
        "created_at": item.get("created_at"),
        "updated_at": item["updated_at"],
    }


def observation(item: Item) -> dict[str, Any]:
    return {"entity": item["entity"], "project_id": item.get("project_id"), **graph_records.observation_out(item)}


def relation(item: Item) -> dict[str, Any]:
    return {**graph_records.relation_out(item), "project_id": item.get("project_id")}


SHAPES: dict[str, Callable[[Item], dict[str, Any]]] = {
    "entries": entry,
    "events": entry,
    "entities": entity,
    "observations": observation,
    "relations": relation,
    "episodes": graph_records.episode_out,
}
"""The section of the export page an item goes to, and how it is shown there."""


def exported(item: Item, read: Read) -> tuple[str, dict[str, Any]] | None:
    """The section and shape of one item the export read; None for what is not the user's data."""
    kind = records.classify(item)
    if kind == "graph_items":
        section: str = records.graph_kind(item)
    elif kind in ("entries", "episodes"):
        section = kind
    elif str(item["sk"]).startswith(memory_records.EVENT):
        section = "events"  # an AgentCore event that is no memory (a blob: docs/agentcore.md), as an entry
    elif str(item["sk"]).startswith(memory_records.VERSION):
        return _version(item, read)
    elif store_records.is_key_row(item):
        return _store_item(item, read)
    else:
        return None
    return section, SHAPES[section](item)


def _version(item: Item, read: Read) -> tuple[str, dict[str, Any]] | None:
    """A superseded version of an entry, with the entry's id and project; None when its entry is gone (a
    version a correction wrote while a delete of its entry ran: never served, erasure removes it)."""
    entry = read(item["pk"], memory_records.entry_sk(item["id"]))
    if entry is None or memory_records.revision_of(entry) <= memory_records.revision_of(item):
        return None
    version = memory_records.version_json(item)
    return "memory_history", {"memory_id": item["id"], "project_id": item.get("project_id"), **version}


def _store_item(row: Item, read: Read) -> tuple[str, dict[str, Any]] | None:
    """A key row with its value; a value that lives apart is read from its row, and when the key was put
    again between the two reads, both are read again (the item as it is now; None: deleted since)."""
    for _ in range(3):
        value_row_key = store_records.value_row_key(row)
        value_row = read(*value_row_key) if value_row_key is not None else None
        if value_row_key is None or store_records.is_value_of(value_row, row):
            return "store", store_records.item_json(row, store_records.value_of(row, value_row))
        again = read(row["pk"], row["sk"])
        if again is None:
            return None
        row = again
    raise Conflict("a store item is being changed by other requests; retry the page", code=CONTENTION_CODE)
