"""A store batch's table calls are bounded, not only its read units (issue 44), on both tables: the operations
of a batch share what they read, a search without a query reads what it answers, a namespace listing reads pages
of keys, and a batch that would make too many calls is refused through the real handler before it writes.

Calls are counted where the adapters charge them (agentmem/capacity.py), as DynamoDB would receive them: each
is a round trip, so their number is what the batch's time is made of. They are counted around the store's own
batch (the handler adds the request's in-flight count and reads it caches for seconds); the real server over
a DynamoDB endpoint answers the same batches in tests/e2e/test_store_batch_calls.py."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem import capacity
from agentmem.container import Container, get_container
from agentmem.models.store import StoreBatchRequest
from agentmem.store import service as store_service
from agentmem.store.service import BATCH_READ_BUDGET
from tests.support import ApiClient

BATCH = "/v1/apps/demo/store/batch"


def run(api: ApiClient, ops: list[dict[str, Any]]) -> tuple[list[Any], capacity.Consumption]:
    """The batch's results through the handler, and what the store's batch itself read."""
    container = get_container()
    with capacity.measuring() as read:
        answer = container.store.batch("demo", StoreBatchRequest.model_validate({"ops": ops}).ops)
    reply = api.post(BATCH, {"ops": ops})
    assert reply.status == 200, reply.body
    assert _shape(reply.body["results"]) == _shape(answer["results"])
    return answer["results"], read


def _shape(results: list[Any]) -> list[Any]:
    """What a batch answered, by item key (the handler's model drops an empty score)."""
    return [
        r["key"] if isinstance(r, dict) else [i["key"] if isinstance(i, dict) else i for i in r] if r else r
        for r in results
    ]


def calls(consumption: capacity.Consumption) -> int:
    return sum(consumption.calls.values())


def notes(namespaces: int, per_namespace: int) -> list[dict[str, Any]]:
    return [
        {
            "op": "put",
            "user": "ana",
            "namespace": ["notes", f"n{i // per_namespace:03}"],
            "key": f"k{i:03}",
            "value": {"content": f"note {i} about cats"},
        }
        for i in range(namespaces * per_namespace)
    ]


def store(api: ApiClient, ops: list[dict[str, Any]]) -> None:
    for start in range(0, len(ops), 40):
        run(api, ops[start : start + 40])


def test_a_hundred_searches_and_listings_over_120_items_make_a_few_calls(api: ApiClient, container: Container) -> None:
    # Given 120 items, one a namespace (the review's batch: 120 items, 100 operations)
    store(api, notes(120, 1))
    search = {"op": "search", "user": "ana", "namespace_prefix": ["notes"], "limit": 10}
    listing = {"op": "list_namespaces", "user": "ana", "prefix": ["notes"]}
    # When a batch searches without a query 100 times, and another lists the namespaces 100 times
    (alone,), one_search = run(api, [search])
    searched, many_searches = run(api, [search] * 100)
    (listed,), one_listing = run(api, [listing])
    listings, many_listings = run(api, [listing] * 100)
    # Then each answers what one operation answers, a hundred times
    assert [item["key"] for item in alone] == [f"k{i:03}" for i in range(10)]
    assert searched == [alone] * 100
    assert listed == [["notes", f"n{i:03}"] for i in range(120)]
    assert listings == [listed] * 100
    # And a search reads a page of what it answers (it read all 120 rows before: 7 read units), a listing pages
    # of keys (121 calls before: one per namespace), and the other 99 operations read nothing again
    assert (calls(one_search), one_search.read_units) == (1, 1)
    assert calls(one_listing) <= 120 // 32 + 1
    assert one_listing.read_units <= 10
    assert calls(many_searches) == calls(one_search)
    assert calls(many_listings) == calls(one_listing)


def test_a_listing_of_large_namespaces_reads_about_a_key_row_each(api: ApiClient, container: Container) -> None:
    # Given 8 namespaces of 40 items each (a page of keys holds one namespace's keys only)
    store(api, notes(8, 40))
    # When they are listed
    (listed,), read = run(api, [{"op": "list_namespaces", "user": "ana"}])
    # Then every one is listed, with at most a call each and a few read units more than one row each
    assert listed == [["notes", f"n{i:03}"] for i in range(8)]
    assert calls(read) <= 8 + 1  # and the page that found nothing more
    assert read.read_units <= 8 + 8


def test_a_hundred_gets_are_one_batch_read(api: ApiClient, container: Container) -> None:
    store(api, notes(10, 10))
    gets = [
        {"op": "get", "user": "ana", "namespace": ["notes", f"n{i // 10:03}"], "key": f"k{i:03}"} for i in range(99)
    ]
    got, read = run(api, [*gets, {**gets[0], "key": "absent"}])
    assert [item["key"] for item in got[:99]] == [f"k{i:03}" for i in range(99)]
    assert got[99] is None
    assert calls(read) == 1  # one batch read of the 100 key rows (a get each before)


def test_the_ranked_searches_of_a_batch_read_their_users_log_head_once(api: ApiClient, container: Container) -> None:
    # Given items of two users that ranked searches find
    store(api, [*notes(20, 1), *({**put, "user": "bob"} for put in notes(20, 1))])
    ranked = [
        {"op": "search", "user": user, "namespace_prefix": ["notes"], "query": f"note {i} about cats", "limit": 5}
        for i in range(10)
        for user in ("ana", "bob")
    ]
    # When a batch searches each 10 times
    results, read = run(api, ranked)
    # Then every search answers, and each user's log head (its one version item, what tells an index in this
    # process whether it is current) was read once for the batch, not by each index of each search
    assert [len(found) for found in results] == [5] * 20
    assert read.calls["GetItem"] == 2


def test_a_batch_past_its_table_calls_is_refused_before_it_writes(
    api: ApiClient, container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given items that ranked searches find (a search reads its user's postings and entries, then the hits' keys:
    # a few calls), and a budget of 40 calls a batch (the deployed one is BATCH_CALL_BUDGET: what is tested here is
    # what any budget does, with a batch small enough to build)
    budget = 40
    monkeypatch.setattr(store_service, "BATCH_CALL_BUDGET", budget)
    store(api, notes(40, 1))
    ranked = [
        {"op": "search", "user": "ana", "namespace_prefix": ["notes"], "query": f"note {i} about cats", "limit": 5}
        for i in range(40)
    ]
    run(api, ranked[:1])  # the first search of a process reads what it keeps for the next (agentmem/search)
    _, two = run(api, ranked[1:3])
    per_search = calls(two) / 2
    assert 40 * per_search > budget + 1
    assert 40 * two.read_units / 2 < BATCH_READ_BUDGET / 2  # well within the read units: only the calls refuse it
    # When a batch would make more calls than the budget, before its put
    late = {"op": "put", "user": "ana", "namespace": ["notes"], "key": "late", "value": {"content": "never written"}}
    with capacity.measuring() as refused:
        reply = api.post(BATCH, {"ops": [*ranked, late]})
    # Then it is refused with the read budget's error, having made at most the budget and one call (besides the
    # request's own: its in-flight count, the check that the put's user may write), and wrote nothing
    assert (reply.status, reply.error_code) == (422, "batch_reads_too_much")
    assert "table calls" in reply.body["error"]["message"]
    assert calls(refused) <= budget + 1 + 4
    (got,), _ = run(api, [{"op": "get", "user": "ana", "namespace": ["notes"], "key": "late"}])
    assert got is None
    # And a batch within the budget answers
    fits = int(budget // per_search) // 2
    results, _ = run(api, ranked[:fits])
    assert [len(found) for found in results] == [5] * fits
