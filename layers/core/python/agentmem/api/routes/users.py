"""User-wide routes of API.md: erasure (GDPR, ``DELETE {scope}`` and its status), ``GET {scope}/export`` and
``GET {scope}/projects``; and the app's users, ``GET /v1/apps/{app}/users``."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentmem.api.http import SCOPE_PATH, TENANT, WRITE, PathId, documented, json_response, path_id, user_from_path
from agentmem.app_users import list_users
from agentmem.container import get_container
from agentmem.deletion.runners import start_erasure
from agentmem.keys import validate_id
from agentmem.models.responses import AppUsers, DeletionStarted, DeletionStatus, ExportPage, Projects
from agentmem.users import list_projects

router = Router()


@router.delete(
    SCOPE_PATH,
    summary="Erase everything held for the user (GDPR); runs in the background",
    responses=documented(202, "the erasure, started or already running", *WRITE),
)
def delete_user(app: PathId, user: PathId) -> Response[DeletionStarted]:
    container = get_container()
    started = start_erasure(container.deletion, container.deletion_runner, user_from_path(app, user))
    return json_response(202, {"deletion_id": started.deletion_id, "status": started.status})


@router.get(
    SCOPE_PATH + "/deletions/<deletion_id>",
    summary="Status and counts of a user erasure",
    responses=documented(200, "the erasure's status and counts", *TENANT, 404),
)
def deletion_status(app: PathId, user: PathId, deletion_id: PathId) -> Response[DeletionStatus]:
    ref = user_from_path(app, user)
    body = get_container().deletion.status(ref, validate_id(path_id(deletion_id), "deletion_id"))
    return json_response(200, body)


@router.get(
    SCOPE_PATH + "/export",
    summary="Everything held for the user in every project, page by page",
    responses=documented(200, "a page of everything held for the user", *TENANT),
)
def export(
    app: PathId,
    user: PathId,
    cursor: Annotated[str | None, Query(max_length=4096, description="next_cursor of the previous page")] = None,
) -> Response[ExportPage]:
    page = get_container().deletion.export(user_from_path(app, user), cursor)
    return json_response(200, page)


@router.get(
    SCOPE_PATH + "/projects",
    summary="The projects the user has written to, page by page (a console's project selector)",
    responses=documented(200, "a page of project ids", *TENANT),
)
def projects(
    app: PathId,
    user: PathId,
    cursor: Annotated[str | None, Query(max_length=1024, description="next_cursor of the previous page")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response[Projects]:
    after = validate_id(cursor, "cursor") if cursor is not None else None
    page, next_cursor = list_projects(get_container().table, user_from_path(app, user), after=after, limit=limit)
    return json_response(200, {"projects": page, "next_cursor": next_cursor})


@router.get(
    "/v1/apps/<app>/users",
    summary="The app's users, page by page: memory entries held and the last write (none being erased)",
    responses=documented(200, "a page of the app's users", *TENANT),
)
def app_users(
    app: PathId,
    cursor: Annotated[str | None, Query(max_length=1024, description="next_cursor of the previous page")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response[AppUsers]:
    name = validate_id(path_id(app), "app")
    page, next_cursor = list_users(get_container().table, name, limit=limit, cursor=cursor)
    return json_response(200, {"users": [user.to_json() for user in page], "next_cursor": next_cursor})
