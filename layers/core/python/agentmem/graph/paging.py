"""Graph answers as the API returns them: entities with their observations, paged within a byte
budget (:class:`Pager`), resumable through an opaque cursor, and the profile card's text."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from typing import Any

from agentmem.budget import Budget
from agentmem.errors import MalformedRequest
from agentmem.graph import records
from agentmem.graph.writes import DEFAULT_TYPE
from agentmem.stores.table import Item

_CARD_HEADER = "[Known about the user]"


def format_profile_card(entities: Sequence[dict[str, Any]], relations: Sequence[dict[str, Any]] = ()) -> str:
    """``[Known about the user]`` then one line per entity, ``• Name (type): obs; obs; relation Target``
    (no type when it is ``general``: it says nothing), a relation on its source's line, or on its target's
    (``Source relation Target``) when its source is not on the card; "" when empty."""
    if not entities:
        return ""
    on_card = {entity["name"] for entity in entities}
    told: dict[str, list[str]] = {}
    for relation in relations:
        source, kind, target = relation["source"], relation["relation_type"], relation["target"]
        if source in on_card:
            told.setdefault(source, []).append(f"{kind} {target}")
        else:
            told.setdefault(target, []).append(f"{source} {kind} {target}")
    lines = [_CARD_HEADER]
    for entity in entities:
        line = f"• {entity['name']}"
        if entity["entity_type"] != DEFAULT_TYPE:
            line += f" ({entity['entity_type']})"
        facts = [o["content"] for o in entity["observations"]] + told.get(entity["name"], [])
        if facts:
            line += ": " + "; ".join(facts)
        lines.append(line)
    return "\n".join(lines)


def card_relations(names: Sequence[str], relations: Sequence[Item], per_entity: int) -> dict[str, list[Item]]:
    """The current relations a card shows, by the entity whose line tells them: each on its source's line,
    or on its target's when the source is not on the card; the newest ``per_entity`` a line, oldest first."""
    on_card = set(names)
    lines: dict[str, list[Item]] = {}
    for relation in sorted(relations, key=lambda r: (r["recorded_at"], r["id"]), reverse=True):
        owner = relation["source"] if relation["source"] in on_card else relation["target"]
        if owner in on_card and len(lines.setdefault(owner, [])) < per_entity:
            lines[owner].append(relation)
    return {owner: list(reversed(told)) for owner, told in lines.items()}


def entity_out(entity: dict[str, Any], observations: list[Item]) -> dict[str, Any]:
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


class Pager:
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


def encode_position(position: Position) -> str:
    raw = json.dumps(position, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_position(cursor: str) -> Position:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        value = None
    if not (isinstance(value, list) and len(value) == 4 and all(isinstance(v, str) for v in value)):
        raise MalformedRequest("cursor is not one this API returned", code="invalid_cursor")
    return (value[0], value[1], value[2], value[3])


def merge_entities(items: Sequence[Item]) -> dict[str, Any]:
    """One entity seen in several visible scopes: the most specific type (project), the latest update."""
    specific = max(items, key=lambda i: i.get("project_id") is not None)
    return {
        "name": specific["name"],
        "entity_type": specific["entity_type"],
        "updated_at": max(i["updated_at"] for i in items),
        "created_at": min(i["created_at"] for i in items),
    }
