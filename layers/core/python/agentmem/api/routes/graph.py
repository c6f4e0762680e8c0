"""Knowledge-graph routes of API.md (``{scope}/graph``); every route accepts ``project_id``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentmem.api.http import SCOPE_PATH, json_response, no_content, path_id, scope_from_path
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
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{field} must be an RFC 3339 timestamp", code="invalid_timestamp") from None
    try:
        return utc_moment(moment, field)
    except ValueError as exc:
        raise InvalidInput(str(exc), code="invalid_timestamp") from None


@router.post(GRAPH + "/entities", summary="Create or update entities (upsert) with observations")
def create_entities(app: str, user: str, body: CreateEntitiesRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    specs = [e.model_dump() for e in body.entities]
    return json_response(200, {"entities": get_container().graph.create_entities(scope, specs)})


@router.delete(GRAPH + "/entities/<name>", summary="Delete an entity with its observations and relations")
def delete_entity(app: str, user: str, name: str, project_id: ProjectQuery = None) -> Response[Any]:
    get_container().graph.delete_entity(scope_from_path(app, user, project_id), _name(name))
    return no_content()


@router.post(GRAPH + "/entities/<name>/observations", summary="Add observations to a known entity")
def add_observations(app: str, user: str, name: str, body: AddObservationsRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    added = get_container().graph.add_observations(scope, _name(name), body.observations, body.valid_from)
    return json_response(200, {"observations": added})


@router.get(GRAPH + "/entities/<name>/history", summary="Every observation and relation of an entity, past too")
def history(app: str, user: str, name: str, project_id: ProjectQuery = None) -> Response[Any]:
    return json_response(200, get_container().graph.history(scope_from_path(app, user, project_id), _name(name)))


@router.post(GRAPH + "/observations/<obs_id>/invalidate", summary="Close an observation's valid time")
def invalidate_observation(app: str, user: str, obs_id: str, body: InvalidateRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, get_container().graph.invalidate_observation(scope, _id(obs_id), body.valid_to))


@router.post(GRAPH + "/observations/<obs_id>/supersede", summary="Replace an observation atomically")
def supersede_observation(app: str, user: str, obs_id: str, body: SupersedeRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    invalidated, created = get_container().graph.supersede_observation(scope, _id(obs_id), body.content)
    return json_response(200, {"invalidated": invalidated, "created": created})


@router.delete(GRAPH + "/observations/<obs_id>", summary="Delete an observation (rectification)")
def delete_observation(app: str, user: str, obs_id: str, project_id: ProjectQuery = None) -> Response[Any]:
    get_container().graph.delete_observation(scope_from_path(app, user, project_id), _id(obs_id))
    return no_content()


@router.post(GRAPH + "/relations", summary="Create typed relations (identical current ones are not repeated)")
def create_relations(app: str, user: str, body: CreateRelationsRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    specs = [r.model_dump() for r in body.relations]
    return json_response(200, {"relations": get_container().graph.create_relations(scope, specs)})


@router.post(GRAPH + "/relations/<rel_id>/invalidate", summary="Close a relation's valid time")
def invalidate_relation(app: str, user: str, rel_id: str, body: InvalidateRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, get_container().graph.invalidate_relation(scope, _id(rel_id), body.valid_to))


@router.delete(GRAPH + "/relations/<rel_id>", summary="Delete a relation (rectification)")
def delete_relation(app: str, user: str, rel_id: str, project_id: ProjectQuery = None) -> Response[Any]:
    get_container().graph.delete_relation(scope_from_path(app, user, project_id), _id(rel_id))
    return no_content()


@router.get(GRAPH + "/search", summary="Entities matching the query words, best first")
def search_nodes(
    app: str,
    user: str,
    q: Annotated[str, Query(min_length=1, max_length=MAX_TEXT_BYTES)],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    project_id: ProjectQuery = None,
) -> Response[Any]:
    results = get_container().graph.search_nodes(scope_from_path(app, user, project_id), q, limit)
    return json_response(200, {"results": results})


@router.get(GRAPH + "/nodes", summary="The named entities and their current relations")
def open_nodes(
    app: str,
    user: str,
    name: Annotated[list[str], Query(min_length=1, max_length=100)],
    project_id: ProjectQuery = None,
) -> Response[Any]:
    return json_response(200, get_container().graph.open_nodes(scope_from_path(app, user, project_id), name))


@router.get(GRAPH, summary="The whole graph: current, or as of a valid time and/or a recorded time")
def read_graph(
    app: str,
    user: str,
    as_of: Annotated[str | None, Query(max_length=64)] = None,
    recorded_as_of: Annotated[str | None, Query(max_length=64)] = None,
    project_id: ProjectQuery = None,
) -> Response[Any]:
    graph = get_container().graph.read_graph(
        scope_from_path(app, user, project_id),
        as_of=_moment(as_of, "as_of"),
        recorded_as_of=_moment(recorded_as_of, "recorded_as_of"),
    )
    return json_response(200, graph)


@router.get(GRAPH + "/profile-card", summary="A compact summary of the newest facts, for a system prompt")
def profile_card(
    app: str,
    user: str,
    max_entities: Annotated[int, Query(ge=1, le=100)] = 12,
    max_observations: Annotated[int, Query(ge=1, le=50)] = 5,
    project_id: ProjectQuery = None,
) -> Response[Any]:
    scope = scope_from_path(app, user, project_id)
    return json_response(200, get_container().graph.profile_card(scope, max_entities, max_observations))


@router.post(GRAPH + "/episodes", summary="Store a session's turns as episodes (replaces the session)")
def add_episodes(app: str, user: str, body: AddEpisodesRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, {"stored": get_container().graph.add_episodes(scope, body.session_id, body.entries)})


@router.get(GRAPH + "/episodes", summary="Episodes newest first, or by token overlap with q")
def list_episodes(
    app: str,
    user: str,
    session_id: Annotated[str | None, Query(max_length=1024)] = None,
    q: Annotated[str | None, Query(max_length=MAX_TEXT_BYTES)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    project_id: ProjectQuery = None,
) -> Response[Any]:
    episodes = get_container().graph.list_episodes(
        scope_from_path(app, user, project_id), session_id=session_id, query=q, limit=limit
    )
    return json_response(200, {"episodes": episodes})


@router.post(GRAPH + "/tools/remember", summary="Agent tool: remember facts about an entity")
def remember(app: str, user: str, body: RememberRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, tools.remember(get_container().graph, scope, body.entity, body.facts, body.entity_type))


@router.post(GRAPH + "/tools/relate", summary="Agent tool: relate two entities")
def relate(app: str, user: str, body: RelateRequest) -> Response[Any]:
    scope = scope_from_path(app, user, body.project_id)
    return json_response(200, tools.relate(get_container().graph, scope, body.source, body.relation, body.target))
