"""The store route: a batch of LangGraph store operations for the users of one app, one round trip."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from agentmem.api.http import WRITE, PathId, documented, json_response, path_id
from agentmem.container import get_container
from agentmem.keys import validate_id
from agentmem.models.store import StoreBatchRequest, StoreBatchResults

router = Router()


@router.post(
    "/v1/apps/<app>/store/batch",
    summary="Get, put, delete, search and list store items by namespace and key (LangGraph's BaseStore)",
    responses=documented(200, "one result per operation, in order", *WRITE),
)
def store_batch(app: PathId, body: StoreBatchRequest) -> Response[StoreBatchResults]:
    tenant = validate_id(path_id(app), "app")
    return json_response(200, get_container().store.batch(tenant, body.ops))
