"""Service routes: health and capabilities."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from agentmem.api.http import JSON, documented, json_response
from agentmem.container import get_container
from agentmem.extraction import model_state
from agentmem.models.responses import Capabilities, Health
from agentmem.search.relevance import RELEVANCE_THRESHOLD

router = Router()
_HEALTH: dict[int, OpenAPIResponse] = {
    **documented(200, "every dependency is ok or degraded"),
    503: {"description": "the table is unreachable", "content": {JSON: {"model": Health}}},
}


@router.get("/v1/health", summary="The stores this service depends on, each ok or failing", responses=_HEALTH)
def health() -> Response[Health]:
    container = get_container()
    checks = container.memory.health()
    if checks.get("table") != "ok":
        return json_response(503, {"status": "failing", "checks": checks})
    if container.model is not None:  # the extraction model: failing while its last call failed
        checks["model"] = model_state.health(container.table)
    status = "ok" if all(v == "ok" for v in checks.values()) else "degraded"
    return json_response(200, {"status": status, "checks": checks})


@router.get(
    "/v1/capabilities",
    summary="What this deployment supports",
    responses=documented(200, "what this deployment supports"),
)
def capabilities() -> Response[Capabilities]:
    container = get_container()
    memory = container.memory
    return json_response(
        200,
        {
            "project_scoping": memory.supports_project_scoping,
            "search_modes": memory.search_modes,
            "default_search_mode": memory.default_mode,
            "graph": True,
            "vector_backend": memory.vector_index.name if memory.vector_index is not None else None,
            "embedder": memory.embedder.model_id if memory.embedder is not None else None,
            "relevance_threshold": RELEVANCE_THRESHOLD,
        },
    )
