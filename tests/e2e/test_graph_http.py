"""The graph routes over real HTTP against the local server (SQLite file)."""

from __future__ import annotations

from urllib.parse import quote

import httpx

from tests.e2e.conftest import LiveServer


def test_graph_lifecycle_over_http(live_server: LiveServer) -> None:
    graph = f"{live_server.url}/v1/apps/demo/users/{quote('a/b', safe='')}/graph"
    with httpx.Client(timeout=10) as http:
        # Given an agent that remembers facts and a relation
        reply = http.post(
            f"{graph}/tools/remember", json={"entity": "Alice", "entity_type": "person", "facts": ["likes tea"]}
        )
        assert reply.status_code == 200, reply.text
        assert reply.json() == {"stored": True, "entity": "Alice", "facts_added": 1}
        reply = http.post(f"{graph}/tools/relate", json={"source": "Alice", "relation": "works_at", "target": "Acme"})
        assert reply.json()["related"] is True
        # When it searches and reads the profile card
        results = http.get(f"{graph}/search", params={"q": "alice tea"}).json()["results"]
        card = http.get(f"{graph}/profile-card").json()
        # Then Alice scores name +3 and observation +1, with her relation, and the card shows her
        assert [(r["entity"]["name"], r["score"]) for r in results] == [("Alice", 4)]
        assert results[0]["relations"][0]["target"] == "Acme"
        assert "• Alice (person): likes tea" in card["text"]
        # When the fact is superseded (a curl-style form content type must not matter)
        obs_id = results[0]["entity"]["observations"][0]["id"]
        reply = http.post(
            f"{graph}/observations/{obs_id}/supersede",
            content='{"content": "likes coffee"}',
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert reply.status_code == 200, reply.text
        # Then the current graph has the new fact and history both
        current = http.get(graph).json()
        alice = next(e for e in current["entities"] if e["name"] == "Alice")
        assert [o["content"] for o in alice["observations"]] == ["likes coffee"]
        history = http.get(f"{graph}/entities/Alice/history").json()
        assert [o["content"] for o in history["observations"]] == ["likes tea", "likes coffee"]
        # And bad input is a 4xx with the error body, unknown ids 404
        bad = http.post(f"{graph}/entities", json={"entities": [{"name": ""}]})
        assert bad.status_code == 422
        assert bad.json()["error"]["code"] == "invalid_id"
        assert http.post(f"{graph}/observations/NOPE/invalidate", json={}).status_code == 404
        assert http.get(f"{live_server.url}/v1/capabilities").json()["graph"] is True
        # And deleting the entity removes it and its relation
        assert http.delete(f"{graph}/entities/Alice").status_code == 204
        assert http.get(graph).json()["relations"] == []
