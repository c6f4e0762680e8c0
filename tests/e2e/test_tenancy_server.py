"""The local server with keys configured (``agentmem serve --auth required``), driven over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.e2e.conftest import ServerFactory

AGENTMEM = str(Path(sys.executable).parent / "agentmem")


def agentmem(*args: str, db: Path) -> str:
    env = {**os.environ, "MEMORY_STORE": "sqlite"}
    result = subprocess.run([AGENTMEM, *args, "--db", str(db)], capture_output=True, text=True, env=env, check=True)
    return result.stdout


@pytest.fixture
def server(live_server_factory: ServerFactory) -> tuple[str, Path]:
    started = live_server_factory(env={"MEMORY_AUTH": "required", "MEMORY_EMBEDDER": "hashing"})
    return started.url, started.db_path


def scope(app: str, user: str) -> str:
    return f"/v1/apps/{quote(app, safe='')}/users/{quote(user, safe='')}"


def test_local_server_enforces_keys_when_configured(server: tuple[str, Path]) -> None:
    base, db = server
    # Given keys for two apps made with the console command
    key_a = json.loads(agentmem("keys", "create", "--app", "A", db=db))
    key_b = json.loads(agentmem("keys", "create", "--app", "B", db=db))
    entry = {"entry": {"content": {"role": "user", "parts": [{"text": "likes tea"}]}, "author": "user"}}
    with httpx.Client(base_url=base, timeout=10) as http:
        # Then no key is 401, another app's key is 403, the app's own key works
        assert http.post(scope("A", "u") + "/memories", json=entry).status_code == 401
        refused = http.post(scope("A", "u") + "/memories", json=entry, headers={"x-api-key": key_b["api_key"]})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "forbidden"
        own = http.post(scope("A", "u") + "/memories", json=entry, headers={"x-api-key": key_a["api_key"]})
        assert own.status_code == 201
        # And the tenant reads its metering
        usage = http.get("/v1/apps/A/usage", headers={"x-api-key": key_a["api_key"]}).json()
        assert usage["days"][0]["requests"] == 2
        assert usage["days"][0]["items_stored"] == 1
        # And service routes need no key
        assert http.get("/v1/health").status_code == 200
        # When A's key is revoked with the console command / Then it gets 401
        agentmem("keys", "revoke", key_a["key_id"], "--app", "A", db=db)
        assert http.get(scope("A", "u") + "/memories", headers={"x-api-key": key_a["api_key"]}).status_code == 401
