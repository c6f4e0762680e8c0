"""The console's file server (agentmem.console.assets): an allow-list, a strict CSP, nothing outside its folder."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmem.console import assets
from agentmem.local.events import rest_event

CONSOLE_DIR = Path(assets.__file__).resolve().parent


def get(path: str, **headers: str) -> dict[str, Any]:
    return assets.handler(rest_event("GET", path, headers=headers), None)


def test_the_page_and_its_modules_are_served_with_their_types_and_a_strict_policy() -> None:
    page = get("/console")
    assert page["statusCode"] == 200
    assert page["headers"]["Content-Type"] == "text/html; charset=utf-8"
    assert '<script type="module" src="console/app.js">' in page["body"]
    policy = page["headers"]["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe" not in policy
    assert page["headers"]["X-Content-Type-Options"] == "nosniff"
    for name in ("app.js", "api.js", "memories.js", "graph.js", "card.js", "usage.js", "erase.js", "users.js"):
        module = get(f"/console/{name}")
        assert module["statusCode"] == 200, name
        assert module["headers"]["Content-Type"] == "text/javascript; charset=utf-8"
        assert module["body"] == (CONSOLE_DIR / name).read_text()
    assert get("/console/console.css")["headers"]["Content-Type"] == "text/css; charset=utf-8"
    library = get("/console/vendor/cytoscape.min.js")
    assert library["statusCode"] == 200
    assert library["body"].startswith("/**\n * Copyright (c) 2016-2026, The Cytoscape Consortium.")


def test_the_page_has_no_inline_script_or_style() -> None:
    page = (CONSOLE_DIR / "index.html").read_text()
    assert "<style" not in page
    assert "style=" not in page
    assert page.count("<script") == 1
    assert '<script type="module" src=' in page
    assert re.search(r"\son[a-z]+\s*=", page) is None  # no onclick= or other inline handler


@pytest.mark.parametrize(
    "path",
    [
        "/console/../api/app.py",
        "/console/%2e%2e/api/app.py",
        "/console/..%2fapi%2fapp.py",
        "/console/assets.py",
        "/console/__init__.py",
        "/console//etc/passwd",
        "/console/vendor/../assets.py",
        "/console/vendor/README.md",
        "/console/vendor/LICENSE",
        "/console/%2fetc%2fpasswd",
        "/console/..\\assets.py",
        "/console/app.js/",
        "/console/APP.JS",
        "/consolex",
    ],
)
def test_nothing_outside_the_allow_list_is_served(path: str) -> None:
    answer = get(path)
    assert answer["statusCode"] == 404, path
    assert json.loads(answer["body"])["error"]["code"] == "not_found"


def test_the_folder_form_redirects_to_the_page_keeping_the_link() -> None:
    answer = assets.handler(rest_event("GET", "/console/", query="app=A&user=U%2F1&view=graph"), None)
    assert answer["statusCode"] == 308
    assert answer["headers"]["Location"] == "../console?app=A&user=U%2F1&view=graph"


def test_an_unchanged_file_is_not_sent_again_and_writes_are_refused() -> None:
    first = get("/console/app.js")
    again = get("/console/app.js", **{"If-None-Match": first["headers"]["ETag"]})
    assert again["statusCode"] == 304
    assert again["body"] == ""
    refused = assets.handler(rest_event("POST", "/console/app.js", body="{}"), None)
    assert refused["statusCode"] == 405
    assert refused["headers"]["Allow"] == "GET, HEAD"


def test_importing_the_handler_reads_no_file() -> None:
    # Given a fresh interpreter / When the console function's module is imported / Then no allow-list exists yet
    code = (
        "import functions.console.handler as h, agentmem.console.assets as a, sys;"
        "assert a._catalog is None; assert 'pydantic' not in sys.modules; print('ok')"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False)
    assert result.stdout.strip() == "ok", result.stderr


def test_the_modules_never_parse_html_or_evaluate_strings() -> None:
    # What the API returns (memory texts, entity names) goes into the page as text nodes only.
    for module in CONSOLE_DIR.glob("*.js"):
        source = module.read_text()
        for construct in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert construct not in source, f"{module.name} uses {construct}"


def test_pip_installs_every_file_of_the_console() -> None:
    # Given the package data the core package declares / Then each file of the console folder is in it
    import fnmatch
    import tomllib

    package_dir = CONSOLE_DIR.parent
    config = tomllib.loads((package_dir.parents[1] / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["agentmem"]
    for path in CONSOLE_DIR.rglob("*"):
        if path.is_dir() or path.suffix in (".py", ".pyc"):
            continue
        relative = path.relative_to(package_dir).as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), f"{relative} would not be installed"
