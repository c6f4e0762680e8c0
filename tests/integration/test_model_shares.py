"""Each tenant's share of the embedding model's requests a minute (issue 41, point 5), on both tables, through the
real API handler with keys required.

Bedrock throttles an embedding model by requests a minute, one quota for the account: the API counts each app's
calls per minute and refuses, before the call, what would pass its tier's share (429 ``model_share_used``), so one
tenant's burst meets its own refusal, not everyone's throttling. The embedder under the share is the hashing model
(the share wraps whatever embedder the deployment has; the stack wraps Bedrock's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentmem.clock import utc_now
from agentmem.container import Container, set_container
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.tenancy.admission import MINUTE_SECONDS, ModelShare, SharedEmbedder, TierLimits
from tests.support import ApiClient, Clock, scope_path, text_entry

SHARES = TierLimits({"starter": 3, "standard": 6, "scale": 12})


@pytest.fixture
def clock() -> Clock:
    return Clock(utc_now())  # (held: the test moves it)


@pytest.fixture
def container(table: Table, clock: Clock) -> Iterator[Container]:
    share = ModelShare(table, "embeddings", SHARES, clock=lambda: clock().timestamp())
    built = Container(
        Settings(auth="required", embedder="hashing", embedding_shares=SHARES.to_setting()),
        table=table,
        embedder=SharedEmbedder(HashingEmbedder(64), share),
    )
    set_container(built)
    yield built
    set_container(None)


def _store(api: ApiClient, app: str, key: str, text: str) -> int | str:
    reply = api.post(f"{scope_path(app, 'ann')}/memories", {"entry": text_entry(text)}, headers={"x-api-key": key})
    return reply.status if reply.status != 429 else str(reply.error_code)


def test_a_tenant_past_its_share_of_the_embedding_model_is_refused_and_another_is_not(
    container: Container, clock: Clock
) -> None:
    api = ApiClient()
    busy = container.tenants.create_key("busy", tier="starter").secret
    quiet = container.tenants.create_key("quiet", tier="starter").secret
    # Given a starter tenant that embedded its share of this minute (3 calls)
    assert [_store(api, "busy", busy, f"fact {i}") for i in range(3)] == [201, 201, 201]
    # When it stores once more, and another starter tenant stores
    refused = _store(api, "busy", busy, "one too many")
    served = _store(api, "quiet", quiet, "I like tea")
    # Then the first is refused before the model is called, and nothing of it is kept; the other is served
    assert refused == "model_share_used"
    assert served == 201
    listed = api.get(f"{scope_path('busy', 'ann')}/memories", headers={"x-api-key": busy}).body["entries"]
    assert len(listed) == 3
    # And a search, which embeds its query, is refused the same way until the minute has passed, when a batch larger
    # than the whole share still gets in (a session of five turns: the share only stops what comes after it)
    search = api.post(f"{scope_path('busy', 'ann')}/memories/search", {"query": "fact"}, headers={"x-api-key": busy})
    assert (search.status, search.error_code) == (429, "model_share_used")
    clock.advance(MINUTE_SECONDS)
    session = {"entries": [text_entry(f"turn {i}") for i in range(5)]}
    path = f"{scope_path('busy', 'ann')}/sessions/s1/memories"
    assert api.put(path, session, headers={"x-api-key": busy}).status == 200
    assert _store(api, "busy", busy, "after the session") == "model_share_used"


def test_the_share_follows_the_tier_and_calls_outside_a_request_are_not_counted(
    container: Container, table: Table, clock: Clock
) -> None:
    api = ApiClient()
    scale = container.tenants.create_key("big", tier="scale").secret
    assert [_store(api, "big", scale, f"fact {i}") for i in range(12)] == [201] * 12
    assert _store(api, "big", scale, "thirteenth") == "model_share_used"
    # Outside a tenant's request (the stream indexer's re-embedding), nothing is counted or refused
    embedder = container.embedder
    assert embedder is not None
    assert len(embedder.embed(["a", "b", "c", "d"])) == 4
