"""Tenancy through the real handler on both tables: keys bound to one app, 401/403, metering, quotas."""

from __future__ import annotations

import re

import pytest

from agentmem import costs
from agentmem.container import Container
from agentmem.stores.table import Table
from agentmem.tenancy import TenantService
from tests.support import ApiClient, scope_path, text_entry


@pytest.fixture
def client(tenants: TenantService) -> ApiClient:
    return ApiClient()


def app_routes() -> list[tuple[str, str]]:
    """Every route the handler serves under /v1/apps/{app}, with concrete path values (app = B)."""
    from agentmem.api.app import app

    routes = []
    for route in app._static_routes + app._dynamic_routes:
        if route.openapi_path.startswith("/v1/apps/{app}"):
            path = route.openapi_path.replace("{app}", "B").replace("{user}", "u")
            routes.append((route.method, re.sub(r"\{[^}]+\}", "x", path)))
    return routes


def key(api_key: str) -> dict[str, str]:
    return {"x-api-key": api_key}


def test_every_app_route_is_guarded() -> None:
    # Given the handler's routes / Then the scope routes and the usage route are all under /v1/apps/{app}
    methods = {(m, p) for m, p in app_routes()}
    assert ("POST", "/v1/apps/B/users/u/memories") in methods
    assert ("GET", "/v1/apps/B/usage") in methods
    assert len(methods) >= 10


def test_a_key_for_app_a_gets_403_on_every_route_of_app_b(tenants: TenantService, client: ApiClient) -> None:
    # Given a key of app A and data in app B
    key_a = tenants.create_key("A").secret
    key_b = tenants.create_key("B").secret
    assert (
        client.post(scope_path("B", "u") + "/memories", {"entry": text_entry("secret of B")}, headers=key(key_b)).status
        == 201
    )
    for method, path in app_routes():
        # When A's key calls each route of B (with a body that would be valid or not)
        reply = client.request(method, path, {}, headers=key(key_a))
        # Then 403 with the error body, before validation or any store access
        assert reply.status == 403, (method, path, reply.body)
        assert reply.error_code == "forbidden"
    # And B's data is untouched
    listed = client.get(scope_path("B", "u") + "/memories", headers=key(key_b))
    assert [e["content"]["parts"][0]["text"] for e in listed.body["entries"]] == ["secret of B"]


def test_missing_unknown_and_revoked_keys_get_401_everywhere(tenants: TenantService, client: ApiClient) -> None:
    # Given a key that is then revoked
    created = tenants.create_key("A")
    assert client.get(scope_path("A", "u") + "/memories", headers=key(created.secret)).status == 200
    tenants.revoke_key("A", created.key.key_id)
    for method, path in app_routes():
        own_path = path.replace("/apps/B", "/apps/A")
        # When called with no key, an unknown key, and the revoked key / Then 401
        for headers in ({}, key("amk_0000_unknown"), key(created.secret)):
            reply = client.request(method, own_path, {}, headers=headers)
            assert reply.status == 401, (method, own_path, headers, reply.body)
            assert reply.error_code == "unauthorized"


def test_service_routes_stay_public(tenants: TenantService, client: ApiClient) -> None:
    assert client.get("/v1/health").status == 200
    assert client.get("/v1/capabilities").status == 200


def test_a_key_works_on_its_own_app(tenants: TenantService, client: ApiClient) -> None:
    secret = tenants.create_key("A").secret
    stored = client.post(scope_path("A", "u") + "/memories", {"entry": text_entry("dark mode")}, headers=key(secret))
    assert stored.status == 201
    found = client.post(scope_path("A", "u") + "/memories/search", {"query": "dark mode"}, headers=key(secret))
    assert found.status == 200
    assert [e["id"] for e in found.body["entries"]] == [stored.body["id"]]


def test_metering_counts_match_the_requests_made(tenants: TenantService, client: ApiClient, table: Table) -> None:
    # Given a key of A and one of B
    secret = tenants.create_key("A").secret
    other = tenants.create_key("B").secret
    scope = scope_path("A", "u")
    # When A makes 5 requests: two single writes, one session of three entries, one search, one invalid write
    assert client.post(scope + "/memories", {"entry": text_entry("one")}, headers=key(secret)).status == 201
    assert client.post(scope + "/memories", {"entry": text_entry("two")}, headers=key(secret)).status == 201
    entries = [text_entry(t) for t in ("a b", "c d", "e f")]
    assert client.put(scope + "/sessions/s1/memories", {"entries": entries}, headers=key(secret)).status == 200
    assert client.post(scope + "/memories/search", {"query": "one"}, headers=key(secret)).status == 200
    assert client.post(scope + "/memories", {"entry": {}}, headers=key(secret)).status == 422
    # And B's key is refused once on A (not A's usage) and used once on B
    assert client.get(scope + "/memories", headers=key(other)).status == 403
    assert client.get(scope_path("B", "u") + "/memories", headers=key(other)).status == 200
    # Then A's usage of today: 6 requests (the usage read included), 5 items stored, and 6 texts embedded
    # (five entries and one search query)
    usage = client.get("/v1/apps/A/usage", headers=key(secret))
    assert usage.status == 200
    assert usage.body["app"] == "A"
    [today] = usage.body["days"]
    assert (today["requests"], today["items_stored"], today["embeddings"]) == (6, 5, 6)
    # And B's usage holds only B's own request
    [b_today] = client.get("/v1/apps/B/usage", headers=key(other)).body["days"]
    assert (b_today["requests"], b_today["items_stored"]) == (2, 0)


def test_a_replayed_idempotent_write_is_a_request_but_stores_nothing(tenants: TenantService, client: ApiClient) -> None:
    # Given the same write sent twice with one Idempotency-Key
    secret = tenants.create_key("A").secret
    headers = {**key(secret), "Idempotency-Key": "retry-1"}
    body = {"entry": text_entry("once")}
    first = client.post(scope_path("A", "u") + "/memories", body, headers=headers)
    second = client.post(scope_path("A", "u") + "/memories", body, headers=headers)
    assert (first.status, second.status) == (201, 201)
    # Then both are requests, one item is stored
    [today] = client.get("/v1/apps/A/usage", headers=key(secret)).body["days"]
    assert (today["requests"], today["items_stored"]) == (3, 1)


def test_graph_writes_count_facts_and_mcp_tools_count_their_work(tenants: TenantService, client: ApiClient) -> None:
    secret = tenants.create_key("A").secret
    scope = scope_path("A", "u")
    entities = [{"name": n, "observations": [f"{n} fact {i}" for i in range(3)]} for n in ("X", "Y")]
    assert client.post(scope + "/graph/entities", {"entities": entities}, headers=key(secret)).status == 200
    relation = {"relations": [{"source": "X", "relation_type": "knows", "target": "Y"}]}
    assert client.post(scope + "/graph/relations", relation, headers=key(secret)).status == 200
    assert (
        client.post(scope + "/graph/tools/remember", {"entity": "Z", "facts": ["a", "b"]}, headers=key(secret)).status
        == 200
    )

    def tool(name: str, arguments: dict[str, object]) -> None:
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        reply = client.post(scope + "/mcp", message, headers=key(secret))
        assert reply.body["result"]["isError"] is False

    tool("add_memory", {"text": "a note"})
    tool("search_memory", {"query": "note"})
    tool("create_entities", {"entities": [{"name": "W", "entityType": "t", "observations": ["w1", "w2", "w3"]}]})
    [today] = client.get("/v1/apps/A/usage", headers=key(secret)).body["days"]
    # 6 + 1 + 2 facts and relations over REST, 1 entry and 3 facts over MCP; 2 texts embedded (MCP)
    assert (today["items_stored"], today["embeddings"]) == (13, 2)


def test_usage_of_another_app_is_forbidden(tenants: TenantService, client: ApiClient) -> None:
    secret = tenants.create_key("A").secret
    tenants.create_key("B")
    assert client.get("/v1/apps/B/usage", headers=key(secret)).status == 403


def test_daily_quota_answers_429_beyond_it(tenants: TenantService, client: ApiClient) -> None:
    # Given a tenant with a quota of 3 requests a day
    secret = tenants.create_key("Q", quota_requests_per_day=3).secret
    path = scope_path("Q", "u") + "/memories"
    # When it makes 4 / Then the 4th is refused with 429 and writes nothing
    assert [client.get(path, headers=key(secret)).status for _ in range(3)] == [200, 200, 200]
    refused = client.post(path, {"entry": text_entry("over quota")}, headers=key(secret))
    assert refused.status == 429
    assert refused.error_code == "rate_limited"


def test_authorizer_context_is_trusted_and_enforced(tenants: TenantService, client: ApiClient) -> None:
    # Given an event as API Gateway sends it after the REQUEST authorizer resolved the key to app A
    from agentmem.local.events import rest_event

    own = rest_event("GET", scope_path("A", "u") + "/memories")
    own["requestContext"]["authorizer"] = {"app": "A", "key_id": "k1", "quota": 0}
    other = rest_event("GET", scope_path("B", "u") + "/memories")
    other["requestContext"]["authorizer"] = {"app": "A", "key_id": "k1", "quota": 0}
    # Then its own app is served without a header lookup, another app is 403
    assert client.invoke(own).status == 200
    assert client.invoke(other).status == 403


def test_usage_prices_the_extraction_models_tokens_at_the_configured_bedrock_model(table: Table) -> None:
    from agentmem.container import set_container
    from agentmem.settings import Settings
    from agentmem.tenancy.metering import record_usage

    # Given a day of extraction for app M: its model's calls and tokens
    record_usage(table, "M", model_calls=5, model_input_tokens=200_000, model_output_tokens=50_000)
    prices = costs.prices()
    nova = (
        200_000 * prices["bedrock.chat.amazon.nova-micro-v1:0.input_tokens"].usd / 1000
        + 50_000 * prices["bedrock.chat.amazon.nova-micro-v1:0.output_tokens"].usd / 1000
    )
    configured = {
        "Nova Micro on Bedrock": (Settings(model="bedrock", model_id="amazon.nova-micro-v1:0"), nova, "Bedrock model"),
        "a local model": (
            Settings(model="openai", model_url="http://127.0.0.1:1/v1", model_id="llama3.2"),
            0.0,
            "unpriced",
        ),
    }
    for name, (settings, expected, basis) in configured.items():
        # When the usage is read with that model configured
        set_container(Container(settings, table=table))
        try:
            reply = ApiClient().get("/v1/apps/M/usage")
        finally:
            set_container(None)
        # Then its tokens are priced at the model's list price, or at nothing, and the basis says which
        assert reply.status == 200, name
        [day] = reply.body["days"]
        assert (day["model_input_tokens"], day["model_output_tokens"]) == (200_000, 50_000)
        assert day["estimated_cost_usd"]["extraction_model"] == pytest.approx(expected, abs=1e-6), name
        assert day["estimated_cost_usd"]["total"] >= day["estimated_cost_usd"]["extraction_model"], name
        assert basis in reply.body["cost_basis"], name


def test_without_auth_the_local_default_serves_and_meters_by_path(container: Container, api: ApiClient) -> None:
    # Given MEMORY_AUTH=none (the local default) / When a request comes without a key / Then it is served
    assert container.settings.auth == "none"
    assert api.post(scope_path("L", "u") + "/memories", {"entry": text_entry("hello")}).status == 201
    [today] = api.get("/v1/apps/L/usage").body["days"]
    assert (today["requests"], today["items_stored"]) == (2, 1)
