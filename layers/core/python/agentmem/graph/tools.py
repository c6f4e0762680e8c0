"""The agent tools ``remember`` and ``relate``: JSON schemas for tool-calling LLMs and their mapping
onto :class:`~agentmem.graph.service.GraphMemoryService`.

``TOOL_SCHEMAS`` is in the common function-calling shape (``name``, ``description``, ``parameters`` as
JSON Schema); :func:`anthropic_tools` and :func:`openai_tools` wrap it for the two usual clients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope

REMEMBER_SCHEMA: dict[str, Any] = {
    "name": "remember",
    "description": (
        "Store lasting facts about one entity (the user, a person, a project, a preference) in long-term "
        "memory. Use short atomic facts. Omit entity_type to keep the type the entity already has."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "entity": {"type": "string", "minLength": 1, "description": "who or what the facts are about"},
            "entity_type": {"type": "string", "minLength": 1, "description": "e.g. person, project, preference"},
            "facts": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": 100,
                "description": "short atomic facts, e.g. 'prefers dark mode'",
            },
        },
        "required": ["entity", "facts"],
        "additionalProperties": False,
    },
}

RELATE_SCHEMA: dict[str, Any] = {
    "name": "relate",
    "description": "Store a typed relation between two entities, e.g. Alice --works_at--> Acme.",
    "parameters": {
        "type": "object",
        "properties": {
            "source": {"type": "string", "minLength": 1, "description": "the entity the relation starts from"},
            "relation": {"type": "string", "minLength": 1, "description": "active voice, e.g. works_at, likes"},
            "target": {"type": "string", "minLength": 1, "description": "the entity the relation points to"},
        },
        "required": ["source", "relation", "target"],
        "additionalProperties": False,
    },
}

TOOL_SCHEMAS: list[dict[str, Any]] = [REMEMBER_SCHEMA, RELATE_SCHEMA]


def anthropic_tools() -> list[dict[str, Any]]:
    return [{"name": s["name"], "description": s["description"], "input_schema": s["parameters"]} for s in TOOL_SCHEMAS]


def openai_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": s} for s in TOOL_SCHEMAS]


def remember(
    graph: GraphMemoryService, scope: Scope, entity: str, facts: Sequence[str], entity_type: str | None = None
) -> dict[str, Any]:
    """Upsert the entity (keeping its type when none is given) and add the facts not already current."""
    stored, added = graph.remember(scope, entity, facts, entity_type)
    return {"stored": True, "entity": stored["name"], "facts_added": added}


def relate(graph: GraphMemoryService, scope: Scope, source: str, relation: str, target: str) -> dict[str, Any]:
    [stored] = graph.create_relations(scope, [{"source": source, "relation_type": relation, "target": target}])
    return {
        "related": True,
        "source": stored["source"],
        "relation": stored["relation_type"],
        "target": stored["target"],
    }
