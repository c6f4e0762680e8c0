"""A tenant's requests in flight are bounded by its plan tier (issue 41, point 1), on both tables, through the real
API handler with keys required.

Another execution environment's requests in flight are the table's count (what :class:`Admission` adds while a
request runs): the test holds them open as those requests would, then sends this tenant's next request and
another tenant's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from agentmem.clock import utc_now
from agentmem.container import Container, set_container
from agentmem.keys import tenant_partition
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.tenancy.admission import IN_FLIGHT_SK_PREFIX, WINDOW_SECONDS, TierLimits, in_flight_limits
from tests.support import ApiClient, Clock, scope_path, text_entry

LIMITS = TierLimits({"starter": 2, "standard": 4, "scale": 8})


@pytest.fixture
def clock() -> Clock:
    return Clock(utc_now())  # (held: the test moves it)


@pytest.fixture
def container(table: Table, clock: Clock) -> Iterator[Container]:
    settings = Settings(auth="required", embedder="hashing", in_flight_limits=LIMITS.to_setting())
    built = Container(settings, table=table, clock=clock)
    set_container(built)
    yield built
    set_container(None)


def _store(api: ApiClient, app: str, key: str, text: str) -> int:
    reply = api.post(f"{scope_path(app, 'ann')}/memories", {"entry": text_entry(text)}, headers={"x-api-key": key})
    return reply.status if reply.status != 429 else reply.error_code  # type: ignore[return-value]


def _listed(api: ApiClient, app: str, key: str) -> list[str]:
    reply = api.get(f"{scope_path(app, 'ann')}/memories", headers={"x-api-key": key})
    assert reply.status == 200, reply.body
    return [e["content"]["parts"][0]["text"] for e in reply.body["entries"]]


def test_a_tenant_at_its_tiers_limit_in_flight_is_refused_and_another_tenant_is_not(
    container: Container, table: Table, clock: Clock
) -> None:
    api = ApiClient()
    busy = container.tenants.create_key("busy", tier="starter").secret
    quiet = container.tenants.create_key("quiet", tier="starter").secret
    admission = container.admission
    with contextlib.ExitStack() as held:
        # Given a starter tenant with as many requests in flight as its tier allows (2), in other environments
        for _ in range(2):
            held.enter_context(admission.admitted("busy", "starter"))
        # When it sends one more, and another starter tenant sends one
        refused = _store(api, "busy", busy, "one too many")
        served = _store(api, "quiet", quiet, "I like tea")
    # Then the first is refused at once with 429 too_many_in_flight and nothing of it is kept; the other is served
    assert refused == "too_many_in_flight"
    assert served == 201
    assert _listed(api, "busy", busy) == []
    # And once its requests were answered, the busy tenant is served again
    assert _store(api, "busy", busy, "my turn") == 201
    assert _listed(api, "busy", busy) == ["my turn"]
    # And nothing stays counted in flight
    window = int(clock().timestamp() // WINDOW_SECONDS)
    counted = table.get(tenant_partition("busy"), f"{IN_FLIGHT_SK_PREFIX}{window}")
    assert counted is not None
    assert counted["in_flight"] == 0


def test_the_limit_follows_the_tier_of_the_key(container: Container) -> None:
    api = ApiClient()
    scale = container.tenants.create_key("big", tier="scale").secret
    admission = container.admission
    with contextlib.ExitStack() as held:
        for _ in range(7):
            held.enter_context(admission.admitted("big", "scale"))
        # Seven of eight in flight: a scale tenant's next request is served; with eight it is refused
        assert _store(api, "big", scale, "seventh") == 201
        held.enter_context(admission.admitted("big", "scale"))
        assert _store(api, "big", scale, "ninth") == "too_many_in_flight"


def test_what_a_dead_request_left_counted_is_forgotten_once_its_window_has_passed(
    container: Container, clock: Clock
) -> None:
    api = ApiClient()
    key = container.tenants.create_key("crashy", tier="starter").secret
    admission = container.admission
    # Given two requests whose process died in flight (a timeout: their count was never taken back)
    dead = [admission.admitted("crashy", "starter") for _ in range(2)]
    for request in dead:
        request.__enter__()  # never left
    assert _store(api, "crashy", key, "still held") == "too_many_in_flight"
    # When a window has passed, then the tenant is served again
    clock.advance(WINDOW_SECONDS)
    assert _store(api, "crashy", key, "later") == 201


def test_the_limits_are_half_of_each_tiers_share_of_the_api_and_parse_as_the_stack_writes_them() -> None:
    limits = in_flight_limits(623, {"starter": 0.05, "standard": 0.1, "scale": 0.25})
    assert limits.per_tier == {"starter": 15, "standard": 31, "scale": 77}
    small = in_flight_limits(64, {"starter": 0.05, "standard": 0.1, "scale": 0.25})  # (dev's reservation)
    assert small.per_tier == {"starter": 4, "standard": 4, "scale": 8}
    assert TierLimits.parse(limits.to_setting()) == limits
    assert TierLimits.parse("") is None
    with pytest.raises(ValueError, match="MEMORY_IN_FLIGHT_LIMITS"):
        TierLimits.parse("starter:0")
    with pytest.raises(ValueError, match="MEMORY_IN_FLIGHT_LIMITS"):
        Settings.from_env({"MEMORY_IN_FLIGHT_LIMITS": "starter"})
