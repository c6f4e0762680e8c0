"""The console on a local server started without auth (``agentmem serve``'s default): no key to enter;
and the local server's browser guard around it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import api, open_console, scope
from tests.e2e.conftest import LiveServer, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    started = start_server(tmp_path_factory.mktemp("console-local") / "memory.db", args=("--workers", "1"))
    yield started
    started.stop()


def test_without_auth_a_link_opens_the_view_with_no_key(browser: Any, server: LiveServer, output: Path) -> None:
    with api(server.url) as http:
        body = {"entry": {"content": {"parts": [{"text": "I water the plants on Sundays"}]}}, "project_id": "home"}
        assert http.post(f"{scope('local', 'zoe')}/memories", json=body).status_code == 201
        console = open_console(browser, server.url, output)
        try:
            # When a person opens a link to a project's memories / Then they are listed, no sign-in asked
            page = console.open(app="local", user="zoe", view="memories", project="home")
            expect(page.locator("#sign-in")).to_be_hidden()
            expect(page.locator("#entries-body tr[data-id]")).to_have_count(1)
            expect(page.locator("#entries-body")).to_contain_text("I water the plants on Sundays")
            # And the project selector lists the user's projects (GET {scope}/projects), this one chosen
            expect(page.locator("#memories-project")).to_have_value("home")
            assert http.get(f"{scope('local', 'zoe')}/projects").json() == {"projects": ["home"], "next_cursor": None}
            # When the global scope is chosen / Then the project's entry is not listed
            page.select_option("#memories-project", "")
            expect(page.locator("#entries-body tr[data-id]")).to_have_count(0)
            assert "project=" not in page.url
            console.shot("console-no-auth.png")
        finally:
            console.page.context.close()
        assert console.problems == []


def test_the_page_opens_from_a_link_on_another_site_but_the_api_keeps_its_guard(server: LiveServer) -> None:
    cross_site = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    with api(server.url) as http:
        # A link followed from another site opens the console (a static page, no data in it)
        page = http.get("/console?app=local&user=zoe&view=graph", headers=cross_site)
        assert page.status_code == 200
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        # The same request to the API is refused, and a foreign Host is refused for both
        refused = http.get(f"{scope('local', 'zoe')}/memories", headers=cross_site)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "forbidden_origin"
        assert http.get("/console", headers={"Host": "attacker.example"}).status_code == 421
        # The page's own module requests (Origin = the server's own origin) are served; a path out is not
        own = http.get("/console/app.js", headers={"Origin": server.url})
        assert own.status_code == 200
        assert own.headers["content-type"] == "text/javascript; charset=utf-8"
        assert http.get("/console/%2e%2e/%2e%2e/cli.py").status_code == 404
        assert http.head("/console").status_code == 200
