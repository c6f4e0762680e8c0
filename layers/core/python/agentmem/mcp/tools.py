"""The MCP tools: the reference memory server's nine (same names, input schemas and result shapes) and
this service's own, mapped onto the graph and memory services; every result bounded to 1 MiB of text.

Each tool validates its arguments with a pydantic model (a failure is an ``isError`` result the model
can correct), runs one service call and returns ``(structuredContent, text)``. Where our
semantics differ from the reference on purpose, the tool's description says so (docs/mcp.md lists all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from agentmem.graph import tools as graph_tools
from agentmem.mcp.memory_tools import MEMORY_TOOLS, REVISION_TOOLS
from agentmem.mcp.results import ToolResult, fit_list, graph_result, json_result, reference_entity, reference_relation
from agentmem.mcp.tool import CUT as _CUT
from agentmem.mcp.tool import DELETE, READ, WRITE, Services, Tool, ToolArgumentsError
from agentmem.mcp.tool import Strict as _Strict
from agentmem.mcp.tool import object_schema as _object
from agentmem.mcp.tool import top_schema as _top
from agentmem.models.graph import MAX_FACTS_PER_REQUEST, EntityName, EntityType, Fact
from agentmem.models.memory import (
    MAX_ENTRIES_PER_REQUEST,
    MAX_TEXT_BYTES,
)

if TYPE_CHECKING:
    from agentmem.keys import Scope

DEFAULT_SEARCH_LIMIT = 20
MAX_SEARCH_LIMIT = 100


# -- schemas -----------------------------------------------------------------------------------------


def _entity_schema(*, closed: bool) -> dict[str, Any]:
    return _object(
        {
            "name": {"type": "string", "description": "The name of the entity"},
            "entityType": {"type": "string", "description": "The type of the entity"},
            "observations": {
                "type": "array",
                "items": {"type": "string"},
                "description": "An array of observation contents associated with the entity",
            },
        },
        ["name", "entityType", "observations"],
        closed=closed,
    )


def _relation_schema(*, closed: bool) -> dict[str, Any]:
    return _object(
        {
            "from": {"type": "string", "description": "The name of the entity where the relation starts"},
            "to": {"type": "string", "description": "The name of the entity where the relation ends"},
            "relationType": {"type": "string", "description": "The type of the relation"},
        },
        ["from", "to", "relationType"],
        closed=closed,
    )


def _entity_texts_schema(texts: str, entity_description: str, texts_description: str) -> dict[str, Any]:
    """An item of add_observations (``contents``) and delete_observations (``observations``): an entity's
    name and observation texts."""
    return _object(
        {
            "entityName": {"type": "string", "description": entity_description},
            texts: {"type": "array", "items": {"type": "string"}, "description": texts_description},
        },
        ["entityName", texts],
    )


_SUCCESS_OUT = _top(_object({"success": {"type": "boolean"}, "message": {"type": "string"}}, ["success", "message"]))
_SUCCESS_OUT["additionalProperties"] = False
_GRAPH_OUT = _top(
    _object(
        {
            "entities": {"type": "array", "items": _entity_schema(closed=True)},
            "relations": {"type": "array", "items": _relation_schema(closed=True)},
            **_CUT,
        },
        ["entities", "relations"],
        closed=True,
    )
)
_LIMIT = {
    "type": "integer",
    "minimum": 1,
    "description": "at most this many entities (an addition of this server; the result says when it was cut)",
}

# -- argument models (the reference's field names; our limits) -------------------------------------


class _Args(BaseModel):
    """Unknown keys are ignored, as the reference server does."""

    model_config = ConfigDict(extra="ignore")


class _EntityArg(_Args):
    name: EntityName
    entityType: EntityType
    observations: list[Fact] = Field(max_length=MAX_FACTS_PER_REQUEST)


class _CreateEntities(_Args):
    entities: list[_EntityArg] = Field(max_length=MAX_ENTRIES_PER_REQUEST)


class _RelationArg(_Args):
    from_: EntityName = Field(alias="from")
    to: EntityName
    relationType: EntityType


class _Relations(_Args):
    relations: list[_RelationArg] = Field(max_length=MAX_ENTRIES_PER_REQUEST)


class _ObservationArg(_Args):
    entityName: EntityName
    contents: list[Fact] = Field(max_length=MAX_FACTS_PER_REQUEST)


class _AddObservations(_Args):
    observations: list[_ObservationArg] = Field(max_length=MAX_ENTRIES_PER_REQUEST)


class _DeleteEntities(_Args):
    entityNames: list[EntityName] = Field(max_length=MAX_ENTRIES_PER_REQUEST)


class _DeletionArg(_Args):
    entityName: EntityName
    observations: list[StrictStr] = Field(max_length=MAX_FACTS_PER_REQUEST)


class _DeleteObservations(_Args):
    deletions: list[_DeletionArg] = Field(max_length=MAX_ENTRIES_PER_REQUEST)


class _ReadGraph(_Args):
    limit: int | None = Field(default=None, ge=1)


class _SearchNodes(_Args):
    query: StrictStr = Field(max_length=MAX_TEXT_BYTES)
    limit: int = Field(default=DEFAULT_SEARCH_LIMIT, ge=1, le=MAX_SEARCH_LIMIT)


class _OpenNodes(_Args):
    names: list[EntityName] = Field(max_length=MAX_ENTRIES_PER_REQUEST)


class _ProfileCard(_Strict):
    max_entities: int = Field(default=12, ge=1, le=100)
    max_observations: int = Field(default=5, ge=1, le=50)


class _Remember(_Strict):
    entity: EntityName
    entity_type: EntityType | None = None
    facts: list[Fact] = Field(min_length=1, max_length=MAX_FACTS_PER_REQUEST)


class _Relate(_Strict):
    source: EntityName
    relation: EntityType
    target: EntityName


class _EntityHistory(_Strict):
    name: EntityName


def _success(message: str) -> ToolResult:
    return ToolResult({"success": True, "message": message}, message)


# -- the reference tools ---------------------------------------------------------------------------


def _create_entities(services: Services, scope: Scope, args: _CreateEntities) -> ToolResult:
    if not args.entities:
        return json_result({"entities": []})
    specs = [{"name": e.name, "entity_type": e.entityType, "observations": e.observations} for e in args.entities]
    stored = services.graph.create_entities(scope, specs)
    payload = fit_list({"entities": [reference_entity(e) for e in stored]}, "entities")
    return json_result(payload)


def _create_relations(services: Services, scope: Scope, args: _Relations) -> ToolResult:
    if not args.relations:
        return json_result({"relations": []})
    specs = [{"source": r.from_, "relation_type": r.relationType, "target": r.to} for r in args.relations]
    stored = services.graph.create_relations(scope, specs)
    payload = fit_list({"relations": [reference_relation(r) for r in stored]}, "relations")
    return json_result(payload)


def _add_observations(services: Services, scope: Scope, args: _AddObservations) -> ToolResult:
    names = [o.entityName for o in args.observations]
    known = services.graph.known_entities(scope, names) if names else set()
    missing = [n for n in dict.fromkeys(names) if n not in known]
    if missing:  # checked before anything is written, so a bad call changes nothing
        raise ToolArgumentsError(f"Entity with name {missing[0]} not found")
    results = []
    for item in args.observations:
        added = services.graph.add_observations(scope, item.entityName, item.contents) if item.contents else []
        results.append({"entityName": item.entityName, "addedObservations": [o["content"] for o in added]})
    payload = fit_list({"results": results}, "results")
    return json_result(payload)


def _delete_entities(services: Services, scope: Scope, args: _DeleteEntities) -> ToolResult:
    if args.entityNames:
        services.graph.delete_entities(scope, args.entityNames)
    return _success("Entities deleted successfully")


def _delete_observations(services: Services, scope: Scope, args: _DeleteObservations) -> ToolResult:
    """Invalidates the matching current facts of this scope: they leave the graph and stay in
    ``entity_history``."""
    graph = services.graph
    for deletion in args.deletions:
        for obs_id in graph.current_observation_ids(scope, deletion.entityName, deletion.observations):
            graph.invalidate_observation(scope, obs_id)
    return _success("Observations deleted successfully")


def _delete_relations(services: Services, scope: Scope, args: _Relations) -> ToolResult:
    """Invalidates the matching current relations of this scope: they leave the graph and stay in
    ``entity_history``."""
    graph = services.graph
    for rel_id in graph.current_relation_ids(scope, [(r.from_, r.relationType, r.to) for r in args.relations]):
        graph.invalidate_relation(scope, rel_id)
    return _success("Relations deleted successfully")


def _read_graph(services: Services, scope: Scope, args: _ReadGraph) -> ToolResult:
    graph = services.graph.read_graph(scope)
    entities = graph["entities"]
    if args.limit is not None and len(entities) > args.limit:
        return graph_result(entities[: args.limit], graph["relations"], cut_from=len(entities))
    return graph_result(entities, graph["relations"])


def _search_nodes(services: Services, scope: Scope, args: _SearchNodes) -> ToolResult:
    page: Any = services.graph.search_nodes(scope, args.query, args.limit + 1)
    # A list of hits, or (where the service fills a byte budget) a page holding them under "results".
    found: list[dict[str, Any]] = page["results"] if isinstance(page, dict) else page
    cut = len(found) > args.limit
    found = found[: args.limit]
    relations = {r["id"]: r for hit in found for r in hit["relations"]}
    ordered = sorted(relations.values(), key=lambda r: (r["recorded_at"], r["id"]))
    entities = [hit["entity"] for hit in found]
    result = graph_result(entities, ordered, cut_from=len(entities) + 1 if cut else None)
    if cut and "truncated" in result.structured:
        result.structured["message"] = (
            f"showing the best {len(result.structured['entities'])} matches; more entities match: "
            "pass a larger limit (at most 100) or a more specific query"
        )
        return json_result(result.structured)
    return result


def _open_nodes(services: Services, scope: Scope, args: _OpenNodes) -> ToolResult:
    if not args.names:
        return graph_result([], [])
    opened = services.graph.open_nodes(scope, args.names)
    return graph_result(opened["entities"], opened["relations"])


# -- this service's own tools ----------------------------------------------------------------------


def _profile_card(services: Services, scope: Scope, args: _ProfileCard) -> ToolResult:
    card = services.graph.profile_card(scope, args.max_entities, args.max_observations)
    return json_result(fit_list(card, "entities", "relations"))


def _remember(services: Services, scope: Scope, args: _Remember) -> ToolResult:
    stored = graph_tools.remember(services.graph, scope, args.entity, args.facts, args.entity_type)
    return json_result(stored)


def _relate(services: Services, scope: Scope, args: _Relate) -> ToolResult:
    return json_result(graph_tools.relate(services.graph, scope, args.source, args.relation, args.target))


def _entity_history(services: Services, scope: Scope, args: _EntityHistory) -> ToolResult:
    history = services.graph.history(scope, args.name)
    history["observations"] = history["observations"][::-1]  # newest first, so a cut keeps the newest
    history["relations"] = history["relations"][::-1]
    return json_result(fit_list(history, "observations", "relations"))


_TIMES = {"type": ["string", "null"]}
_OBSERVATION_OUT = _object(
    {"id": {"type": "string"}, "content": {"type": "string"}, "valid_from": {"type": "string"}, "valid_to": _TIMES,
     "recorded_at": {"type": "string"}, "expired_at": _TIMES},
    ["id", "content"],
)  # fmt: skip
_ENTITY_OUT = _object(
    {
        "name": {"type": "string"},
        "entity_type": {"type": "string"},
        "updated_at": {"type": "string"},
        "observations": {"type": "array", "items": _OBSERVATION_OUT},
    },
    ["name", "entity_type", "observations"],
)
_RELATION_OUT = _object(
    {"id": {"type": "string"}, "source": {"type": "string"}, "relation_type": {"type": "string"},
     "target": {"type": "string"}, "valid_from": {"type": "string"}, "valid_to": _TIMES,
     "recorded_at": {"type": "string"}, "expired_at": _TIMES},
    ["id", "source", "relation_type", "target"],
)  # fmt: skip


def _strip(schema: dict[str, Any]) -> dict[str, Any]:
    """A REST tool schema as an MCP input schema (the scope comes from the endpoint, never the model)."""
    return _top({k: v for k, v in schema.items() if k != "title"})


_UPSERT_NOTE = (
    " Unlike the reference memory server, an entity that already exists is updated (upsert): the given "
    "entityType replaces its type and new observations are added; the result lists every entity given, as stored."
)
_HISTORY_NOTE = " The removed facts leave the graph but are kept in entity_history (the graph is bitemporal)."

REFERENCE_TOOLS: list[Tool] = [
    Tool(
        "create_entities",
        "Create Entities",
        "Create multiple new entities in the knowledge graph." + _UPSERT_NOTE,
        _top(_object({"entities": {"type": "array", "items": _entity_schema(closed=False)}}, ["entities"])),
        _top(
            _object(
                {"entities": {"type": "array", "items": _entity_schema(closed=True)}, **_CUT}, ["entities"], closed=True
            )
        ),
        WRITE,
        _create_entities,
        _CreateEntities,
    ),
    Tool(
        "create_relations",
        "Create Relations",
        "Create multiple new relations between entities in the knowledge graph. Relations should be in active "
        "voice. An endpoint that does not exist yet is created (type 'general'); an identical current relation "
        "is returned, not stored twice.",
        _top(_object({"relations": {"type": "array", "items": _relation_schema(closed=False)}}, ["relations"])),
        _top(
            _object(
                {"relations": {"type": "array", "items": _relation_schema(closed=True)}, **_CUT},
                ["relations"],
                closed=True,
            )
        ),
        WRITE,
        _create_relations,
        _Relations,
    ),
    Tool(
        "add_observations",
        "Add Observations",
        "Add new observations to existing entities in the knowledge graph",
        _top(
            _object(
                {
                    "observations": {
                        "type": "array",
                        "items": _entity_texts_schema(
                            "contents",
                            "The name of the entity to add the observations to",
                            "An array of observation contents to add",
                        ),
                    }
                },
                ["observations"],
            )
        ),
        _top(
            _object(
                {
                    "results": {
                        "type": "array",
                        "items": _object(
                            {
                                "entityName": {"type": "string"},
                                "addedObservations": {"type": "array", "items": {"type": "string"}},
                            },
                            ["entityName", "addedObservations"],
                            closed=True,
                        ),
                    },
                    **_CUT,
                },
                ["results"],
                closed=True,
            )
        ),
        WRITE,
        _add_observations,
        _AddObservations,
    ),
    Tool(
        "delete_entities",
        "Delete Entities",
        "Delete multiple entities and their associated relations from the knowledge graph",
        _top(
            _object(
                {
                    "entityNames": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "An array of entity names to delete",
                    }
                },
                ["entityNames"],
            )
        ),
        _SUCCESS_OUT,
        DELETE,
        _delete_entities,
        _DeleteEntities,
    ),
    Tool(
        "delete_observations",
        "Delete Observations",
        "Delete specific observations from entities in the knowledge graph." + _HISTORY_NOTE,
        _top(
            _object(
                {
                    "deletions": {
                        "type": "array",
                        "items": _entity_texts_schema(
                            "observations",
                            "The name of the entity containing the observations",
                            "An array of observations to delete",
                        ),
                    }
                },
                ["deletions"],
            )
        ),
        _SUCCESS_OUT,
        DELETE,
        _delete_observations,
        _DeleteObservations,
    ),
    Tool(
        "delete_relations",
        "Delete Relations",
        "Delete multiple relations from the knowledge graph." + _HISTORY_NOTE,
        _top(
            _object(
                {
                    "relations": {
                        "type": "array",
                        "items": _relation_schema(closed=False),
                        "description": "An array of relations to delete",
                    }
                },
                ["relations"],
            )
        ),
        _SUCCESS_OUT,
        DELETE,
        _delete_relations,
        _Relations,
    ),
    Tool(
        "read_graph",
        "Read Graph",
        "Read the entire knowledge graph (entities by name; at most 1 MiB, or `limit` entities: the result "
        "says when it was cut)",
        _top(_object({"limit": _LIMIT})),
        _GRAPH_OUT,
        READ,
        _read_graph,
        _ReadGraph,
    ),
    Tool(
        "search_nodes",
        "Search Nodes",
        "Search for nodes in the knowledge graph based on a query. Matches whole words (3+ characters) of names, "
        "types and observations, best match first; at most `limit` entities (default 20), and the result says "
        "when more matched.",
        _top(
            _object(
                {
                    "query": {
                        "type": "string",
                        "description": "The search query to match against entity names, types, and observation content",
                    },
                    "limit": {**_LIMIT, "maximum": MAX_SEARCH_LIMIT, "default": DEFAULT_SEARCH_LIMIT},
                },
                ["query"],
            )
        ),
        _GRAPH_OUT,
        READ,
        _search_nodes,
        _SearchNodes,
    ),
    Tool(
        "open_nodes",
        "Open Nodes",
        "Open specific nodes in the knowledge graph by their names",
        _top(
            _object(
                {
                    "names": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "An array of entity names to retrieve",
                    }
                },
                ["names"],
            )
        ),
        _GRAPH_OUT,
        READ,
        _open_nodes,
        _OpenNodes,
    ),
]

OWN_TOOLS: list[Tool] = [
    *MEMORY_TOOLS,
    Tool(
        "profile_card",
        "Profile Card",
        "A compact summary of the newest facts known about the user, for a system prompt.",
        _top(
            _object(
                {
                    "max_entities": {"type": "integer", "minimum": 1, "maximum": 100, "default": 12},
                    "max_observations": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
                },
                closed=True,
            )
        ),
        _top(
            _object(
                {
                    "text": {"type": "string"},
                    "entities": {"type": "array", "items": _ENTITY_OUT},
                    "relations": {"type": "array", "items": _RELATION_OUT},
                    **_CUT,
                },
                ["text"],
            )
        ),
        READ,
        _profile_card,
        _ProfileCard,
    ),
    Tool(
        "remember",
        "Remember",
        graph_tools.REMEMBER_SCHEMA["description"],
        _strip(graph_tools.REMEMBER_SCHEMA["parameters"]),
        _top(
            _object(
                {"stored": {"type": "boolean"}, "entity": {"type": "string"}, "facts_added": {"type": "integer"}},
                ["stored", "entity", "facts_added"],
            )
        ),
        {**WRITE, "idempotentHint": True},
        _remember,
        _Remember,
    ),
    Tool(
        "relate",
        "Relate",
        graph_tools.RELATE_SCHEMA["description"],
        _strip(graph_tools.RELATE_SCHEMA["parameters"]),
        _top(
            _object(
                {
                    "related": {"type": "boolean"},
                    "source": {"type": "string"},
                    "relation": {"type": "string"},
                    "target": {"type": "string"},
                },
                ["related", "source", "relation", "target"],
            )
        ),
        {**WRITE, "idempotentHint": True},
        _relate,
        _Relate,
    ),
    Tool(
        "entity_history",
        "Entity History",
        "Everything ever known about one entity: every observation and relation, current and past, with "
        "when it was true (valid_from/valid_to) and when it was recorded and retired (recorded_at/expired_at).",
        _top(_object({"name": {"type": "string", "minLength": 1, "description": "the entity"}}, ["name"], closed=True)),
        _top(
            _object(
                {**_ENTITY_OUT["properties"], "relations": {"type": "array", "items": _RELATION_OUT}, **_CUT},
                ["name", "entity_type", "observations"],
            )
        ),
        READ,
        _entity_history,
        _EntityHistory,
    ),
]

OWN_TOOLS += REVISION_TOOLS

TOOLS: dict[str, Tool] = {tool.name: tool for tool in REFERENCE_TOOLS + OWN_TOOLS}
