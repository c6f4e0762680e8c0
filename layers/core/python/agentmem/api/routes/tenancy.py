"""Tenant routes: the metered usage of the caller's own app."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentmem import costs
from agentmem.api.http import TENANT, PathId, documented, json_response, path_id
from agentmem.container import get_container
from agentmem.keys import validate_id
from agentmem.models.responses import Usage
from agentmem.tenancy.metering import read_usage

router = Router()


@router.get(
    "/v1/apps/<app>/usage",
    summary="Requests, items stored, embeddings, request units and the estimated cost of this app per UTC day",
    responses=documented(200, "usage per day, newest first, each with its cost estimated from list prices", *TENANT),
)
def usage(app: PathId, days: Annotated[int, Query(ge=1, le=366)] = 31) -> Response[Usage]:
    tenant = validate_id(path_id(app), "app")
    container = get_container()
    history = read_usage(container.table, tenant, days=days)
    settings = container.settings
    model = costs.chat_model_prices(settings.model, settings.model_id)
    days_json = [day.to_json(model) for day in history]
    return json_response(
        200, {"app": tenant, "days": days_json, "cost_basis": costs.basis(settings.model, settings.model_id)}
    )
