"""Local auth (issue 33, point 11): the local server requires keys once its store holds one, says which
mode it runs in at start-up, warns when told to serve a keyed store without them, and names both ways
of sending a key in its 401, which the official MCP SDK shows as the error's message.

Real ``agentmem serve`` processes over real SQLite files; keys made by ``agentmem keys create``; the MCP
client is the SDK's own Streamable HTTP client."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import ServerFactory, create_key
from tests.mcp_support import mcp_url, over_http
from tests.support import make_plan

MEMORIES = "/v1/apps/acme/users/ana/memories"


def banner(output: Path) -> str:
    return next(line for line in output.read_text().splitlines() if line.startswith("agent memory API on"))


def test_a_store_without_keys_is_served_without_them_and_says_so(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    server = live_server_factory(output=tmp_path / "out")
    assert "auth: none (no API key in this store" in banner(tmp_path / "out")
    with server.client() as http:
        assert http.get(MEMORIES).status_code == 200


def test_a_store_with_keys_requires_them_and_names_both_headers(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    db = tmp_path / "keyed.db"
    key = create_key(db)
    server = live_server_factory(db_path=db, output=tmp_path / "out")
    assert "auth: required (this store holds API keys)" in banner(tmp_path / "out")
    with server.client() as http:
        missing = http.get(MEMORIES)
        wrong = http.get(MEMORIES, headers={"x-api-key": "amk_0_wrong"})
        assert (missing.status_code, missing.json()["error"]["code"]) == (401, "unauthorized")
        assert "x-api-key" in missing.json()["error"]["message"]
        assert "Authorization: Bearer" in missing.json()["error"]["message"]
        assert wrong.status_code == 401
        assert http.get(MEMORIES, headers={"x-api-key": key}).status_code == 200
        assert http.get(MEMORIES, headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_serving_a_keyed_store_without_auth_is_said_loudly(live_server_factory: ServerFactory, tmp_path: Path) -> None:
    db = tmp_path / "keyed.db"
    create_key(db)
    server = live_server_factory(
        db_path=db, args=("--workers", "1", "--auth", "none"), output=tmp_path / "out", errors=tmp_path / "err"
    )
    assert "auth: NONE although this store holds API keys" in banner(tmp_path / "out")
    assert "WARNING: this store holds API keys" in (tmp_path / "err").read_text()
    with server.client() as http:
        assert http.get(MEMORIES).status_code == 200


def test_auth_required_on_a_store_without_keys_refuses_everything(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    server = live_server_factory(args=("--workers", "1", "--auth", "required"), output=tmp_path / "out")
    assert "auth: required (--auth required)" in banner(tmp_path / "out")
    with server.client() as http:
        assert http.get(MEMORIES).status_code == 401


def test_the_mcp_sdk_shows_the_401s_message(live_server_factory: ServerFactory, tmp_path: Path) -> None:
    db = tmp_path / "keyed.db"
    key = create_key(db)
    server = live_server_factory(db_path=db)

    async def tools(session: ClientSession) -> list[str]:
        return [tool.name for tool in (await session.list_tools()).tools]

    url = mcp_url(server.url, "acme", "ana")
    with pytest.raises(BaseException) as refused:
        over_http(url, tools)
    error = _find(refused.value, MCPError)
    assert "an API key is required" in error.error.message
    assert "Authorization: Bearer" in error.error.message
    assert "read_graph" in over_http(url, tools, {"Authorization": f"Bearer {key}"})


def test_make_serve_passes_auth_through() -> None:
    for auth in ("required", "none"):
        assert f"--auth {auth}" in make_plan("serve", f"AUTH={auth}").splitlines()[-1]
    assert "--auth" not in make_plan("serve").splitlines()[-1]


def _find(error: BaseException, kind: type[MCPError]) -> MCPError:
    if isinstance(error, kind):
        return error
    for inner in getattr(error, "exceptions", ()):
        with contextlib.suppress(LookupError):
            return _find(inner, kind)
    raise LookupError(f"no {kind.__name__} in {error!r}")
