"""``{scope}/mcp`` as each stack deploys it (API.md, "MCP"): through the template's gateway, authorizer
and API function on moto, driven by the official MCP Python SDK (its HTTP requests go to the emulated
gateway in-process, at the stage's URL) and by single JSON-RPC messages.

Runs on the tier's deployment after the README flow, with its keys, as users of its own.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp import ClientSession

from tests.cloud.conftest import APP, OTHER_APP, Flow
from tests.cloud.rehearsal import Gateway
from tests.mcp_support import OWN_TOOLS, REFERENCE_TOOLS, create_thing, graph_names, mcp_url, over_http, structured

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rehearsal", "version": "1"}}


class GatewayTransport(httpx2.AsyncBaseTransport):
    """An HTTP client's requests to the stage's URL, answered by the emulated gateway (no socket)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raw_path, _, query = request.url.raw_path.decode().partition("?")
        stage = f"/{self.gateway.stage}"
        assert raw_path.startswith(stage + "/"), raw_path
        headers = {k.decode(): v.decode() for k, v in request.headers.raw}  # as sent: API Gateway keeps the case
        body = (await request.aread()).decode() or None
        reply = self.gateway.send(request.method, raw_path[len(stage) :], query=query, headers=headers, body=body)
        return httpx2.Response(reply.status, headers=reply.headers, content=reply.raw.encode(), request=request)


@pytest.fixture
def gateway(flow: Flow) -> Gateway:
    return Gateway(flow.deployment)


def _url(gateway: Gateway, user: str, project_id: str | None = None) -> str:
    base = f"https://{gateway.api_id}.execute-api.us-east-1.amazonaws.com/{gateway.stage}"
    return mcp_url(base, APP, user, project_id)


def _path(user: str) -> str:
    return f"/v1/apps/{APP}/users/{user}/mcp"


def _rpc(method: str, params: dict[str, Any] | None = None, request_id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        message["id"] = request_id
    return message


def test_the_template_routes_mcp_through_an_authorizer_that_needs_no_fixed_header(gateway: Gateway) -> None:
    # Given the methods the template deploys on {scope}/mcp
    scope = "/v1/apps/{app}/users/{user}"
    post, get = gateway.methods[("POST", scope + "/mcp")], gateway.methods[("GET", scope + "/mcp")]
    rest = gateway.methods[("POST", scope + "/memories/search")]
    # Then both reach the API function through the tenant authorizer's function, with no identity source
    # (a Bearer-only request is authorized by the function), while REST routes need x-api-key
    assert (post.function, get.function) == ("api", "api")
    assert post.authorizer is not None
    assert post.authorizer == get.authorizer
    assert rest.authorizer is not None
    assert post.authorizer.function == rest.authorizer.function == "authorizer"
    assert post.authorizer.identity_sources == ()
    assert rest.authorizer.identity_sources == ("method.request.header.x-api-key",)
    # And no other method is deployed on it
    assert {m for (m, path) in gateway.methods if path == scope + "/mcp"} == {"POST", "GET"}


def test_an_sdk_session_with_a_bearer_key_uses_the_tools(flow: Flow, gateway: Gateway) -> None:
    transport = GatewayTransport(gateway)
    bearer = {"Authorization": f"Bearer {flow.keys[APP]}"}
    entities = [
        {"name": "Pixel", "entityType": "dog", "observations": ["likes the beach", "is a beagle"]},
        {"name": "Miso", "entityType": "cat", "observations": ["sleeps all day"]},
    ]

    async def body(session: ClientSession) -> dict[str, Any]:
        call = session.call_tool  # the SDK checks each structuredContent against the tool's outputSchema
        return {
            "version": session.initialize_result and session.initialize_result.protocol_version,
            "tools": [t.name for t in (await session.list_tools()).tools],
            "created": structured(await call("create_entities", {"entities": entities})),
            "found": structured(await call("search_nodes", {"query": "beach"})),
            "limited": structured(await call("read_graph", {"limit": 1})),
            "memory": structured(await call("add_memory", {"text": "I prefer window seats", "session_id": "s1"})),
            "memories": structured(await call("search_memory", {"query": "window seats", "mode": "keyword"})),
        }

    # Given an SDK client that sends only Authorization: Bearer (no x-api-key)
    calls_before = len(gateway.authorizer_calls)
    out = over_http(_url(gateway, "mcp-bearer"), body, bearer, transport)
    # Then the session negotiated the newest version and lists every tool
    assert out["version"] == "2025-11-25"
    assert out["tools"] == REFERENCE_TOOLS + OWN_TOOLS
    # And the tools answered in the reference shapes, from the deployed table
    assert [e["name"] for e in out["created"]["entities"]] == ["Pixel", "Miso"]
    assert [e["name"] for e in out["found"]["entities"]] == ["Pixel"]
    assert [e["name"] for e in out["limited"]["entities"]] == ["Miso"]
    assert out["limited"]["truncated"] is True
    assert out["memory"]["session_id"] == "s1"
    assert [e["id"] for e in out["memories"]["entries"]] == [out["memory"]["id"]]
    # And every request of the session went through the authorizer function (none stopped at the gateway)
    assert len(gateway.authorizer_calls) > calls_before
    assert flow.deployment.violations() == []


def test_the_stateless_transport_answers_as_api_md_says(flow: Flow, gateway: Gateway) -> None:
    key = {"x-api-key": flow.keys[APP]}
    path = _path("mcp-wire")
    # initialize: the version asked for, when it is one of ours
    init = gateway.request("POST", path, _rpc("initialize", INIT), headers=key)
    assert init.status == 200, init.body
    assert init.headers["Content-Type"].startswith("application/json")
    assert init.body["result"]["protocolVersion"] == "2025-06-18"
    assert "mcp-session-id" not in {k.lower() for k in init.headers}
    # A notification: 202 and no body
    note = gateway.request("POST", path, _rpc("notifications/initialized", request_id=None), headers=key)
    assert (note.status, note.raw) == (202, "")
    # GET (no server-sent stream): 405, POST allowed
    stream = gateway.request("GET", path, headers={**key, "Accept": "text/event-stream"})
    assert stream.status == 405
    assert stream.headers["Allow"] == "POST"
    # A method the template does not deploy on the route: the gateway's 404
    assert gateway.request("DELETE", path, headers=key).status == 404


def test_keys_on_the_mcp_route(flow: Flow, gateway: Gateway) -> None:
    path = _path("mcp-auth")
    ping = _rpc("ping")
    # Bearer alone: authorized by the function (the MCP route declares no identity source)
    assert gateway.request("POST", path, ping, headers={"Authorization": f"Bearer {flow.keys[APP]}"}).status == 200
    # No key, or an unknown one: the template's 401
    missing = gateway.request("POST", path, ping)
    assert (missing.status, missing.body["error"]["code"]) == (401, "unauthorized")
    assert "Authorization: Bearer" in missing.body["error"]["message"]  # the answer says how MCP clients send it
    unknown = gateway.request("POST", path, ping, headers={"Authorization": "Bearer amk_nope_nope"})
    assert unknown.status == 401
    # Another app's key: the function's 403, as a JSON-RPC error (what MCP clients show), nothing answered
    other = gateway.request("POST", path, ping, headers={"Authorization": f"Bearer {flow.keys[OTHER_APP]}"})
    assert (other.status, other.body["error"]["data"]["code"]) == (403, "forbidden")
    assert "another app" in other.body["error"]["message"]
    # And a REST route (identity source x-api-key) refuses a Bearer-only request at the gateway: 401,
    # without calling the authorizer
    calls_before = len(gateway.authorizer_calls)
    rest = gateway.request(
        "POST",
        f"/v1/apps/{APP}/users/mcp-auth/memories/search",
        {"query": "x"},
        headers={"Authorization": f"Bearer {flow.keys[APP]}"},
    )
    assert rest.status == 401
    assert len(gateway.authorizer_calls) == calls_before


def test_project_id_scopes_the_tools(flow: Flow, gateway: Gateway) -> None:
    transport = GatewayTransport(gateway)
    bearer = {"Authorization": f"Bearer {flow.keys[APP]}"}

    for project, name in ((None, "GlobalThing"), ("trip", "OnlyInTrip")):
        over_http(_url(gateway, "mcp-scoped", project), create_thing(name), bearer, transport)
    # Then the project sees the global graph and its own; the global scope only its own
    assert over_http(_url(gateway, "mcp-scoped", "trip"), graph_names, bearer, transport) == [
        "GlobalThing",
        "OnlyInTrip",
    ]
    assert over_http(_url(gateway, "mcp-scoped", "work"), graph_names, bearer, transport) == ["GlobalThing"]
    assert over_http(_url(gateway, "mcp-scoped"), graph_names, bearer, transport) == ["GlobalThing"]
