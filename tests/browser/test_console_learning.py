"""The console's Learning view in headless Chromium (issue 43, point 2), against ``agentmem serve --auth required``
whose extraction model is on a local port that refuses connections: once a session's batch is parked, the view
shows the app's state (``model_unreachable``, with the cause the API gives) and the parked job with its reason,
as the REST API lists them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Console, api, create_key, open_console, scope
from tests.e2e.conftest import LiveServer, free_port, start_server

APP = "learner"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    db = tmp_path_factory.mktemp("learning") / "memory.db"
    env = {
        "MEMORY_AUTH": "required",
        "MEMORY_MODEL": "openai",
        "MEMORY_MODEL_URL": f"http://127.0.0.1:{free_port()}/v1",  # nothing listens there
        "MEMORY_MODEL_ID": "tiny-model",
        "MEMORY_EMBEDDER": "hashing",
    }
    server = start_server(db, env, args=("--workers", "1"))
    try:
        yield server, create_key(db, APP)
    finally:
        server.stop()


@pytest.fixture
def console(browser: Any, site: tuple[LiveServer, str], output: Path) -> Iterator[Console]:
    opened = open_console(browser, site[0].url, output)
    yield opened
    opened.page.context.close()
    assert opened.problems == [], "the console logged errors (a CSP violation or a script error)"


def test_the_learning_view_shows_the_models_state_and_the_parked_jobs_with_why(
    site: tuple[LiveServer, str], console: Console
) -> None:
    server, key = site
    with api(server.url, key) as http:
        # Given an app that learns facts, and a session of Alice's whose batch failed until it was parked
        config = {"strategies": [{"type": "SEMANTIC", "name": "facts"}], "trigger_messages": 2}
        assert http.put(f"/v1/apps/{APP}/extraction", json=config).status_code == 200
        entries = [{"content": {"role": "user", "parts": [{"text": t}]}, "author": "user"} for t in ("Hi.", "Bye.")]
        assert http.put(f"{scope(APP, 'alice')}/sessions/s1/memories", json={"entries": entries}).status_code == 200
        deadline = time.monotonic() + 60
        while not http.get(f"/v1/apps/{APP}/extraction/jobs").json()["jobs"]:
            assert time.monotonic() < deadline, "the batch was not parked in time"
            http.post(f"{scope(APP, 'alice')}/sessions/s1/extract", json={})  # the next attempt, at once
            time.sleep(0.5)
        state = http.get(f"/v1/apps/{APP}/extraction").json()["state"]
        [job] = http.get(f"/v1/apps/{APP}/extraction/jobs").json()["jobs"]
    # When the Learning view is opened
    page = console.sign_in(key, APP, "alice", view="learning")
    # Then it shows the state, the model and why, as the API gives them
    expect(page.locator("#learning-status")).to_have_text("model_unreachable")
    expect(page.locator("#learning-model")).to_have_text("tiny-model")
    expect(page.locator("#learning-message")).to_have_text(state["message"])
    expect(page.locator("#learning-message")).to_contain_text("ConnectionRefusedError")
    # And the parked job, with its user, session and reason; no further page
    row = page.locator(f"#jobs-body tr[data-id='{job['job_id']}']")
    expect(row).to_have_count(1)
    expect(row.locator("td.failure")).to_have_text(job["failure"])
    expect(row).to_contain_text("alice")
    expect(row).to_contain_text("s1")
    expect(page.locator("#jobs-more")).to_be_hidden()
    console.shot("console-learning.png")
