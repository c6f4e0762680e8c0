"""Every /graph route of API.md through the real handler, on SQLite and on DynamoDB (moto)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support import ApiClient, Reply, scope_path, text_entry

GRAPH = scope_path("demo", "alice") + "/graph"
EMPTY_GRAPH = {"entities": [], "relations": [], "truncated": False, "next_cursor": None}


def _graph(app: str = "demo", user: str = "alice") -> str:
    return scope_path(app, user) + "/graph"


def _ok(reply: Reply, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.body


def _create(api: ApiClient, *entities: dict[str, Any], graph: str = GRAPH, project: str | None = None) -> Any:
    body: dict[str, Any] = {"entities": list(entities)}
    if project:
        body["project_id"] = project
    return _ok(api.post(graph + "/entities", body))["entities"]


def _facts(entity: dict[str, Any]) -> list[str]:
    return [o["content"] for o in entity["observations"]]


def _whole(api: ApiClient, graph: str = GRAPH, **query: str) -> Any:
    return _ok(api.get(graph, query=query or None))


# -- entities and observations ---------------------------------------------------------------------


def test_create_entities_upserts_without_duplicates(api: ApiClient) -> None:
    # Given an entity created with two observations
    [first] = _create(api, {"name": "Alice", "entity_type": "person", "observations": ["likes tea", "lives in Paris"]})
    assert first["entity_type"] == "person"
    assert _facts(first) == ["likes tea", "lives in Paris"]
    # When it is created again with a new type, a repeated and a new observation
    [again] = _create(api, {"name": "Alice", "entity_type": "friend", "observations": ["likes tea", "has a cat"]})
    # Then there is one entity, with the new type, a later updated_at and no duplicate observation
    assert again["entity_type"] == "friend"
    assert again["updated_at"] >= first["updated_at"]
    assert sorted(_facts(again)) == ["has a cat", "likes tea", "lives in Paris"]
    graph = _whole(api)
    assert [e["name"] for e in graph["entities"]] == ["Alice"]
    # And an entity created without a type gets "general", and a re-create without type keeps the type
    [bob] = _create(api, {"name": "Bob"})
    assert bob["entity_type"] == "general"
    [alice] = _create(api, {"name": "Alice"})
    assert alice["entity_type"] == "friend"


def test_add_observations_to_known_entity_with_valid_from(api: ApiClient) -> None:
    _create(api, {"name": "Alice"})
    # When observations are added with a valid_from
    added = _ok(
        api.post(
            GRAPH + "/entities/Alice/observations", {"observations": ["runs"], "valid_from": "2020-01-01T00:00:00Z"}
        )
    )["observations"]
    # Then they carry it, with recorded_at now and open valid/transaction time ends
    [obs] = added
    assert obs["content"] == "runs"
    assert obs["valid_from"] == "2020-01-01T00:00:00.000Z"
    assert obs["valid_to"] is None
    assert obs["expired_at"] is None
    assert obs["recorded_at"] > obs["valid_from"]
    assert len(obs["id"]) == 26


def test_add_observations_to_unknown_entity_is_404_and_stores_nothing(api: ApiClient) -> None:
    reply = api.post(GRAPH + "/entities/Nobody/observations", {"observations": ["x y z"]})
    assert reply.status == 404
    assert reply.error_code == "entity_not_found"
    assert _whole(api) == EMPTY_GRAPH


def test_entity_names_with_slashes_hashes_and_unicode(api: ApiClient) -> None:
    # Given entity names that need escaping in paths and keys
    names = ["a/b", "x#y%z", "東京 tower"]
    _create(api, *({"name": n, "observations": [f"fact about {n}"]} for n in names))
    # Then each is addressable by its percent-encoded name
    from urllib.parse import quote

    for name in names:
        history = _ok(api.get(GRAPH + f"/entities/{quote(name, safe='')}/history"))
        assert history["name"] == name
        assert _facts(history) == [f"fact about {name}"]
    assert _ok(api.get(GRAPH + "/search", query={"q": "東京"}))["results"][0]["entity"]["name"] == "東京 tower"


def test_invalidate_observation_keeps_history_and_time_travel(api: ApiClient) -> None:
    # Given a fact valid since 2020
    _create(api, {"name": "Alice", "entity_type": "person"})
    [obs] = _ok(
        api.post(
            GRAPH + "/entities/Alice/observations",
            {"observations": ["works at Acme"], "valid_from": "2020-01-01T00:00:00Z"},
        )
    )["observations"]
    # When it is invalidated as of 2024
    closed = _ok(api.post(GRAPH + f"/observations/{obs['id']}/invalidate", {"valid_to": "2024-01-01T00:00:00Z"}))
    assert closed["valid_to"] == "2024-01-01T00:00:00.000Z"
    assert closed["expired_at"] is not None
    # Then it is absent from the current graph, the profile card and search
    assert _facts(_whole(api)["entities"][0]) == []
    assert "Acme" not in _ok(api.get(GRAPH + "/profile-card"))["text"]
    assert _ok(api.get(GRAPH + "/search", query={"q": "acme"}))["results"] == []
    # But present in history and in the graph as of 2022
    assert _facts(_ok(api.get(GRAPH + "/entities/Alice/history"))) == ["works at Acme"]
    then = _whole(api, as_of="2022-06-01T00:00:00Z")
    assert _facts(then["entities"][0]) == ["works at Acme"]
    # And not as of 2025 nor 2019
    assert all(_facts(e) == [] for e in _whole(api, as_of="2025-01-01T00:00:00Z")["entities"])
    assert all(_facts(e) == [] for e in _whole(api, as_of="2019-01-01T00:00:00Z")["entities"])
    # And invalidating again changes nothing
    assert _ok(api.post(GRAPH + f"/observations/{obs['id']}/invalidate", {})) == closed


def test_fact_recorded_after_t_is_absent_from_recorded_as_of_t(api: ApiClient) -> None:
    # Given one fact recorded before T and one after
    _create(api, {"name": "Alice", "observations": ["early fact"]})
    time.sleep(0.01)
    moment = _whole(api)["entities"][0]["observations"][0]["recorded_at"]
    time.sleep(0.01)
    t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".000Z"
    t = max(t, moment)
    time.sleep(0.01)
    _ok(api.post(GRAPH + "/entities/Alice/observations", {"observations": ["late fact"]}))
    # When the graph is read as it was known at T
    known = _whole(api, recorded_as_of=t)
    # Then only the early fact is there, while the current graph has both
    assert _facts(known["entities"][0]) == ["early fact"]
    assert sorted(_facts(_whole(api)["entities"][0])) == ["early fact", "late fact"]


def test_recorded_as_of_before_an_invalidation_still_shows_the_fact(api: ApiClient) -> None:
    [alice] = _create(api, {"name": "Alice", "observations": ["likes tea"]})
    obs = alice["observations"][0]
    time.sleep(0.01)
    _ok(api.post(GRAPH + f"/observations/{obs['id']}/invalidate", {}))
    assert _facts(_whole(api, recorded_as_of=obs["recorded_at"])["entities"][0]) == ["likes tea"]
    assert _facts(_whole(api)["entities"][0]) == []


def test_supersede_replaces_atomically(api: ApiClient) -> None:
    [alice] = _create(api, {"name": "Alice", "observations": ["lives in Paris"]})
    old = alice["observations"][0]
    # When superseded
    result = _ok(api.post(GRAPH + f"/observations/{old['id']}/supersede", {"content": "lives in Berlin"}))
    # Then the old one is closed and the new one current
    assert result["invalidated"]["id"] == old["id"]
    assert result["invalidated"]["expired_at"] is not None
    assert result["created"]["content"] == "lives in Berlin"
    assert _facts(_whole(api)["entities"][0]) == ["lives in Berlin"]
    history = _ok(api.get(GRAPH + "/entities/Alice/history"))
    assert _facts(history) == ["lives in Paris", "lives in Berlin"]
    # And superseding the closed one again is a conflict that changes nothing
    again = api.post(GRAPH + f"/observations/{old['id']}/supersede", {"content": "lives in Rome"})
    assert again.status == 409
    assert _facts(_whole(api)["entities"][0]) == ["lives in Berlin"]


def test_supersede_into_an_existing_current_fact_is_a_conflict_and_nothing_changes(api: ApiClient) -> None:
    [alice] = _create(api, {"name": "Alice", "observations": ["likes tea", "likes coffee"]})
    tea = alice["observations"][0]
    reply = api.post(GRAPH + f"/observations/{tea['id']}/supersede", {"content": "likes coffee"})
    assert reply.status == 409
    assert sorted(_facts(_whole(api)["entities"][0])) == ["likes coffee", "likes tea"]
    assert len(_ok(api.get(GRAPH + "/search", query={"q": "tea"}))["results"]) == 1


def test_delete_observation_and_entity_cascade(api: ApiClient) -> None:
    [alice] = _create(api, {"name": "Alice", "observations": ["likes tea", "likes jazz"]})
    _ok(api.post(GRAPH + "/relations", {"relations": [{"source": "Alice", "relation_type": "knows", "target": "Bob"}]}))
    # When one observation is deleted
    _ok(api.delete(GRAPH + f"/observations/{alice['observations'][0]['id']}"), 204)
    # Then it is gone even from history
    assert _facts(_ok(api.get(GRAPH + "/entities/Alice/history"))) == ["likes jazz"]
    # When the entity is deleted
    _ok(api.delete(GRAPH + "/entities/Alice"), 204)
    # Then its observations and relations are gone too; Bob stays
    graph = _whole(api)
    assert [e["name"] for e in graph["entities"]] == ["Bob"]
    assert graph["relations"] == []
    assert _ok(api.get(GRAPH + "/search", query={"q": "jazz"}))["results"] == []
    assert api.get(GRAPH + "/entities/Alice/history").status == 404
    assert api.delete(GRAPH + "/entities/Alice").status == 404
    # And the name can be used afresh
    [fresh] = _create(api, {"name": "Alice", "observations": ["likes jazz"]})
    assert _facts(fresh) == ["likes jazz"]


# -- relations ---------------------------------------------------------------------------------


def test_relations_are_not_duplicated_and_create_missing_endpoints(api: ApiClient) -> None:
    _create(api, {"name": "Alice", "entity_type": "person"})
    rel = {"source": "Alice", "relation_type": "works_at", "target": "Acme"}
    [first] = _ok(api.post(GRAPH + "/relations", {"relations": [rel]}))["relations"]
    [second] = _ok(api.post(GRAPH + "/relations", {"relations": [rel]}))["relations"]
    assert first["id"] == second["id"]
    graph = _whole(api)
    assert len(graph["relations"]) == 1
    assert {e["name"]: e["entity_type"] for e in graph["entities"]} == {"Acme": "general", "Alice": "person"}
    # When invalidated, it leaves the current graph but stays in history, and a new identical one can be made
    closed = _ok(api.post(GRAPH + f"/relations/{first['id']}/invalidate", {}))
    assert closed["expired_at"] is not None
    assert _whole(api)["relations"] == []
    history = _ok(api.get(GRAPH + "/entities/Acme/history"))
    assert [r["id"] for r in history["relations"]] == [first["id"]]
    [renewed] = _ok(api.post(GRAPH + "/relations", {"relations": [rel]}))["relations"]
    assert renewed["id"] != first["id"]
    # And a delete removes it for good
    _ok(api.delete(GRAPH + f"/relations/{renewed['id']}"), 204)
    assert len(_ok(api.get(GRAPH + "/entities/Acme/history"))["relations"]) == 1
    assert api.delete(GRAPH + f"/relations/{renewed['id']}").status == 404


# -- reads -------------------------------------------------------------------------------------


def test_search_nodes_scores_and_ranks(api: ApiClient) -> None:
    _create(
        api,
        {"name": "Coffee Shop", "entity_type": "place", "observations": ["sells coffee", "coffee is good"]},
        {"name": "Alice", "entity_type": "person", "observations": ["drinks coffee"]},
        {"name": "Bob", "entity_type": "coffee lover", "observations": ["likes tea"]},
        {"name": "Carol", "observations": ["likes tea"]},
    )
    _ok(
        api.post(
            GRAPH + "/relations",
            {"relations": [{"source": "Alice", "relation_type": "visits", "target": "Coffee Shop"}]},
        )
    )
    results = _ok(api.get(GRAPH + "/search", query={"q": "the coffee"}))["results"]
    # Then name +3 (+2 obs) = 5, type +2, observation +1; Carol is absent; relations come along
    assert [(r["entity"]["name"], r["score"]) for r in results] == [("Coffee Shop", 5), ("Bob", 2), ("Alice", 1)]
    assert [r["relation_type"] for r in results[0]["relations"]] == ["visits"]
    assert len(_ok(api.get(GRAPH + "/search", query={"q": "coffee", "limit": 1}))["results"]) == 1
    assert _ok(api.get(GRAPH + "/search", query={"q": "the of"}))["results"] == []


def test_open_nodes_returns_named_entities_and_their_relations(api: ApiClient) -> None:
    _create(api, {"name": "Alice"}, {"name": "Bob"}, {"name": "Carol"})
    _ok(api.post(GRAPH + "/relations", {"relations": [{"source": "Alice", "relation_type": "knows", "target": "Bob"}]}))
    opened = _ok(api.get(GRAPH + "/nodes", query=[("name", "Alice"), ("name", "Nobody")]))
    assert [e["name"] for e in opened["entities"]] == ["Alice"]
    assert [(r["source"], r["target"]) for r in opened["relations"]] == [("Alice", "Bob")]


def test_profile_card_lists_recent_entities_with_newest_facts(api: ApiClient) -> None:
    assert _ok(api.get(GRAPH + "/profile-card")) == {"text": "", "entities": [], "relations": [], "truncated": False}
    _create(api, {"name": "Acme", "entity_type": "company", "observations": ["makes anvils"]})
    time.sleep(0.005)
    _create(api, {"name": "Alice", "entity_type": "person", "observations": ["a", "likes tea", "in Paris", "has cat"]})
    card = _ok(api.get(GRAPH + "/profile-card", query={"max_entities": 1, "max_observations": 2}))
    assert card["text"] == "[Known about the user]\n• Alice (person): in Paris; has cat"
    full = _ok(api.get(GRAPH + "/profile-card"))["text"].splitlines()
    assert full[1].startswith("• Alice (person): ")
    assert full[2] == "• Acme (company): makes anvils"
    # When Acme gets a new fact it moves to the top
    time.sleep(0.005)
    _ok(api.post(GRAPH + "/entities/Acme/observations", {"observations": ["based in Ohio"]}))
    assert (
        _ok(api.get(GRAPH + "/profile-card"))["text"].splitlines()[1] == "• Acme (company): makes anvils; based in Ohio"
    )


def test_profile_card_tells_relations_on_their_lines(api: ApiClient) -> None:
    # Given the README's graph: a fact about Pixel, then alice owns Pixel (alice made by the relation)
    _ok(api.post(GRAPH + "/tools/remember", {"entity": "Pixel", "entity_type": "dog", "facts": ["likes the beach"]}))
    time.sleep(0.005)
    _ok(api.post(GRAPH + "/tools/relate", {"source": "alice", "relation": "owns", "target": "Pixel"}))
    # Then the card tells the relation on alice's line, and lists it
    card = _ok(api.get(GRAPH + "/profile-card"))
    assert card["text"] == "[Known about the user]\n• alice: owns Pixel\n• Pixel (dog): likes the beach"
    assert [(r["source"], r["relation_type"], r["target"]) for r in card["relations"]] == [("alice", "owns", "Pixel")]
    # And when alice is off the card, Pixel's line tells the relation whole
    only = _ok(api.get(GRAPH + "/profile-card", query={"max_entities": 1}))
    assert only["text"] == "[Known about the user]\n• alice: owns Pixel"
    time.sleep(0.005)
    _ok(api.post(GRAPH + "/tools/remember", {"entity": "Pixel", "facts": ["is three"]}))
    only = _ok(api.get(GRAPH + "/profile-card", query={"max_entities": 1}))
    assert only["text"] == "[Known about the user]\n• Pixel (dog): likes the beach; is three; alice owns Pixel"
    # And a relation no longer current is not told; the newest max_observations relations a line are
    for target in ("Tom", "Rex", "Kit"):
        time.sleep(0.005)
        _ok(api.post(GRAPH + "/tools/relate", {"source": "alice", "relation": "feeds", "target": target}))
    lines = _ok(api.get(GRAPH + "/profile-card", query={"max_observations": 2}))["text"].splitlines()
    assert "• alice: feeds Rex; feeds Kit" in lines
    owns = _ok(api.get(GRAPH + "/nodes", query=[("name", "alice")]))["relations"]
    kit = next(r for r in owns if r["target"] == "Kit")
    _ok(api.post(GRAPH + f"/relations/{kit['id']}/invalidate", {}))
    lines = _ok(api.get(GRAPH + "/profile-card", query={"max_observations": 2}))["text"].splitlines()
    assert "• alice: feeds Tom; feeds Rex" in lines


def test_episodes_are_stored_listed_and_searched(api: ApiClient) -> None:
    entries = [text_entry("I adopted a cat named Tom"), text_entry("   "), text_entry("I moved to Berlin")]
    assert _ok(api.post(GRAPH + "/episodes", {"session_id": "s1", "entries": entries})) == {"stored": 2}
    _ok(api.post(GRAPH + "/episodes", {"session_id": "s2", "entries": [text_entry("Berlin is cold")]}))
    listed = _ok(api.get(GRAPH + "/episodes"))["episodes"]
    assert len(listed) == 3
    assert [e["text"] for e in _ok(api.get(GRAPH + "/episodes", query={"session_id": "s2"}))["episodes"]] == [
        "Berlin is cold"
    ]
    found = _ok(api.get(GRAPH + "/episodes", query={"q": "berlin"}))["episodes"]
    assert {e["text"] for e in found} == {"I moved to Berlin", "Berlin is cold"}
    assert all(0 < e["score"] <= 1 for e in found)
    # Re-storing a session replaces it
    _ok(api.post(GRAPH + "/episodes", {"session_id": "s1", "entries": [text_entry("only this")]}))
    assert len(_ok(api.get(GRAPH + "/episodes"))["episodes"]) == 2
    assert _ok(api.get(GRAPH + "/episodes", query={"q": "cat"}))["episodes"] == []


# -- agent tools -------------------------------------------------------------------------------


def test_remember_and_relate_tools(api: ApiClient) -> None:
    first = _ok(
        api.post(GRAPH + "/tools/remember", {"entity": "Alice", "entity_type": "person", "facts": ["likes tea"]})
    )
    assert first == {"stored": True, "entity": "Alice", "facts_added": 1}
    # remember without a type keeps the known type and does not repeat facts
    again = _ok(api.post(GRAPH + "/tools/remember", {"entity": "Alice", "facts": ["likes tea", "has a cat"]}))
    assert again == {"stored": True, "entity": "Alice", "facts_added": 1}
    assert _ok(api.get(GRAPH + "/entities/Alice/history"))["entity_type"] == "person"
    related = _ok(api.post(GRAPH + "/tools/relate", {"source": "Alice", "relation": "owns", "target": "Tom"}))
    assert related == {"related": True, "source": "Alice", "relation": "owns", "target": "Tom"}
    assert [r["relation_type"] for r in _whole(api)["relations"]] == ["owns"]
    # And the schemas an LLM gets name both tools, with the fields the routes take
    from agentmem.graph.tools import TOOL_SCHEMAS, anthropic_tools, openai_tools

    assert [s["name"] for s in TOOL_SCHEMAS] == ["remember", "relate"]
    assert TOOL_SCHEMAS[0]["parameters"]["required"] == ["entity", "facts"]
    assert [t["input_schema"] for t in anthropic_tools()] == [s["parameters"] for s in TOOL_SCHEMAS]
    assert [t["function"]["name"] for t in openai_tools()] == ["remember", "relate"]


# -- bad input ---------------------------------------------------------------------------------

LONG = "x" * 257


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/entities", {"entities": [{"name": ""}]}),
        ("post", "/entities", {"entities": [{"name": LONG}]}),
        ("post", "/entities", {"entities": [{"name": "A", "entity_type": ""}]}),
        ("post", "/entities", {"entities": [{"name": "A", "observations": [42]}]}),
        ("post", "/entities", {"entities": [{"name": "A", "observations": ["  "]}]}),
        ("post", "/entities", {"entities": [{"name": 7}]}),
        ("post", "/entities", {"entities": []}),
        ("post", "/entities", {"entities": [{"name": "A"}], "project_id": ""}),
        ("post", "/entities/A/observations", {"observations": [None]}),
        ("post", "/entities/A/observations", {"observations": ["ok"], "valid_from": "yesterday"}),
        ("post", "/entities/A/observations", {"observations": ["ok"], "valid_from": "2020-01-01T00:00:00"}),
        ("post", f"/entities/{LONG}/observations", {"observations": ["ok"]}),
        ("post", "/relations", {"relations": [{"source": "A", "relation_type": "r", "target": ""}]}),
        ("post", "/relations", {"relations": [{"source": LONG, "relation_type": "r", "target": "B"}]}),
        ("post", "/tools/remember", {"entity": "A", "facts": [1]}),
        ("post", "/tools/remember", {"entity": "A", "facts": []}),
        ("post", "/tools/relate", {"source": "A", "relation": "", "target": "B"}),
        ("post", f"/observations/{LONG}/invalidate", {}),
        ("post", "/observations/X/supersede", {"content": 5}),
        ("post", "/episodes", {"session_id": LONG, "entries": []}),
        ("get", "/search", None),
        ("get", "/search?q=abc&limit=0", None),
        ("get", "?as_of=notatime", None),
        ("get", "?recorded_as_of=2020-01-01T00:00:00", None),
        ("get", "/profile-card?max_entities=0", None),
        ("get", "/nodes", None),
        ("get", f"/entities/{LONG}/history", None),
    ],
)
def test_bad_input_is_4xx_and_changes_nothing(api: ApiClient, method: str, path: str, body: Any) -> None:
    # Given a graph with one entity
    _create(api, {"name": "A", "observations": ["keep me"]})
    before = _whole(api)
    # When a malformed request arrives
    if method == "post":
        reply = api.post(GRAPH + path, body)
    else:
        route, _, query = path.partition("?")
        reply = api.get(GRAPH + route, query=dict(p.split("=") for p in query.split("&")) if query else None)
    # Then it is a 4xx with the error body, and the graph is unchanged
    assert 400 <= reply.status < 500, reply.body
    assert reply.error_code
    assert _whole(api) == before


def test_malformed_json_is_400(api: ApiClient) -> None:
    reply = api.post(GRAPH + "/entities", raw_body="{not json")
    assert reply.status == 400
    assert reply.error_code == "malformed_json"


def test_unknown_ids_are_404(api: ApiClient) -> None:
    for path in ("/observations/NOPE/invalidate", "/relations/NOPE/invalidate"):
        reply = api.post(GRAPH + path, {})
        assert reply.status == 404, path
    assert api.post(GRAPH + "/observations/NOPE/supersede", {"content": "x"}).status == 404
    assert api.delete(GRAPH + "/observations/NOPE").status == 404
    assert api.delete(GRAPH + "/relations/NOPE").status == 404


# -- isolation ---------------------------------------------------------------------------------


def test_other_users_and_apps_cannot_see_or_touch_facts(api: ApiClient) -> None:
    # Given Alice's fact and relation in app demo
    [alice] = _create(api, {"name": "Alice", "observations": ["secret fact"]})
    obs_id = alice["observations"][0]["id"]
    [rel] = _ok(
        api.post(GRAPH + "/relations", {"relations": [{"source": "Alice", "relation_type": "knows", "target": "Bob"}]})
    )["relations"]
    for other in (_graph("demo", "mallory"), _graph("other-app", "alice")):
        # Then another user or another app sees nothing
        assert _whole(api, other) == EMPTY_GRAPH
        assert _ok(api.get(other + "/search", query={"q": "secret"}))["results"] == []
        assert _ok(api.get(other + "/profile-card"))["text"] == ""
        assert api.get(other + "/entities/Alice/history").status == 404
        # And cannot touch the facts by guessing their ids
        assert api.post(other + f"/observations/{obs_id}/invalidate", {}).status == 404
        assert api.post(other + f"/observations/{obs_id}/supersede", {"content": "hacked"}).status == 404
        assert api.delete(other + f"/observations/{obs_id}").status == 404
        assert api.post(other + f"/relations/{rel['id']}/invalidate", {}).status == 404
        assert api.delete(other + f"/relations/{rel['id']}").status == 404
        assert api.delete(other + "/entities/Alice").status == 404
    # And Alice's graph is intact
    graph = _whole(api)
    assert _facts(next(e for e in graph["entities"] if e["name"] == "Alice")) == ["secret fact"]
    assert len(graph["relations"]) == 1


def test_project_sees_global_and_own_facts_only(api: ApiClient) -> None:
    # Given a global fact, a fact in project p1 and one in p2
    _create(api, {"name": "Alice", "entity_type": "person", "observations": ["global fact"]})
    _create(api, {"name": "Alice", "observations": ["p1 fact"]}, project="p1")
    [p2] = _create(api, {"name": "Alice", "observations": ["p2 fact"]}, project="p2")
    # Then the global graph has only the global fact
    assert _facts(_whole(api)["entities"][0]) == ["global fact"]
    # And p1 sees global + p1, with the global type inherited
    [p1_alice] = _whole(api, project_id="p1")["entities"]
    assert sorted(_facts(p1_alice)) == ["global fact", "p1 fact"]
    assert p1_alice["entity_type"] == "person"
    found = _ok(api.get(GRAPH + "/search", query={"q": "fact", "project_id": "p1"}))["results"]
    assert [(r["entity"]["name"], r["score"]) for r in found] == [("Alice", 2)]
    assert "p2 fact" not in _ok(api.get(GRAPH + "/profile-card", query={"project_id": "p1"}))["text"]
    # And p1 cannot touch p2's facts by id, while the global scope cannot see project facts
    p2_id = p2["observations"][-1]["id"]
    assert api.post(GRAPH + f"/observations/{p2_id}/invalidate", {"project_id": "p1"}).status == 404
    assert api.post(GRAPH + f"/observations/{p2_id}/invalidate", {}).status == 404
    # And deleting Alice in p1 deletes only p1's entity record and facts
    _ok(api.delete(GRAPH + "/entities/Alice", query={"project_id": "p1"}), 204)
    assert _facts(_whole(api, project_id="p1")["entities"][0]) == ["global fact"]
    assert sorted(_facts(_whole(api, project_id="p2")["entities"][0])) == ["global fact", "p2 fact"]


def test_deleting_a_project_removes_its_graph(api: ApiClient) -> None:
    _create(api, {"name": "Alice", "observations": ["global fact"]})
    _create(api, {"name": "Zed", "observations": ["project fact"]}, project="p1")
    _ok(api.post(GRAPH + "/episodes", {"session_id": "s", "entries": [text_entry("hello there")], "project_id": "p1"}))
    _ok(api.delete(scope_path("demo", "alice") + "/projects/p1"))
    graph = _whole(api, project_id="p1")
    assert [e["name"] for e in graph["entities"]] == ["Alice"]
    assert _ok(api.get(GRAPH + "/episodes", query={"project_id": "p1"}))["episodes"] == []


def test_writes_are_refused_while_the_user_is_being_deleted(api: ApiClient, container: Any) -> None:
    from agentmem import users
    from agentmem.keys import UserRef

    _create(api, {"name": "Alice"})
    mark = dict(zip(("pk", "sk"), users.deletion_mark_key(UserRef("demo", "alice")), strict=True))
    container.table.batch_write(puts=users.mark_items(mark))
    reply = api.post(GRAPH + "/tools/remember", {"entity": "Alice", "facts": ["new"]})
    assert reply.status == 409
    assert reply.error_code == "user_deletion_in_progress"


def test_capabilities_report_graph(api: ApiClient) -> None:
    assert _ok(api.get("/v1/capabilities"))["graph"] is True


def test_refused_requests_leave_no_trace_in_the_user_registry(api: ApiClient, container: Any) -> None:
    from agentmem import users
    from agentmem.keys import UserRef

    # Given a user with a global graph only
    _create(api, {"name": "A"})
    # When requests in project p9 fail (unknown entity, unknown ids, bad body)
    assert api.post(GRAPH + "/entities/Nobody/observations", {"observations": ["x"], "project_id": "p9"}).status == 404
    assert api.post(GRAPH + "/observations/NOPE/invalidate", {"project_id": "p9"}).status == 404
    assert api.post(GRAPH + "/entities", {"entities": [{"name": ""}], "project_id": "p9"}).status == 422
    # Then p9 was never registered as one of the user's scopes
    scopes = users.registered_scopes(container.table, UserRef("demo", "alice"))
    assert [s.project_id for s in scopes] == [None]


def test_search_by_a_common_type_returns_the_best_within_the_limit(api: ApiClient) -> None:
    # Given many entities of one type, one of which also has the word in its name, one in a fact
    _create(api, *({"name": f"P{i:02d}", "entity_type": "person"} for i in range(12)))
    _create(
        api,
        {"name": "Person Zed", "entity_type": "robot"},
        {"name": "P99", "entity_type": "person", "observations": ["a person indeed"]},
    )
    # When searching the type word with a small limit
    results = _ok(api.get(GRAPH + "/search", query={"q": "person", "limit": 4}))["results"]
    # Then the name match (3) and the type+fact match (2+1) lead, then type-only matches (2) by name
    assert [(r["entity"]["name"], r["score"]) for r in results] == [
        ("P99", 3),
        ("Person Zed", 3),
        ("P00", 2),
        ("P01", 2),
    ]


def test_openapi_document_lists_the_graph_routes(api: ApiClient) -> None:
    paths = _ok(api.get("/v1/openapi.json"))["paths"]
    expected = ["", "/entities", "/entities/{name}/observations", "/search", "/profile-card", "/tools/remember"]
    assert all(f"/v1/apps/{{app}}/users/{{user}}/graph{suffix}" in paths for suffix in expected)


def test_invalidate_with_valid_to_before_valid_from_is_422_and_changes_nothing(api: ApiClient) -> None:
    _create(api, {"name": "Alice"})
    [obs] = _ok(
        api.post(
            GRAPH + "/entities/Alice/observations", {"observations": ["runs"], "valid_from": "2024-01-01T00:00:00Z"}
        )
    )["observations"]
    reply = api.post(GRAPH + f"/observations/{obs['id']}/invalidate", {"valid_to": "2023-01-01T00:00:00Z"})
    assert reply.status == 422
    assert _facts(_whole(api)["entities"][0]) == ["runs"]


def test_erasure_removes_the_graph_and_counts_only_facts(api: ApiClient, container: Any) -> None:
    from agentmem.container import Container, set_container
    from tests.support import inline_deletion_runner

    set_container(Container(container.settings, table=container.table, deletion_runner=inline_deletion_runner()))
    # Given a graph in the global scope and a project: 3 entities, 3 observations, 1 relation, 2 episodes
    _create(api, {"name": "Alice", "entity_type": "person", "observations": ["likes tea", "in Paris"]})
    _create(api, {"name": "Zed", "observations": ["project fact"]}, project="p1")
    _ok(api.post(GRAPH + "/relations", {"relations": [{"source": "Alice", "relation_type": "knows", "target": "Bob"}]}))
    _ok(api.post(GRAPH + "/episodes", {"session_id": "s", "entries": [text_entry("hello"), text_entry("bye now")]}))
    # When the user's export is read, then the user is erased
    exported = _ok(api.get(scope_path("demo", "alice") + "/export"))
    started = _ok(api.delete(scope_path("demo", "alice")), 202)
    status = _ok(api.get(scope_path("demo", "alice") + f"/deletions/{started['deletion_id']}"))
    # Then the export held the facts without the graph's index items, the receipt counts facts only
    graph = exported["graph"]
    assert (len(graph["entities"]), len(graph["observations"]), len(graph["relations"])) == (3, 3, 1)
    assert status["status"] == "SUCCEEDED"
    assert status["deleted"]["graph_items"] == 7
    assert status["deleted"]["episodes"] == 2
    # And nothing of the graph is left in any scope
    assert _whole(api) == EMPTY_GRAPH
    assert _whole(api, project_id="p1") == EMPTY_GRAPH
