"""Issue 20: the console in headless Chromium against ``agentmem serve --auth required``.

Each view loads with data seeded through the REST API, each action changes what the API then returns
(checked with httpx afterwards), a wrong key shows a clear message, links open their view, and every
view writes its screenshot to tests/browser/output/.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Console, api, create_key, open_console, scope
from tests.e2e.conftest import LiveServer, start_server

APP = "shop"
VIEWS = ("memories", "graph", "card", "usage", "erase")
SEEDED = [
    ("My favourite food is ramen with extra garlic", {"topic": "food", "rating": 5}),
    ("I am allergic to peanuts and cashews", {"topic": "health"}),
    ("Next summer I travel to Lisbon by train", {"topic": "travel"}),
    ("I booked a hotel in Kyoto for April", {"topic": "travel", "rating": 4}),
]


@dataclass
class Site:
    server: LiveServer
    key: str
    other_app_key: str

    @property
    def url(self) -> str:
        return self.server.url

    def http(self) -> httpx.Client:
        return api(self.url, self.key)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    db = tmp_path_factory.mktemp("console") / "memory.db"
    server = start_server(db, {"MEMORY_AUTH": "required"}, args=("--workers", "1"))
    try:
        yield Site(server, create_key(db, APP), create_key(db, "another-app"))
    finally:
        server.stop()


@pytest.fixture
def console(browser: Any, site: Site, output: Path) -> Iterator[Console]:
    opened = open_console(browser, site.url, output)
    yield opened
    opened.page.context.close()
    assert opened.problems == [], "the console logged errors (a CSP violation or a script error)"


def seed_memories(http: httpx.Client, user: str, fillers: int = 21) -> None:
    """The four SEEDED entries and ``fillers`` work notes, each a minute apart; one with an expiry."""
    entries = [
        {
            "content": {"role": "user", "parts": [{"text": text}]},
            "author": "user",
            "timestamp": f"2026-03-01T10:{n:02d}:00Z",
            "metadata": metadata,
        }
        for n, (text, metadata) in enumerate(SEEDED)
    ]
    entries += [
        {
            "content": {"role": "user", "parts": [{"text": f"Meeting note {n}: the quarterly budget review"}]},
            "author": "assistant",
            "timestamp": f"2026-03-02T09:{n:02d}:00Z",
            "metadata": {"topic": "work", "n": n},
        }
        for n in range(fillers)
    ]
    entries[0]["expires_at"] = "2099-01-01T00:00:00Z"
    reply = http.put(f"{scope(APP, user)}/sessions/s1/memories", json={"entries": entries})
    assert reply.status_code == 200, reply.text


def seed_graph(http: httpx.Client, user: str) -> None:
    """Ana (person) works at Acme, lives in Lyon; she lived in Madrid from 2019 to 2021 (a past fact)."""
    graph = f"{scope(APP, user)}/graph"
    entities = [
        {"name": "Ana", "entity_type": "person", "observations": ["likes green tea", "works remotely"]},
        {"name": "Acme", "entity_type": "company", "observations": ["makes rockets"]},
        {"name": "Lyon", "entity_type": "place", "observations": ["a city in France"]},
    ]
    assert http.post(f"{graph}/entities", json={"entities": entities}).status_code == 200
    relations = [
        {"source": "Ana", "relation_type": "works_at", "target": "Acme"},
        {"source": "Ana", "relation_type": "lives_in", "target": "Lyon"},
    ]
    assert http.post(f"{graph}/relations", json={"relations": relations}).status_code == 200
    added = http.post(
        f"{graph}/entities/Ana/observations",
        json={"observations": ["lived in Madrid"], "valid_from": "2019-01-01T00:00:00Z"},
    ).json()["observations"][0]
    closed = http.post(f"{graph}/observations/{added['id']}/invalidate", json={"valid_to": "2021-01-01T00:00:00Z"})
    assert closed.status_code == 200, closed.text


def ids_on_page(page: Any) -> list[str | None]:
    return [row.get_attribute("data-id") for row in page.locator("#entries-body tr[data-id]").all()]


def listed_entities(page: Any) -> list[tuple[str, str, str]]:
    items = page.locator("#entity-list li[data-name]").all()
    return [
        (
            item.locator(".entity-name").inner_text(),
            item.locator(".tag").inner_text(),
            item.locator(".count").inner_text(),
        )
        for item in items
    ]


def api_entities(graph: dict[str, Any]) -> list[tuple[str, str, str]]:
    def facts(n: int) -> str:
        return f"{n} fact{'' if n == 1 else 's'}"

    return [(e["name"], e["entity_type"], facts(len(e["observations"]))) for e in graph["entities"]]


def test_signing_in_opens_memories_newest_first_with_paging_metadata_and_expiry(site: Site, console: Console) -> None:
    with site.http() as http:
        seed_memories(http, "ana")
        # When a person opens a link without a key / Then the sign-in form asks for one
        console.page.goto(console.url(app=APP, user="ana", view="memories"))
        expect(console.page.locator("#message")).to_contain_text("needs an API key")
        # When they sign in with the app's key
        page = console.sign_in(site.key, APP, "ana")
        # Then the newest 20 entries are listed in the API's order, and "Load more" brings the rest
        first = http.get(f"{scope(APP, 'ana')}/memories", params={"limit": 20}).json()
        assert ids_on_page(page) == [e["id"] for e in first["entries"]]
        page.click("#load-more")
        expect(page.locator("#entries-body tr[data-id]")).to_have_count(25)
        rest = http.get(f"{scope(APP, 'ana')}/memories", params={"limit": 20, "cursor": first["next_cursor"]}).json()
        assert ids_on_page(page) == [e["id"] for e in first["entries"] + rest["entries"]]
        expect(page.locator("#load-more")).to_be_hidden()
        # And an entry's metadata and expiry are shown
        ramen = page.locator("#entries-body tr", has_text="ramen")
        expect(ramen.locator("code.metadata")).to_have_text('{"topic":"food","rating":5}')
        expect(ramen.locator("td.expires")).to_have_text("2099-01-01 00:00:00Z")
        console.shot("console-memories.png")


def test_search_in_each_mode_shows_the_apis_hits_and_scores_with_min_score_and_filters(
    site: Site, console: Console
) -> None:
    with site.http() as http:
        page = console.sign_in(site.key, APP, "ana")
        search = f"{scope(APP, 'ana')}/memories/search"
        modes = http.get("/v1/capabilities").json()["search_modes"]
        assert set(modes) == {"keyword", "semantic", "hybrid"}
        for mode in modes:
            # When a person searches in this mode
            page.fill("#search-query", "ramen garlic food")
            page.select_option("#search-mode", mode)
            page.click("#search-submit")
            expect(page.locator("#entries-caption")).to_contain_text(f"{mode} search")
            # Then the page shows the API's hits, best first, with their scores
            hits = http.post(search, json={"query": "ramen garlic food", "mode": mode, "top_k": 10}).json()["entries"]
            shown = [(r.get_attribute("data-id"), r.locator("td.score").inner_text()) for r in _rows(page)]
            assert shown == [(e["id"], f"{e['score']:.3f}") for e in hits], mode
            assert "ramen" in _rows(page)[0].inner_text()
        # When min_score and a metadata filter narrow a hybrid search
        page.select_option("#search-mode", "hybrid")
        page.fill("#search-query", "travel trip")
        page.fill("#search-min-score", "0.3")
        page.fill("#search-filter", json.dumps({"topic": "travel"}))
        page.click("#search-submit")
        expect(page.locator("#entries-caption")).to_contain_text("hybrid search")
        body = {"query": "travel trip", "mode": "hybrid", "top_k": 10, "min_score": 0.3, "filter": {"topic": "travel"}}
        hits = http.post(search, json=body).json()["entries"]
        # Then only the API's matching hits are shown
        assert hits
        assert all(h["metadata"]["topic"] == "travel" and h["score"] >= 0.3 for h in hits)
        expect(page.locator("#entries-body tr[data-id]")).to_have_count(len(hits))
        assert [r.get_attribute("data-id") for r in _rows(page)] == [h["id"] for h in hits]
        console.shot("console-memories-search.png")
        # When the filter is applied without words / Then the matching entries are listed newest first
        page.fill("#search-query", "")
        page.fill("#search-filter", json.dumps({"rating": {"$gte": 4}}))
        page.click("#search-submit")
        expect(page.locator("#entries-caption")).to_contain_text("matching the filter")
        queried = http.post(f"{scope(APP, 'ana')}/memories/query", json={"filter": {"rating": {"$gte": 4}}}).json()
        assert ids_on_page(page) == [e["id"] for e in queried["entries"]]
        assert len(queried["entries"]) == 2
        # And a filter that is not JSON is refused in the page, with a clear message
        page.fill("#search-filter", "{topic: travel")
        page.click("#search-submit")
        expect(page.locator("#message")).to_contain_text("The filter is not valid JSON")
        # And one the API refuses shows the API's own message
        page.fill("#search-filter", json.dumps({"topic": {"$near": 1}}))
        page.click("#search-submit")
        expect(page.locator("#message")).to_contain_text("(422 invalid_filter)")


def _rows(page: Any) -> list[Any]:
    return list(page.locator("#entries-body tr[data-id]").all())


def test_deleting_one_entry_and_deleting_by_filter_change_what_the_api_holds(site: Site, console: Console) -> None:
    with site.http() as http:
        seed_memories(http, "carl", fillers=3)
        page = console.sign_in(site.key, APP, "carl")
        memories = f"{scope(APP, 'carl')}/memories"
        # When a person deletes the newest entry (two clicks: the button asks again)
        newest = ids_on_page(page)[0]
        row = page.locator(f"#entries-body tr[data-id='{newest}']")
        row.locator("button.danger").click()
        expect(row.locator("button.danger")).to_have_text("Confirm delete")
        row.locator("button.danger").click()
        expect(row).to_have_count(0)
        # Then the API no longer has it
        assert http.get(f"{memories}/{newest}").status_code == 404
        # When they delete every travel entry by filter
        page.click("#delete-by-filter summary")
        page.fill("#delete-filter", json.dumps({"topic": "travel"}))
        page.click("#delete-matching")
        page.click("#delete-matching")
        expect(page.locator("#message")).to_contain_text("Deleted 2 entries")
        # Then the API holds no travel entry, and the others are still there
        assert http.post(f"{memories}/query", json={"filter": {"topic": "travel"}}).json()["entries"] == []
        left = http.get(memories).json()["entries"]
        assert len(left) == 7 - 1 - 2
        assert ids_on_page(page) == [e["id"] for e in left]


def test_editing_an_entry_corrects_it_in_the_api_and_its_history_shows_every_version(
    site: Site, console: Console
) -> None:
    with site.http() as http:
        seed_memories(http, "erin", fillers=0)
        page = console.sign_in(site.key, APP, "erin")
        memories = f"{scope(APP, 'erin')}/memories"
        lisbon = next(e for e in http.get(memories).json()["entries"] if "Lisbon" in e["content"]["parts"][0]["text"])
        row = page.locator(f"#entries-body tr[data-id='{lisbon['id']}']")
        # When a person edits the entry's text and metadata and saves
        row.locator("button.edit").click()
        editor = page.locator("#entries-body tr.editor")
        editor.locator("textarea.edit-text").fill("Next summer I travel to Porto by train")
        editor.locator("textarea.edit-metadata").fill(json.dumps({"topic": "travel", "city": "Porto"}))
        editor.locator("button.save-edit").click()
        expect(page.locator("#message")).to_contain_text("as revision 2")
        # Then the API holds the correction under the same id, and the row shows it
        stored = http.get(f"{memories}/{lisbon['id']}").json()
        assert stored["content"]["parts"] == [{"text": "Next summer I travel to Porto by train"}]
        assert stored["metadata"] == {"topic": "travel", "city": "Porto"}
        assert stored["revision"] == 2
        expect(row.locator("td.text")).to_have_text("Next summer I travel to Porto by train")
        expect(page.locator("#entries-body tr.editor")).to_have_count(0)
        # When they open its history / Then both versions are listed, the current one first
        row.locator("button.show-history").click()
        versions = page.locator("#entries-body tr.history table.versions tbody tr")
        expect(versions).to_have_count(2)
        expect(versions.nth(0).locator("td.text")).to_have_text("Next summer I travel to Porto by train")
        expect(versions.nth(1).locator("td.text")).to_have_text("Next summer I travel to Lisbon by train")
        expect(versions.nth(0)).to_contain_text("current")
        console.shot("memories-history.png")
        # When the entry changes elsewhere while they edit it / Then saving says so and changes nothing
        row.locator("button.edit").click()
        page.locator("#entries-body tr.editor textarea.edit-text").fill("Next summer I travel to Faro")
        fixed = {"content": {"role": "user", "parts": [{"text": "Next summer I fly to Porto"}]}}
        assert http.patch(f"{memories}/{lisbon['id']}", json=fixed).status_code == 200
        page.locator("#entries-body tr.editor button.save-edit").click()
        expect(page.locator("#message")).to_contain_text("revision_conflict")
        assert http.get(f"{memories}/{lisbon['id']}").json()["content"]["parts"] == [
            {"text": "Next summer I fly to Porto"}
        ]


def test_graph_is_drawn_listed_and_the_as_of_slider_shows_it_as_it_was(site: Site, console: Console) -> None:
    with site.http() as http:
        seed_graph(http, "dora")
        graph = f"{scope(APP, 'dora')}/graph"
        page = console.sign_in(site.key, APP, "dora", view="graph")
        # Then every entity and relation is drawn, and the entities are listed with their types and fact counts
        current = http.get(graph).json()
        expect(page.locator("#graph-canvas")).to_have_attribute("data-nodes", "3")
        expect(page.locator("#graph-canvas")).to_have_attribute("data-edges", "2")
        assert sorted(listed_entities(page)) == sorted(api_entities(current))
        assert ("Ana", "person", "2 facts") in listed_entities(page)
        expect(page.locator("#graph-legend")).to_contain_text("person")
        # When a person filters the list / Then only the matching entities stay
        page.fill("#entity-filter", "rockets")
        assert [e[0] for e in listed_entities(page)] == ["Acme"]
        page.fill("#entity-filter", "")
        # When they open Ana / Then her facts show both time axes, the past one marked, and her relations
        page.locator("#entity-list li[data-name='Ana'] button").click()
        expect(page.locator("#entity-title")).to_contain_text("Ana")
        madrid = page.locator("tr.fact", has_text="lived in Madrid")
        expect(madrid).to_have_class("fact invalidated")
        expect(madrid.locator("td").nth(2)).to_have_text("2019-01-01 00:00:00Z")
        expect(madrid.locator("td").nth(3)).to_have_text("2021-01-01 00:00:00Z")
        expect(page.locator("tr.fact.current")).to_have_count(2)
        expect(page.locator("#relation-table tr.relation")).to_have_count(2)
        # And a relation's label lies beside its arrow, not on it
        for edge in page.locator("#graph-canvas").evaluate(
            "canvas => canvas.cytoscape.edges().map((e) => ({middle: e.renderedMidpoint(),"
            " label: e.renderedBoundingBox({includeNodes: false, includeEdges: false, includeLabels: true})}))"
        ):
            middle, label = edge["middle"], edge["label"]
            centre = ((label["x1"] + label["x2"]) / 2, (label["y1"] + label["y2"]) / 2)
            assert math.dist(centre, (middle["x"], middle["y"])) >= 6, edge  # the label's centre is off the line
        console.shot("console-graph.png")
        # When the as_of slider goes back to the first moment of change (2019)
        _slide(page, "0")
        expect(page.locator("#as-of-label")).to_have_text("as of 2019-01-01 00:00:00Z")
        expect(page.locator("#graph-canvas")).to_have_attribute("data-nodes", "1")
        # Then the list and the drawing are the API's graph as of then: Ana and her Madrid fact only
        as_of = parse_qs(urlsplit(page.url).query)["as_of"][0]
        then = http.get(graph, params={"as_of": as_of}).json()
        assert listed_entities(page) == api_entities(then) == [("Ana", "person", "1 fact")]
        expect(page.locator("#graph-canvas")).to_have_attribute("data-edges", "0")
        console.shot("console-graph-as-of.png")
        # When the slider is past Madrid (2021) / Then Ana is not in the graph at all
        _slide(page, "1")
        expect(page.locator("#graph-summary")).to_contain_text("As of 2021-01-01 00:00:00Z: 0 entities")
        # When "Now" is pressed / Then the current graph is back
        page.click("#as-of-now")
        expect(page.locator("#graph-canvas")).to_have_attribute("data-nodes", "3")
        assert sorted(listed_entities(page)) == sorted(api_entities(current))


def test_at_1280_px_every_facts_and_relations_actions_stay_in_view(site: Site, console: Console) -> None:
    # Given an entity with long facts, long relation types and long names (wider tables than the window)
    with site.http() as http:
        graph = f"{scope(APP, 'wide')}/graph"
        long_fact = "her key fingerprint is " + "a1b2c3d4" * 25  # one word of 200 characters
        entities = [{"name": "Ana Maria de los Santos", "entity_type": "person", "observations": [long_fact]}]
        assert http.post(f"{graph}/entities", json={"entities": entities}).status_code == 200
        relation = {"source": "Ana Maria de los Santos", "relation_type": "collaborates_closely_with_and_mentors"}
        relation["target"] = "The International Organisation of Collaborative Long Names"
        assert http.post(f"{graph}/relations", json={"relations": [relation]}).status_code == 200
        page = console.sign_in(site.key, APP, "wide", view="graph")
        page.locator("#entity-list li[data-name='Ana Maria de los Santos'] button").click()
        expect(page.locator("#entity-title")).to_contain_text("Ana Maria")
        # Then in a 1,280 px window the actions of every row are in view, inside their table's scroll area
        for table in ("#fact-table", "#relation-table"):
            area = page.locator(table).locator("..").bounding_box()
            assert area is not None
            assert area["x"] + area["width"] <= 1280
            for row in page.locator(f"{table} tbody tr").all():
                actions = row.locator("td.actions").bounding_box()
                assert actions is not None
                assert actions["x"] >= area["x"], table
                assert actions["x"] + actions["width"] <= area["x"] + area["width"] + 1, table
        console.shot("console-graph-wide.png")


def _slide(page: Any, position: str) -> None:
    """Move the range input as a person's drag ends: input events, then change."""
    page.locator("#as-of-slider").evaluate(
        "(slider, value) => { slider.value = value; slider.dispatchEvent(new Event('input'));"
        " slider.dispatchEvent(new Event('change')); }",
        position,
    )


def test_invalidate_supersede_and_delete_facts_change_the_apis_graph(site: Site, console: Console) -> None:
    with site.http() as http:
        seed_graph(http, "eve")
        graph = f"{scope(APP, 'eve')}/graph"
        page = console.sign_in(site.key, APP, "eve", view="graph")
        page.locator("#entity-list li[data-name='Ana'] button").click()
        # When a person invalidates "likes green tea"
        page.locator("tr.fact.current", has_text="likes green tea").locator("button.invalidate").click()
        expect(page.locator("tr.fact.invalidated", has_text="likes green tea")).to_have_count(1)
        # Then the API's current graph lacks it and its history holds it, closed on both axes
        history = http.get(f"{graph}/entities/Ana/history").json()
        tea = next(o for o in history["observations"] if o["content"] == "likes green tea")
        assert tea["valid_to"]
        assert tea["expired_at"]
        assert "likes green tea" not in _current_facts(http, graph, "Ana")
        # When they supersede "works remotely"
        row = page.locator("tr.fact.current", has_text="works remotely")
        row.locator("button.supersede").click()
        row.locator("input.supersede-text").fill("works at the Lyon office")
        row.locator("button", has_text="Save").click()
        # Then the page marks it superseded by the new fact, and the API holds the new fact as current
        expect(page.locator("tr.fact.superseded", has_text="works remotely")).to_contain_text(
            "superseded by “works at the Lyon office”"
        )
        assert _current_facts(http, graph, "Ana") == ["works at the Lyon office"]
        # When they delete the past Madrid fact / Then it is gone from the history too
        madrid = page.locator("tr.fact", has_text="lived in Madrid")
        madrid.locator("button.delete-fact").click()
        madrid.locator("button.delete-fact").click()
        expect(page.locator("tr.fact", has_text="lived in Madrid")).to_have_count(0)
        history = http.get(f"{graph}/entities/Ana/history").json()
        assert "lived in Madrid" not in [o["content"] for o in history["observations"]]
        # When they invalidate the lives_in relation / Then the API's current graph lacks it
        page.locator("#relation-table tr.relation.current", has_text="lives_in").locator("button.invalidate").click()
        expect(page.locator("#relation-table tr.relation.invalidated", has_text="lives_in")).to_have_count(1)
        assert [r["relation_type"] for r in http.get(graph).json()["relations"]] == ["works_at"]
        expect(page.locator("#graph-canvas")).to_have_attribute("data-edges", "1")
        console.shot("console-graph-corrected.png")


def _current_facts(http: httpx.Client, graph: str, name: str) -> list[str]:
    entities = http.get(graph).json()["entities"]
    return [o["content"] for o in next(e for e in entities if e["name"] == name)["observations"]]


def test_profile_card_is_the_text_the_agent_receives(site: Site, console: Console) -> None:
    with site.http() as http:
        seed_graph(http, "fay")
        page = console.sign_in(site.key, APP, "fay", view="card")
        card = http.get(f"{scope(APP, 'fay')}/graph/profile-card").json()
        assert card["text"].startswith("[Known about the user]")
        expect(page.locator("#profile-card")).to_have_text(card["text"])
        # Then Ana's line tells her relations after her facts, as the API's card does
        expect(page.locator("#profile-card")).to_contain_text(
            "• Ana (person): likes green tea; works remotely; works_at Acme; lives_in Lyon"
        )
        expect(page.locator("#card-caption")).to_contain_text("3 entities and 2 relations")
        # When the budget is one entity / Then the card is the API's one-entity card
        page.fill("#card-max-entities", "1")
        page.click("#card-refresh")
        one = http.get(f"{scope(APP, 'fay')}/graph/profile-card", params={"max_entities": 1}).json()
        expect(page.locator("#profile-card")).to_have_text(one["text"])
        console.shot("console-card.png")


def test_usage_charts_the_apps_metering(site: Site, console: Console) -> None:
    with site.http() as http:
        seed_memories(http, "gus", fillers=2)
        page = console.sign_in(site.key, APP, "gus", view="usage")
        days = http.get(f"/v1/apps/{APP}/usage").json()["days"]
        # Then each measure is a chart whose total is the API's (requests keep growing with every call)
        for measure in ("items_stored", "embeddings"):
            expected = str(sum(d[measure] for d in days))
            expect(page.locator(f"figure[data-measure={measure}]")).to_have_attribute("data-total", expected)
        assert int(page.locator("figure[data-measure=requests]").get_attribute("data-total") or 0) > 0
        assert page.locator("figure[data-measure=requests] rect").count() == 31
        expect(page.locator("#usage-table tbody tr").first).to_contain_text(days[0]["date"])
        # And each day's cost is the API's estimate, shown as an estimate from list prices with its basis
        assert page.locator("figure[data-measure=cost]").count() == 1
        # (read before the API's answer above was counted: shown, it is positive and at most that answer's)
        shown = page.locator("#usage-table tbody tr").first.locator("td").last.inner_text()
        assert shown.startswith("$")
        assert 0 < float(shown[1:]) <= round(days[0]["estimated_cost_usd"]["total"], 4)
        expect(page.locator("#usage-cost-basis")).to_contain_text("an estimate from AWS list prices")
        # And the cost chart is scaled to the costs (a fraction of a cent is a bar, not a hairline under $1),
        # its axis label whole inside the chart
        today = page.locator(f"figure[data-measure=cost] rect[data-date='{days[0]['date']}']")
        plot = 120 - 18 - 6
        assert float(today.get_attribute("height") or 0) > plot * 0.35
        label = page.locator("figure[data-measure=cost] text.axis-top")
        assert (label.text_content() or "").startswith("$0.0")
        box = label.evaluate("node => { const b = node.getBBox(); return { x: b.x, width: b.width }; }")
        assert box["x"] >= 0, box
        console.shot("console-usage.png")


def test_links_open_their_view_of_their_user(site: Site, console: Console) -> None:
    console.sign_in(site.key, APP, "ana")
    for view in VIEWS:
        page = console.open(app=APP, user="ana", view=view)
        expect(page.locator(f"#nav-{view}")).to_have_attribute("aria-current", "page")
        expect(page.locator("#view")).to_have_attribute("data-view", view)
        expect(page.locator("#who-text")).to_have_text(f"app {APP} · user ana")
    # And a view that does not exist says so
    console.page.goto(console.url(app=APP, user="ana", view="nope"))
    expect(console.page.locator("#message")).to_contain_text("There is no view “nope”")


def test_without_a_user_the_console_lists_the_apps_users_to_pick_one(site: Site, console: Console) -> None:
    # Given two users of an app of their own, one with two entries (one in a project)
    other = "another-app"
    with api(site.url, site.other_app_key) as http:
        for user, text, project in (("zoe", "likes jazz", None), ("zoe", "plays bass", "band"), ("yan", "hi", None)):
            body = {"entry": {"content": {"parts": [{"text": text}]}}, "project_id": project}
            assert http.post(f"{scope(other, user)}/memories", json=body).status_code == 201
    page = console.page
    # When a person signs in with the app's key and no user
    page.goto(console.url(app=other, view="graph"))
    page.wait_for_selector("#sign-in:not([hidden])")
    page.fill("#sign-in-key", site.other_app_key)
    page.click("#sign-in-submit")
    page.wait_for_selector("#view[data-ready=true]", timeout=20_000)
    # Then the app's users are listed, in id order, with the entries each holds and a last write
    expect(page.locator("#view")).to_have_attribute("data-view", "users")
    rows = page.locator("#users-body tr")
    expect(rows).to_have_count(2)
    assert [r.get_attribute("data-user") for r in rows.all()] == ["yan", "zoe"]
    assert [r.locator("td").nth(1).inner_text() for r in rows.all()] == ["1", "2"]
    assert all(r.locator("td").nth(2).inner_text().startswith("20") for r in rows.all())
    expect(page.locator("#users-caption")).to_have_text("2 users, in id order")
    console.shot("console-users.png")
    # When they pick one / Then its view opens (the one chosen at sign-in)
    page.click("#users-body tr[data-user=zoe] a")
    page.wait_for_selector("#view[data-ready=true]", timeout=20_000)
    expect(page.locator("#view")).to_have_attribute("data-view", "graph")
    expect(page.locator("#who-text")).to_have_text(f"app {other} · user zoe")
    # And another app's key is refused at the list as at any view
    page.evaluate("sessionStorage.clear()")
    page.goto(console.url(app=other))
    page.wait_for_selector("#sign-in:not([hidden])")
    page.fill("#sign-in-key", site.key)
    page.click("#sign-in-submit")
    expect(page.locator("#message")).to_contain_text(f"This API key may not use app “{other}” (403")
    expect(page.locator("#users")).to_have_count(0)


def test_a_wrong_key_or_another_apps_key_shows_a_clear_message(site: Site, console: Console) -> None:
    page = console.page
    page.goto(console.url(app=APP, user="ana", view="memories"))
    # When a person signs in with a key that is not one
    page.fill("#sign-in-key", "not-a-key")
    page.click("#sign-in-submit")
    # Then the sign-in form says so and nothing is shown
    expect(page.locator("#message")).to_contain_text("The API key was not accepted (401")
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#entries")).to_have_count(0)
    console.shot("console-wrong-key.png")
    # When they use another app's key / Then the message names the app it may not use
    page.fill("#sign-in-key", site.other_app_key)
    page.click("#sign-in-submit")
    expect(page.locator("#message")).to_contain_text(f"This API key may not use app “{APP}” (403")
    expect(page.locator("#sign-in")).to_be_visible()


def test_erasing_a_user_shows_progress_and_the_apis_receipt(site: Site, console: Console) -> None:
    with site.http() as http:
        seed_memories(http, "bob", fillers=1)
        seed_graph(http, "bob")
        note = {"entry": {"content": {"parts": [{"text": "the garden plan"}]}}, "project_id": "garden"}
        assert http.post(f"{scope(APP, 'bob')}/memories", json=note).status_code == 201
        page = console.sign_in(site.key, APP, "bob", view="erase")
        # Then nothing happens until the user id is typed
        expect(page.locator("#erase-start")).to_be_disabled()
        page.fill("#erase-confirm", "bo")
        expect(page.locator("#erase-start")).to_be_disabled()
        page.fill("#erase-confirm", "bob")
        page.click("#erase-start")
        # When the erasure ends / Then the receipt shows the API's counts per store
        expect(page.locator("#erase-receipt")).to_have_attribute("data-status", "SUCCEEDED", timeout=60_000)
        deletion = parse_qs(urlsplit(page.url).query)["deletion"][0]
        receipt = http.get(f"{scope(APP, 'bob')}/deletions/{deletion}").json()
        assert receipt["status"] == "SUCCEEDED"
        for name, count in receipt["deleted"].items():
            expect(page.locator(f"#receipt-table tr[data-count={name}] td")).to_have_text(str(count))
        assert receipt["deleted"]["entries"] == 6
        assert receipt["deleted"]["graph_items"] > 0
        console.shot("console-erase.png")
        # And the API holds nothing of bob any more
        assert http.get(f"{scope(APP, 'bob')}/memories").json()["entries"] == []
        assert http.get(f"{scope(APP, 'bob')}/graph").json()["entities"] == []
        assert http.get(f"{scope(APP, 'bob')}/projects").json() == {"projects": [], "next_cursor": None}


def test_a_fact_learnt_from_a_conversation_is_marked_with_its_record(site: Site, console: Console) -> None:
    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope
    from agentmem.stores.sqlite_table import SqliteTable

    # Given a fact extraction learnt as a memory record (written as extraction writes it, into the server's file)
    table = SqliteTable(str(site.server.db_path))
    try:
        GraphMemoryService(table).remember(Scope(APP, "lea", None), "Lea", ["sails a wooden boat"], source="mem-x")
    finally:
        table.close()
    with site.http() as http:
        http.post(f"{scope(APP, 'lea')}/graph/tools/remember", json={"entity": "Lea", "facts": ["lives in Porto"]})
    page = console.sign_in(site.key, APP, "lea", view="graph")
    page.locator("#entity-list li[data-name='Lea'] button").click()
    # Then the learnt fact says so, with its record, and the fact told directly does not
    learnt = page.locator("tr.fact", has_text="sails a wooden boat").locator(".learnt")
    expect(learnt).to_have_count(1)
    assert "mem-x" in (learnt.get_attribute("title") or "")
    expect(page.locator("tr.fact", has_text="lives in Porto").locator(".learnt")).to_have_count(0)
