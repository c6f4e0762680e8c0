"""Memory entry routes of API.md (``{scope}/memories``, ``{scope}/sessions``, ``{scope}/projects``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

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
    served_methods,
    user_from_path,
)
from agentmem.container import get_container
from agentmem.errors import MethodNotAllowed
from agentmem.keys import validate_id
from agentmem.memory import filters
from agentmem.models.memory import (
    AddEntryRequest,
    DeleteByQueryRequest,
    ExtractSessionRequest,
    PutSessionRequest,
    QueryRequest,
    SearchRequest,
    UpdateEntryRequest,
)
from agentmem.models.responses import (
    Deleted,
    Entry,
    EntryHistory,
    EntryPage,
    ExtractionQueued,
    SearchResults,
    SessionStored,
)
from agentmem.observability import SEARCHES_DEGRADED, MetricUnit, metrics

if TYPE_CHECKING:
    from agentmem.memory import service

router = Router()

ProjectQuery = Annotated[str | None, Query(description="project scope; absent means global")]


@router.put(
    SCOPE_PATH + "/sessions/<session>/memories",
    summary="Ingest a finished session (replaces it)",
    responses=documented(200, "the session's entries, stored", *WRITE),
)
def put_session(app: PathId, user: PathId, session: PathId, body: PutSessionRequest) -> Response[SessionStored]:
    scope = scope_from_path(app, user, body.project_id)
    session_id = validate_id(path_id(session), "session_id")
    result = get_container().memory.add_session(scope, session_id, body.entries, ttl_seconds=body.ttl_seconds)
    metrics.add_metric(name="MemoriesStored", unit=MetricUnit.Count, value=result.stored)
    payload: dict[str, Any] = {"session_id": result.session_id, "stored": result.stored, "skipped": result.skipped}
    if result.indexing:
        payload["indexing"] = result.indexing
    return json_response(200, payload)


@router.post(SCOPE_PATH + "/memories", summary="Store one memory entry", responses=documented(201, "stored", *WRITE))
def add_entry(app: PathId, user: PathId, body: AddEntryRequest) -> Response[Entry]:
    scope = scope_from_path(app, user, body.project_id)
    stored = get_container().memory.add_entry(
        scope, body.entry, session_id=body.session_id, ttl_seconds=body.ttl_seconds
    )
    metrics.add_metric(name="MemoriesStored", unit=MetricUnit.Count, value=1)
    return json_response(201, stored.to_json())


@router.post(
    SCOPE_PATH + "/memories/search", summary="Search memories, best first", responses=documented(200, "hits", *TENANT)
)
def search(app: PathId, user: PathId, body: SearchRequest) -> Response[SearchResults]:
    scope = scope_from_path(app, user, body.project_id)
    result = get_container().memory.search(
        scope,
        body.query,
        top_k=body.top_k,
        min_score=body.min_score,
        mode=body.mode,
        where=filters.parse(body.filter),
    )
    metrics.add_metric(name="Searches", unit=MetricUnit.Count, value=1)
    if result.degraded:
        metrics.add_metric(name=SEARCHES_DEGRADED, unit=MetricUnit.Count, value=1)
    return json_response(200, {**result.to_json(), "truncated": result.truncated})


@router.get(
    SCOPE_PATH + "/memories", summary="List memories, newest first", responses=documented(200, "a page", *TENANT)
)
def list_recent(
    app: PathId,
    user: PathId,
    project_id: ProjectQuery = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=128)] = None,
) -> Response[EntryPage]:
    scope = scope_from_path(app, user, project_id)
    return _entry_page(get_container().memory.list_recent(scope, limit=limit, cursor=cursor))


@router.post(
    SCOPE_PATH + "/memories/query",
    summary="The memories matching a filter, newest first",
    responses=documented(200, "a page", *TENANT),
)
def query(app: PathId, user: PathId, body: QueryRequest) -> Response[EntryPage]:
    scope = scope_from_path(app, user, body.project_id)
    return _entry_page(
        get_container().memory.query(scope, filters.parse(body.filter), limit=body.limit, cursor=body.cursor)
    )


def _entry_page(page: service.EntryPage) -> Response[EntryPage]:
    entries = [e.to_json() for e in page.entries]
    return json_response(200, {"entries": entries, "next_cursor": page.next_cursor, "truncated": page.truncated})


@router.get(
    SCOPE_PATH + "/memories/<entry_id>",
    summary="Read one memory entry",
    responses=documented(200, "the entry", *TENANT, 404),
)
def get_entry(app: PathId, user: PathId, entry_id: PathId) -> Response[Entry]:
    _refuse_named_routes()
    stored = get_container().memory.get_entry(user_from_path(app, user), path_id(entry_id))
    return json_response(200, stored.to_json())


@router.patch(
    SCOPE_PATH + "/memories/<entry_id>",
    summary="Correct one memory entry (same id; the version it replaces stays in its history)",
    responses=documented(200, "the entry as stored now", *WRITE, 404),
)
def update_entry(app: PathId, user: PathId, entry_id: PathId, body: UpdateEntryRequest) -> Response[Entry]:
    _refuse_named_routes()
    changes: dict[str, Any] = {"content": body.content, "revision": body.revision, "project_id": body.project_id}
    if "metadata" in body.model_fields_set:
        changes["metadata"] = body.metadata
    stored = get_container().memory.update_entry(user_from_path(app, user), path_id(entry_id), **changes)
    return json_response(200, stored.to_json())


@router.get(
    SCOPE_PATH + "/memories/<entry_id>/history",
    summary="The versions of one memory entry, oldest first",
    responses=documented(200, "its versions", *TENANT, 404),
)
def entry_history(
    app: PathId, user: PathId, entry_id: PathId, project_id: ProjectQuery = None
) -> Response[EntryHistory]:
    scope = scope_from_path(app, user, project_id)
    history = get_container().memory.entry_history(scope.user_ref, path_id(entry_id), scope.project_id)
    return json_response(200, history)


@router.delete(
    SCOPE_PATH + "/memories/<entry_id>",
    summary="Delete one memory entry",
    responses=documented(204, "deleted", *WRITE, 404),
)
def delete_entry(app: PathId, user: PathId, entry_id: PathId) -> Response[Any]:
    _refuse_named_routes()
    get_container().memory.delete_entry(user_from_path(app, user), path_id(entry_id))
    return no_content()


@router.post(
    SCOPE_PATH + "/memories/delete",
    summary="Delete the entries holding every query word and matching the filter",
    responses=documented(200, "how many were deleted", *WRITE),
)
def delete_entries(app: PathId, user: PathId, body: DeleteByQueryRequest) -> Response[Deleted]:
    scope = scope_from_path(app, user, body.project_id)
    deleted = get_container().memory.delete_entries(scope, body.query, filters.parse(body.filter))
    return json_response(200, {"deleted": deleted})


@router.delete(
    SCOPE_PATH + "/sessions/<session>",
    summary="Delete a session's entries in one scope",
    responses=documented(200, "how many were deleted", *WRITE),
)
def delete_session(app: PathId, user: PathId, session: PathId, project_id: ProjectQuery = None) -> Response[Deleted]:
    scope = scope_from_path(app, user, project_id)
    deleted = get_container().memory.delete_session(scope, validate_id(path_id(session), "session_id"))
    return json_response(200, {"deleted": deleted})


@router.post(
    SCOPE_PATH + "/sessions/<session>/extract",
    summary="Learn from a session now: extract what its messages not yet learnt from hold (docs/extraction.md)",
    responses=documented(202, "queued, or off when the app learns nothing", *WRITE),
)
def extract_session(
    app: PathId, user: PathId, session: PathId, body: ExtractSessionRequest
) -> Response[ExtractionQueued]:
    scope = scope_from_path(app, user, body.project_id)
    session_id = validate_id(path_id(session), "session_id")
    container = get_container()
    container.memory.ensure_writable(scope.user_ref)
    queued = container.model is not None and container.extraction.request(scope, session_id)
    if queued and container.learns_locally:
        container.local_extraction.notify(scope.partition, session_id)
    return json_response(202, {"session_id": session_id, "status": "queued" if queued else "off"})


@router.delete(
    SCOPE_PATH + "/projects/<project>",
    summary="Delete a project and everything in it",
    responses=documented(200, "how many entries were deleted", *WRITE),
)
def delete_project(app: PathId, user: PathId, project: PathId) -> Response[Deleted]:
    deleted = get_container().memory.delete_project(user_from_path(app, user), path_id(project))
    return json_response(200, {"deleted": deleted})


def _refuse_named_routes() -> None:
    """``GET .../memories/search`` is the search route by the wrong method, not an entry named "search"."""
    named = served_methods(router.api_resolver, router.current_event.path, named=True)
    if named:
        raise MethodNotAllowed(named)
