"""Knowledge-graph routes of API.md (``{scope}/graph``); every route accepts ``project_id``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentmem.api.http import (
    SCOPE_PATH,
    TENANT,
    WRITE,
    PathId,
    documented,
    json_response,
    no_content,
    path_id,
    scope_from_path,
)
from agentmem.clock import parse_timestamp
from agentmem.container import get_container
from agentmem.errors import InvalidInput
from agentmem.graph import tools
from agentmem.keys import validate_id
from agentmem.models.graph import (
    AddEpisodesRequest,
    AddObservationsRequest,
    CreateEntitiesRequest,
    CreateRelationsRequest,
    InvalidateRequest,
    RelateRequest,
    RememberRequest,
    SupersedeRequest,
)
from agentmem.models.memory import MAX_TEXT_BYTES, utc_moment
from agentmem.models.responses import (
    Entities,
    EntityHistory,
    Episodes,
    GraphPage,
    NodeHits,
    Observation,
    Observations,
    ProfileCard,
    Related,
    Relation,
    Relations,
    Remembered,
    Stored,
    Subgraph,
    Superseded,
)

router = Router()

GRAPH = SCOPE_PATH + "/graph"
ProjectQuery = Annotated[str | None, Query(description="project scope; absent means global")]


def _name(raw: str) -> str:
    return validate_id(path_id(raw), "name")


def _id(raw: str) -> str:
    return validate_id(path_id(raw), "id")


def _moment(value: str | None, field: str) -> datetime | None:
    if value is None:
        return None
    try:
        moment = parse_timestamp(value)
    except ValueError:
        raise InvalidInput(
            f"{field} must be an RFC 3339 timestamp with its time zone (e.g. 2026-06-01T09:30:00Z)",
            code="invalid_timestamp",
        ) from None
    try:
        return utc_moment(moment, field)
    except ValueError as exc:
        raise InvalidInput(str(exc), code="invalid_timestamp") from None


@router.post(
    GRAPH + "/entities",
    summary="Create or update entities (upsert) with observations",
    responses=documented(200, "the entities as stored", *WRITE),
)
def create_entities(app: PathId, user: PathId, body: CreateEntitiesRequest) -> Response[Entities]:
    scope = scope_from_path(app, user, body.project_id)
    specs = [e.model_dump() for e in body.entities]
    return json_response(200, {"entities": get_container().graph.create_entities(scope, specs)})


@router.delete(
    GRAPH + "/entities/<name>",
    summary="Delete an entity with its observations and relations",
    responses=documented(204, "deleted", *WRITE, 404),
)
def delete_entity(app: PathId, user: PathId, name: PathId, project_id: ProjectQuery = None) -> Response[Any]:
    get_container().graph.delete_entity(scope_from_path(app, user, project_id), _name(name))
    return no_content()


@router.post(
    GRAPH + "/entities/<name>/observations",
    summary="Add observations to a known entity",
    responses=documented(200, "the observations added", *WRITE, 404),
)
def add_observations(app: PathId, user: PathId, name: PathId, body: AddObservationsRequest) -> Response[Observations]:
    scope = scope_from_path(app, user, body.project_id)
    added = get_container().graph.add_observations(scope, _name(name), body.observations, body.valid_from)
    return json_response(200, {"observations": added})


@router.get(
    GRAPH + "/entities/<name>/history",
    summary="Every observation and relation of an entity, past too",
    responses=documented(200, "the entity, past facts too", *TENANT, 404),
)
def history(app: PathId, user: PathId, name: PathId, project_id: ProjectQuery = None) -> Response[EntityHistory]:
    return json_response(200, get_container().graph.history(scope_from_path(app, user, project_id), _name(name)))


@router.post(
    GRAPH + "/observations/<obs_id>/invalidate",
    summary="Close an observation's valid time",
    responses=documented(200, "the observation, closed", *WRITE, 404),
)
def invalidate_observation(app: PathId, user: PathId, obs_id: PathId, body: InvalidateRequest) -> Response[Observation]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, get_container().graph.invalidate_observation(scope, _id(obs_id), body.valid_to))


@router.post(
    GRAPH + "/observations/<obs_id>/supersede",
    summary="Replace an observation atomically",
    responses=documented(200, "the old observation, closed, and the new one", *WRITE, 404),
)
def supersede_observation(app: PathId, user: PathId, obs_id: PathId, body: SupersedeRequest) -> Response[Superseded]:
    scope = scope_from_path(app, user, body.project_id)
    invalidated, created = get_container().graph.supersede_observation(scope, _id(obs_id), body.content)
    return json_response(200, {"invalidated": invalidated, "created": created})


@router.delete(
    GRAPH + "/observations/<obs_id>",
    summary="Delete an observation (rectification)",
    responses=documented(204, "deleted", *WRITE, 404),
)
def delete_observation(app: PathId, user: PathId, obs_id: PathId, project_id: ProjectQuery = None) -> Response[Any]:
    get_container().graph.delete_observation(scope_from_path(app, user, project_id), _id(obs_id))
    return no_content()


@router.post(
    GRAPH + "/relations",
    summary="Create typed relations (identical current ones are not repeated)",
    responses=documented(200, "the relations as stored", *WRITE, 404),
)
def create_relations(app: PathId, user: PathId, body: CreateRelationsRequest) -> Response[Relations]:
    scope = scope_from_path(app, user, body.project_id)
    specs = [r.model_dump() for r in body.relations]
    return json_response(200, {"relations": get_container().graph.create_relations(scope, specs)})


@router.post(
    GRAPH + "/relations/<rel_id>/invalidate",
    summary="Close a relation's valid time",
    responses=documented(200, "the relation, closed", *WRITE, 404),
)
def invalidate_relation(app: PathId, user: PathId, rel_id: PathId, body: InvalidateRequest) -> Response[Relation]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, get_container().graph.invalidate_relation(scope, _id(rel_id), body.valid_to))


@router.delete(
    GRAPH + "/relations/<rel_id>",
    summary="Delete a relation (rectification)",
    responses=documented(204, "deleted", *WRITE, 404),
)
def delete_relation(app: PathId, user: PathId, rel_id: PathId, project_id: ProjectQuery = None) -> Response[Any]:
    get_container().graph.delete_relation(scope_from_path(app, user, project_id), _id(rel_id))
    return no_content()


@router.get(
    GRAPH + "/search",
    summary="Entities matching the query words, best first",
    responses=documented(200, "matching entities, best first", *TENANT),
)
def search_nodes(
    app: PathId,
    user: PathId,
    q: Annotated[str, Query(min_length=1, max_length=MAX_TEXT_BYTES)],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    project_id: ProjectQuery = None,
) -> Response[NodeHits]:
    return json_response(200, get_container().graph.search_nodes(scope_from_path(app, user, project_id), q, limit))


@router.get(
    GRAPH + "/nodes",
    summary="The named entities and their current relations",
    responses=documented(200, "the named entities", *TENANT),
)
def open_nodes(
    app: PathId,
    user: PathId,
    name: Annotated[list[str], Query(min_length=1, max_length=100)],
    project_id: ProjectQuery = None,
) -> Response[Subgraph]:
    return json_response(200, get_container().graph.open_nodes(scope_from_path(app, user, project_id), name))


@router.get(
    GRAPH,
    summary="The whole graph: current, or as of a valid time and/or a recorded time",
    responses=documented(200, "a page of the graph", *TENANT),
)
def read_graph(
    app: PathId,
    user: PathId,
    as_of: Annotated[str | None, Query(max_length=64)] = None,
    recorded_as_of: Annotated[str | None, Query(max_length=64)] = None,
    cursor: Annotated[str | None, Query(max_length=4096, description="next_cursor of the previous page")] = None,
    project_id: ProjectQuery = None,
) -> Response[GraphPage]:
    graph = get_container().graph.read_graph(
        scope_from_path(app, user, project_id),
        as_of=_moment(as_of, "as_of"),
        recorded_as_of=_moment(recorded_as_of, "recorded_as_of"),
        cursor=cursor,
    )
    return json_response(200, graph)


@router.get(
    GRAPH + "/profile-card",
    summary="A compact summary of the newest facts, for a system prompt",
    responses=documented(200, "the card", *TENANT),
)
def profile_card(
    app: PathId,
    user: PathId,
    max_entities: Annotated[int, Query(ge=1, le=100)] = 12,
    max_observations: Annotated[int, Query(ge=1, le=50)] = 5,
    project_id: ProjectQuery = None,
) -> Response[ProfileCard]:
    scope = scope_from_path(app, user, project_id)
    return json_response(200, get_container().graph.profile_card(scope, max_entities, max_observations))


@router.post(
    GRAPH + "/episodes",
    summary="Store a session's turns as episodes (replaces the session)",
    responses=documented(200, "how many episodes were stored", *WRITE),
)
def add_episodes(app: PathId, user: PathId, body: AddEpisodesRequest) -> Response[Stored]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, {"stored": get_container().graph.add_episodes(scope, body.session_id, body.entries)})


@router.get(
    GRAPH + "/episodes",
    summary="Episodes newest first, or by token overlap with q",
    responses=documented(200, "episodes", *TENANT),
)
def list_episodes(
    app: PathId,
    user: PathId,
    session_id: Annotated[str | None, Query(max_length=1024)] = None,
    q: Annotated[str | None, Query(max_length=MAX_TEXT_BYTES)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    project_id: ProjectQuery = None,
) -> Response[Episodes]:
    episodes = get_container().graph.list_episodes(
        scope_from_path(app, user, project_id), session_id=session_id, query=q, limit=limit
    )
    return json_response(200, episodes)


@router.post(
    GRAPH + "/tools/remember",
    summary="Agent tool: remember facts about an entity",
    responses=documented(200, "the facts, stored", *WRITE),
)
def remember(app: PathId, user: PathId, body: RememberRequest) -> Response[Remembered]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, tools.remember(get_container().graph, scope, body.entity, body.facts, body.entity_type))


@router.post(
    GRAPH + "/tools/relate",
    summary="Agent tool: relate two entities",
    responses=documented(200, "the relation, stored", *WRITE),
)
def relate(app: PathId, user: PathId, body: RelateRequest) -> Response[Related]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, tools.relate(get_container().graph, scope, body.source, body.relation, body.target))
