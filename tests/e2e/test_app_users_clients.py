"""An app's users (``GET /v1/apps/{app}/users``, issue 43, point 5) through the bundled Python clients, sync and
async, against the real local server on SQLite and on DynamoDB (moto over HTTP)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from agentmem.client import AsyncMemoryClient, MemoryClient
from agentmem.errors import InvalidInput
from tests.e2e.agentcore_support import TABLES, serving
from tests.e2e.conftest import LiveServer


@pytest.fixture(scope="module", params=TABLES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with serving(request.param, tmp_path_factory.mktemp("app-users")) as running:
        yield running


def test_the_sync_client_lists_an_apps_users(server: LiveServer) -> None:
    client = MemoryClient(server.url)
    app = f"users-{uuid.uuid4().hex[:8]}"
    # Given three users of the app, one with two entries in two scopes, and a user of another app
    client.user(app, "ana").add_entry("likes tea")
    client.user(app, "ana").add_entry("works on boats", project_id="work")
    client.user(app, "bob").add_entry("plays chess")
    client.user(app, "cy/d").add_entry("has a cat")
    client.user(f"{app}-other", "eve").add_entry("not of this app")
    # When a page is read, and every user is iterated a page of one at a time
    page = client.list_users(app, limit=2)
    every = list(client.iter_users(app, page_size=1))
    # Then the page holds the first two with their entry counts and last write, and a cursor for the rest
    assert [(u["user_id"], u["entries"]) for u in page["users"]] == [("ana", 2), ("bob", 1)]
    assert all(u["last_write_at"] for u in page["users"])
    assert page["next_cursor"] == "bob"
    assert client.list_users(app, cursor=page["next_cursor"])["users"][0]["user_id"] == "cy/d"
    # And iterating follows every cursor to every user once
    assert [u["user_id"] for u in every] == ["ana", "bob", "cy/d"]
    # And a bad limit raises the library's error
    with pytest.raises(InvalidInput):
        client.list_users(app, limit=0)


def test_the_async_client_lists_an_apps_users(server: LiveServer) -> None:
    app = f"users-async-{uuid.uuid4().hex[:8]}"

    async def run() -> tuple[dict[str, object], list[dict[str, object]]]:
        async with AsyncMemoryClient(server.url) as client:
            for user in ("u1", "u2", "u3"):
                await client.user(app, user).add_entry(f"a note of {user}")
            page = await client.list_users(app, limit=2)
            every = [user async for user in client.iter_users(app, page_size=2)]
            return page, every

    page, every = asyncio.run(run())
    assert [u["user_id"] for u in page["users"]] == ["u1", "u2"]  # type: ignore[attr-defined]
    assert [(u["user_id"], u["entries"]) for u in every] == [("u1", 1), ("u2", 1), ("u3", 1)]
