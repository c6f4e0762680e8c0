"""Service routes: health and capabilities."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from agentmem.api.http import json_response
from agentmem.container import get_container

router = Router()


@router.get("/v1/health", summary="The stores this service depends on, each ok or failing")
def health() -> Response[Any]:
    checks = get_container().memory.health()
    if checks.get("table") != "ok":
        return json_response(503, {"status": "failing", "checks": checks})
    status = "ok" if all(v == "ok" for v in checks.values()) else "degraded"
    return json_response(200, {"status": status, "checks": checks})


@router.get("/v1/capabilities", summary="What this deployment supports")
def capabilities() -> Response[Any]:
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
        },
    )
