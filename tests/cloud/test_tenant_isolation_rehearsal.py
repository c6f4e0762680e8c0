"""No tenant takes another's capacity, as deployed (issue 41, points 1 and 5): through the template's gateway and
authorizer, the API function configured only by its template, on each stack.

A busy tenant's other requests in flight, in the function's other execution environments, are the table's count
(what each of those requests added as it began): the test adds them as they would, up to the limit the template
gives the tenant's tier, then sends that tenant's next request and another tenant's."""

from __future__ import annotations

import contextlib

from agentmem.settings import Env, Settings
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.tenancy.admission import Admission, ModelShare, TierLimits
from agentmem.tenancy.keys import TenantService
from tests.cloud.conftest import Flow
from tests.cloud.rehearsal import Gateway
from tests.support import text_entry


def _two_starter_tenants(flow: Flow, busy: str, quiet: str) -> tuple[Gateway, DynamoTable, str, str]:
    """The deployment's gateway and table, and a starter key of each of two apps (made as the operator makes them)."""
    table = DynamoTable(flow.deployment.table_name)
    tenants = TenantService(table)
    keys = [tenants.create_key(app, tier="starter").secret for app in (busy, quiet)]
    return Gateway(flow.deployment), table, keys[0], keys[1]


def test_a_tenant_at_its_tiers_limit_in_flight_is_refused_and_another_tenant_is_served(flow: Flow) -> None:
    d = flow.deployment
    gateway, table, busy, quiet = _two_starter_tenants(flow, "busy-tenant", "quiet-tenant")
    # Given the limits the template gives the API function
    settings = Settings.from_env(d.functions["api"].variables)
    limits = TierLimits.parse(settings.in_flight_limits)
    assert limits is not None
    starter = limits.per_tier["starter"]
    path = "/v1/apps/{app}/users/ann/memories"
    d.clock.hold()  # (one window of the count for the whole test, however slowly it runs)
    with contextlib.ExitStack() as held:
        held.callback(d.clock.release)
        # And a starter tenant with that many requests in flight in other execution environments
        admission = Admission(table, limits, clock=lambda: d.clock().timestamp())
        for _ in range(starter):
            held.enter_context(admission.admitted("busy-tenant", "starter"))
        # When it sends one more, and another starter tenant sends one
        refused = gateway.request("POST", path.format(app="busy-tenant"), {"entry": text_entry("x")}, api_key=busy)
        served = gateway.request("POST", path.format(app="quiet-tenant"), {"entry": text_entry("y")}, api_key=quiet)
        # Then the first is refused at once (429 too_many_in_flight), the other is served
        assert refused.status == 429, refused.body
        assert refused.body["error"]["code"] == "too_many_in_flight"
        assert served.status == 201, served.body
        # And once those requests were answered, the busy tenant is served again
        held.close()
        again = gateway.request("POST", path.format(app="busy-tenant"), {"entry": text_entry("z")}, api_key=busy)
        assert again.status == 201, again.body


def test_a_tenant_past_its_share_of_the_embedding_model_is_refused_and_another_is_not(flow: Flow) -> None:
    d = flow.deployment
    gateway, table, busy, quiet = _two_starter_tenants(flow, "busy-embedder", "quiet-embedder")
    # Given the share of Bedrock's embedding requests a minute the template gives a starter tenant, used up this
    # minute by the busy tenant's other requests
    variables = d.functions["api"].variables
    shares = TierLimits.parse(variables[Env.EMBEDDING_SHARES], Env.EMBEDDING_SHARES)
    assert shares is not None
    d.clock.hold()  # (one minute of the count for the whole test, however slowly it runs)
    try:
        share = ModelShare(table, "embeddings", shares, clock=lambda: d.clock().timestamp())
        share.take("busy-embedder", "starter", shares.per_tier["starter"])
        path = "/v1/apps/{app}/users/ann/memories"
        # When each tenant stores a memory (one embedding each)
        refused = gateway.request("POST", path.format(app="busy-embedder"), {"entry": text_entry("x")}, api_key=busy)
        served = gateway.request("POST", path.format(app="quiet-embedder"), {"entry": text_entry("y")}, api_key=quiet)
    finally:
        d.clock.release()
    # Then the busy tenant is refused before Bedrock is called, the other is served
    assert refused.status == 429, refused.body
    assert refused.body["error"]["code"] == "model_share_used"
    assert served.status == 201, served.body
