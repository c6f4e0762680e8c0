"""The store route (LangGraph's store, docs/langgraph.md) as deployed: through the gateway's authorizer and
the API function configured by its template, on each stack (the table's own search, and OpenSearch)."""

from __future__ import annotations

from tests.cloud.conftest import STORE_VALUE, Flow


def test_a_store_batch_puts_and_finds_through_the_deployed_api(flow: Flow) -> None:
    r = flow.replies
    assert (r["store_put"].status, r["store_put"].body) == (200, {"results": [None]})
    assert r["store_read"].status == 200, r["store_read"].body
    [found], got = r["store_read"].body["results"]
    assert (found["key"], found["value"]) == ("theme", STORE_VALUE)
    assert found["score"] > 0
    assert (got["namespace"], got["value"]) == (["prefs"], STORE_VALUE)
    # a key of another tenant's app is refused by the authorizer
    assert r["store_other_tenant"].status == 403, r["store_other_tenant"].body
