"""The console in a real browser: Debian's headless Chromium driven by Playwright, against the real local
server (tests/e2e's ``start_server``), with data seeded through the REST API.

Chromium is Debian's package (``make test`` installs it); Playwright never downloads a browser here. A
missing browser fails these tests, it never skips them. One browser and one server per module; every
view's screenshot goes to ``tests/browser/output/`` (not committed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OUTPUT = Path(__file__).resolve().parent / "output"
GROUP = "console-browser"
AGENTMEM = str(Path(sys.executable).parent / "agentmem")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """One xdist worker runs the browser tests (one browser, the module's server)."""
    folder = Path(__file__).resolve().parent
    for item in items:
        if folder in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.xdist_group(GROUP))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"the console's browser tests need Debian's chromium at {CHROMIUM}: `make test` installs it "
            "(apt-get install chromium)",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the console's browser tests need playwright (requirements-dev.txt): make test", pytrace=False)
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def output() -> Path:
    OUTPUT.mkdir(exist_ok=True)
    return OUTPUT


def scope(app: str, user: str) -> str:
    return f"/v1/apps/{quote(app, safe='')}/users/{quote(user, safe='')}"


def create_key(db: Path, app: str) -> str:
    """An API key of ``app``, made with the CLI on the server's own SQLite file."""
    env = {**os.environ, "MEMORY_STORE": "sqlite"}
    result = subprocess.run(
        [AGENTMEM, "keys", "create", "--app", app, "--db", str(db)], capture_output=True, text=True, env=env, check=True
    )
    return str(json.loads(result.stdout)["api_key"])


@dataclass
class Console:
    """One browser context (its own sessionStorage) on the console of ``base``."""

    page: Any
    base: str
    output: Path
    problems: list[str] = field(default_factory=list)

    def url(self, **params: str) -> str:
        return f"{self.base}/console?{urlencode(params)}"

    def open(self, **params: str) -> Any:
        """Open a link and wait until its view has rendered (``#view[data-ready]``)."""
        self.page.goto(self.url(**params))
        self.page.wait_for_selector("#view[data-ready=true]", timeout=20_000)
        return self.page

    def sign_in(self, key: str, app: str, user: str, view: str = "memories") -> Any:
        """Open the view's link, meet the sign-in form (no key yet), enter the key."""
        self.page.goto(self.url(app=app, user=user, view=view))
        self.page.wait_for_selector("#sign-in:not([hidden])")
        self.page.fill("#sign-in-key", key)
        self.page.click("#sign-in-submit")
        self.page.wait_for_selector("#view[data-ready=true]", timeout=20_000)
        return self.page

    def shot(self, name: str) -> Path:
        path = self.output / name
        self.page.screenshot(path=str(path), full_page=True)
        return path


def open_console(browser: Any, base: str, output: Path) -> Console:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    console = Console(page, base, output)

    def on_message(message: Any) -> None:
        # A CSP violation or a script error is a bug of the console; a 4xx fetch is an expected answer.
        if message.type == "error" and "Failed to load resource" not in message.text:
            console.problems.append(message.text)

    page.on("console", on_message)
    page.on("pageerror", lambda error: console.problems.append(f"page error: {error}"))
    page.set_default_timeout(15_000)
    return console


def api(base: str, key: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=30.0, headers={"x-api-key": key} if key else {})
