"""The sample events in events/ (also usable with `sam local invoke -e`) drive the real handler."""

from __future__ import annotations

from tests.support import ApiClient, load_event


def test_sample_events_run_in_order_on_one_user(api: ApiClient) -> None:
    # Given the sample events of one user, in the order a client would send them
    expected = [
        ("api_health.json", 200),
        ("api_put_session.json", 200),
        ("api_add_entry.json", 201),
        ("api_search.json", 200),
        ("api_list.json", 200),
        ("api_delete_by_query.json", 200),
        ("api_delete_project.json", 200),
    ]
    results = {name: api.invoke(load_event(name)) for name, _ in expected}
    # Then each gets its documented status
    assert {name: r.status for name, r in results.items()} == dict(expected)
    # And they act on the same user: the search finds the stored entry, the project list sees both scopes
    assert results["api_search.json"].body["entries"][0]["content"]["parts"][0]["text"] == "I prefer dark mode"
    assert len(results["api_list.json"].body["entries"]) == 2
    assert results["api_delete_by_query.json"].body == {"deleted": 1}
    assert results["api_delete_project.json"].body == {"deleted": 1}
