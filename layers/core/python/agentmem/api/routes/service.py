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
    memory = get_container().memory
    return json_response(
        200,
        {
            "project_scoping": memory.supports_project_scoping,
            "search_modes": memory.search_modes,
            "default_search_mode": memory.default_mode,
            "graph": True,
            "vector_backend": None,
            "embedder": None,
        },
    )
