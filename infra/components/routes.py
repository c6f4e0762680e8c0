"""Every route of API.md, as API Gateway resources (``{scope}`` = ``/v1/apps/{app}/users/{user}``).

Declared one by one (no ``{proxy+}``) so an unknown route is answered by the gateway without a Lambda
call; tests/infra checks that this list and the resolver's routes agree. The one exception is the AgentCore
Memory data plane (docs/agentcore.md): its paths are botocore's, served under ``/agentcore/{proxy+}``.
"""

from __future__ import annotations

SCOPE = "/v1/apps/{app}/users/{user}"
GRAPH = SCOPE + "/graph"

PUBLIC_ROUTES: list[tuple[str, str]] = [
    ("GET", "/v1/health"),
    ("GET", "/v1/capabilities"),
    ("GET", "/v1/openapi.json"),
]

TENANT_ROUTES: list[tuple[str, str]] = [
    ("PUT", SCOPE + "/sessions/{session}/memories"),
    ("POST", SCOPE + "/memories"),
    ("POST", SCOPE + "/memories/search"),
    ("GET", SCOPE + "/memories"),
    ("GET", SCOPE + "/memories/{id}"),
    ("PATCH", SCOPE + "/memories/{id}"),
    ("GET", SCOPE + "/memories/{id}/history"),
    ("DELETE", SCOPE + "/memories/{id}"),
    ("POST", SCOPE + "/memories/query"),
    ("POST", SCOPE + "/memories/delete"),
    ("DELETE", SCOPE + "/sessions/{session}"),
    ("POST", SCOPE + "/sessions/{session}/extract"),
    ("DELETE", SCOPE + "/projects/{project}"),
    ("DELETE", SCOPE),
    ("GET", SCOPE + "/deletions/{deletion_id}"),
    ("GET", SCOPE + "/export"),
    ("GET", SCOPE + "/projects"),
    ("POST", GRAPH + "/entities"),
    ("DELETE", GRAPH + "/entities/{name}"),
    ("POST", GRAPH + "/entities/{name}/observations"),
    ("GET", GRAPH + "/entities/{name}/history"),
    ("POST", GRAPH + "/observations/{id}/invalidate"),
    ("POST", GRAPH + "/observations/{id}/supersede"),
    ("DELETE", GRAPH + "/observations/{id}"),
    ("POST", GRAPH + "/relations"),
    ("POST", GRAPH + "/relations/{id}/invalidate"),
    ("DELETE", GRAPH + "/relations/{id}"),
    ("GET", GRAPH + "/search"),
    ("GET", GRAPH + "/nodes"),
    ("GET", GRAPH),
    ("GET", GRAPH + "/profile-card"),
    ("POST", GRAPH + "/episodes"),
    ("GET", GRAPH + "/episodes"),
    ("POST", GRAPH + "/tools/remember"),
    ("POST", GRAPH + "/tools/relate"),
    ("GET", "/v1/apps/{app}/usage"),
    ("GET", "/v1/apps/{app}/users"),
    ("GET", "/v1/apps/{app}/extraction"),
    ("PUT", "/v1/apps/{app}/extraction"),
    ("GET", "/v1/apps/{app}/extraction/jobs"),
    ("POST", "/v1/apps/{app}/store/batch"),
]

MCP_ROUTES: list[tuple[str, str]] = [
    ("POST", SCOPE + "/mcp"),
    ("GET", SCOPE + "/mcp"),
]
"""MCP over Streamable HTTP: tenant routes whose key may also come as ``Authorization: Bearer``."""

AGENTCORE_ROUTES: list[tuple[str, str]] = [
    ("ANY", "/agentcore/{proxy+}"),
]
"""The AgentCore Memory data plane (docs/agentcore.md): tenant routes (the same authorizer and usage-plan key),
whose many paths, botocore's, the API function routes itself (an unknown one: UnknownOperationException)."""

ALL_ROUTES = PUBLIC_ROUTES + TENANT_ROUTES + MCP_ROUTES

CONSOLE_ROUTES: list[tuple[str, str]] = [
    ("GET", "/console"),
    ("GET", "/console/{proxy+}"),
]
"""The web console's files (docs/console.md): public, served by the console function, not the API's handler."""
