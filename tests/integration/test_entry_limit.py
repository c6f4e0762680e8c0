"""The table backend serves up to a number of entries per user (issue 35, point 4): its search holds a
user's whole index in a process (agentmem/vectors/exact.py MAX_ENTRIES). A write past it is refused with a
409 ``user_memory_full`` naming the way on (delete, or OpenSearch), and writes nothing; replacing a session
counts what it replaces; deleting makes room; the limit is per user. On both tables, through the handler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.table import Table
from agentmem.vectors.exact import MAX_ENTRIES
from tests.support import ApiClient, scope_path, text_entry

LIMIT = 5
ALICE = scope_path("shop", "alice")
BOB = scope_path("shop", "bob")


@pytest.fixture
def api(table: Table) -> Iterator[ApiClient]:
    set_container(Container(Settings(embedder="hashing", max_entries=LIMIT), table=table))
    yield ApiClient()
    set_container(None)


def _session(api: ApiClient, scope: str, session: str, texts: list[str]) -> int:
    body = {"entries": [text_entry(t) for t in texts]}
    return api.request("PUT", f"{scope}/sessions/{session}/memories", body).status


def _listed(api: ApiClient, scope: str) -> list[str]:
    listed = api.request("GET", f"{scope}/memories", query={"limit": 100})
    assert listed.status == 200
    return sorted(e["content"]["parts"][0]["text"] for e in listed.body["entries"])


def test_a_write_past_the_limit_is_refused_and_writes_nothing(api: ApiClient) -> None:
    # Given alice's memory full: a session of three and two entries
    assert _session(api, ALICE, "trip", ["fjords", "ferries", "salmon"]) == 200
    ids = [api.request("POST", f"{ALICE}/memories", {"entry": text_entry(t)}).body["id"] for t in ("oslo", "bergen")]
    before = _listed(api, ALICE)
    # When one more entry, or a new session, is written
    refused = api.request("POST", f"{ALICE}/memories", {"entry": text_entry("tromso")})
    session = api.request("PUT", f"{ALICE}/sessions/new/memories", {"entries": [text_entry("lofoten")]})
    # Then both are a 409 that says why and what to do, and nothing was stored or indexed
    for reply in (refused, session):
        assert reply.status == 409
        assert reply.body["error"]["code"] == "user_memory_full"
        assert f"up to {LIMIT:,}" in reply.body["error"]["message"]
        assert "search_backend=opensearch" in reply.body["error"]["message"]
    assert _listed(api, ALICE) == before
    found = api.request("POST", f"{ALICE}/memories/search", {"query": "tromso lofoten", "mode": "keyword"}).body
    assert found["entries"] == []
    # And replacing the session with as many entries is not a write past the limit
    assert _session(api, ALICE, "trip", ["fjords", "ferries", "whales"]) == 200
    assert "whales" in _listed(api, ALICE)
    # And another user's memory is their own
    assert api.request("POST", f"{BOB}/memories", {"entry": text_entry("tromso")}).status == 201
    # And deleting an entry makes room for one
    assert api.request("DELETE", f"{ALICE}/memories/{ids[0]}").status == 204
    assert api.request("POST", f"{ALICE}/memories", {"entry": text_entry("tromso")}).status == 201
    assert api.request("POST", f"{ALICE}/memories", {"entry": text_entry("narvik")}).status == 409


def test_the_table_backend_has_a_limit_by_default_and_opensearch_none() -> None:
    # Given no setting / Then the table backend's index carries its limit, and a setting replaces it
    assert Container(Settings(embedder="hashing")).table_index.max_entries == MAX_ENTRIES
    assert Container(Settings(embedder="hashing", max_entries=7)).table_index.max_entries == 7
    opensearch = Container(Settings(vector_index="opensearch", opensearch_endpoint="http://127.0.0.1:9"))
    assert opensearch.vector_index is not None
    assert opensearch.vector_index.max_entries is None
