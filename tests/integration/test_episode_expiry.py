"""Episodes honour ``expires_at`` as entries do (issue 17, point 4), on SQLite and DynamoDB (moto)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support import ApiClient, scope_path, text_entry

EPISODES = f"{scope_path('app', 'alice')}/graph/episodes"


def test_an_expired_episode_is_neither_listed_nor_searched(api: ApiClient) -> None:
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    entries = [
        {**text_entry("the old wifi password is hunter2"), "expires_at": past},
        {**text_entry("the new wifi password is in the drawer"), "expires_at": later},
        text_entry("the wifi router is in the hall"),
    ]
    assert api.post(EPISODES, {"session_id": "s1", "entries": entries}).status == 200
    listed = api.get(EPISODES).body["episodes"]
    searched = api.get(EPISODES, query={"q": "wifi password"}).body["episodes"]
    by_session = api.get(EPISODES, query={"session_id": "s1"}).body["episodes"]
    for found in (listed, searched, by_session):
        assert "hunter2" not in " ".join(e["text"] for e in found)
    assert {e["text"] for e in listed} == {
        entries[1]["content"]["parts"][0]["text"],
        entries[2]["content"]["parts"][0]["text"],
    }
    kept = next(e for e in listed if "drawer" in e["text"])
    assert kept["expires_at"].startswith(later[:16].replace("+00:00", ""))
    assert next(e for e in listed if "hall" in e["text"])["expires_at"] is None
