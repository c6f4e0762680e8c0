"""Bad input on every memory route: a 4xx with the error body, never a 5xx, and nothing written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmem.container import Container
from tests.support import ApiClient, count_items, scope_path, text_entry

SCOPE = scope_path("app", "user")
LONG = "x" * 257
LONG_SCOPE = scope_path("app", LONG)
CONTROL_SCOPE = scope_path("app", "a\nb")
ENTRY = text_entry("hello world")

# (method, path, body as JSON-able or raw str, query, expected status)
BAD_REQUESTS: list[tuple[str, str, Any, dict[str, Any] | None, int]] = [
    # malformed JSON on every route with a body
    ("PUT", f"{SCOPE}/sessions/s/memories", "{not json", None, 400),
    ("POST", f"{SCOPE}/memories", '{"entry": ', None, 400),
    ("POST", f"{SCOPE}/memories/search", "[1,", None, 400),
    ("POST", f"{SCOPE}/memories/delete", "nul", None, 400),
    # missing bodies and wrong types
    ("PUT", f"{SCOPE}/sessions/s/memories", None, None, 422),
    ("PUT", f"{SCOPE}/sessions/s/memories", {"entries": "x"}, None, 422),
    ("PUT", f"{SCOPE}/sessions/s/memories", [ENTRY], None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": 5}, None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": {"content": {"parts": [{"text": 1}]}}}, None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": {"content": {"parts": [{"audio": "x"}]}}}, None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": ENTRY, "project_id": 5}, None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": ENTRY, "surprise": True}, None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": {**ENTRY, "timestamp": "yesterday"}}, None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": {**ENTRY, "timestamp": "1960-01-01T00:00:00Z"}}, None, 422),
    ("POST", f"{SCOPE}/memories/search", {"query": 5}, None, 422),
    ("POST", f"{SCOPE}/memories/search", {"query": "x", "top_k": "ten"}, None, 422),
    ("POST", f"{SCOPE}/memories/search", {"query": "x", "top_k": 101}, None, 422),
    ("POST", f"{SCOPE}/memories/search", {"query": "x", "min_score": -0.1}, None, 422),
    ("POST", f"{SCOPE}/memories/search", {"query": "x", "mode": "psychic"}, None, 422),
    ("POST", f"{SCOPE}/memories/delete", {"query": ["a"]}, None, 422),
    ("GET", f"{SCOPE}/memories", None, {"limit": "0"}, 422),
    ("GET", f"{SCOPE}/memories", None, {"limit": "101"}, 422),
    ("GET", f"{SCOPE}/memories", None, {"limit": "many"}, 422),
    ("GET", f"{SCOPE}/memories", None, {"cursor": "!!not-ours!!"}, 422),
    # ids out of bounds: 257 bytes in each position, control characters, bad percent-encoding
    ("PUT", f"{LONG_SCOPE}/sessions/s/memories", {"entries": [ENTRY]}, None, 422),
    ("PUT", f"{scope_path(LONG, 'u')}/sessions/s/memories", {"entries": [ENTRY]}, None, 422),
    ("PUT", f"{SCOPE}/sessions/{LONG}/memories", {"entries": [ENTRY]}, None, 422),
    ("PUT", f"{SCOPE}/sessions/s/memories", {"entries": [ENTRY], "project_id": LONG}, None, 422),
    ("PUT", f"{SCOPE}/sessions/s/memories", {"entries": [ENTRY], "project_id": ""}, None, 422),
    ("POST", f"{LONG_SCOPE}/memories", {"entry": ENTRY}, None, 422),
    ("POST", f"{SCOPE}/memories", {"entry": ENTRY, "session_id": LONG}, None, 422),
    ("POST", f"{CONTROL_SCOPE}/memories", {"entry": ENTRY}, None, 422),
    ("POST", "/v1/apps/app/users/%FF%FE/memories", {"entry": ENTRY}, None, 400),
    ("POST", f"{LONG_SCOPE}/memories/search", {"query": "x"}, None, 422),
    ("POST", f"{SCOPE}/memories/search", {"query": "x", "project_id": LONG}, None, 422),
    ("GET", f"{LONG_SCOPE}/memories", None, None, 422),
    ("GET", f"{SCOPE}/memories", None, {"project_id": LONG}, 422),
    ("GET", f"{SCOPE}/memories/{LONG}", None, None, 422),
    ("DELETE", f"{SCOPE}/memories/{LONG}", None, None, 422),
    ("POST", f"{LONG_SCOPE}/memories/delete", {"query": "x"}, None, 422),
    ("DELETE", f"{SCOPE}/sessions/{LONG}", None, None, 422),
    ("DELETE", f"{SCOPE}/sessions/s", None, {"project_id": LONG}, 422),
    ("DELETE", f"{SCOPE}/projects/{LONG}", None, None, 422),
    # size limits
    ("PUT", f"{SCOPE}/sessions/s/memories", {"entries": [ENTRY] * 501}, None, 422),
    ("PUT", f"{SCOPE}/sessions/s/memories", {"entries": [ENTRY, text_entry("x" * 70 * 1024)]}, None, 413),
    ("POST", f"{SCOPE}/memories", {"entry": text_entry("y" * 70 * 1024)}, None, 413),
    ("POST", f"{SCOPE}/memories", {"entry": text_entry("z" * (6 * 1024 * 1024 + 1))}, None, 413),
    # unknown routes and methods
    ("GET", "/v1/nothing-here", None, None, 404),
    ("POST", f"{SCOPE}/memories/undelete", {"query": "x"}, None, 405),  # a memory id's path: GET, DELETE
    ("PATCH", f"{SCOPE}/memories", {"entry": ENTRY}, None, 405),
    ("GET", "/v2/apps/app/users/user/memories", None, None, 404),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "query", "status"),
    BAD_REQUESTS,
    ids=[f"{m} {p[-40:]} {str(b)[:30]} {q}" for m, p, b, q, _ in BAD_REQUESTS],
)
def test_bad_input_is_a_4xx_with_the_error_body_and_writes_nothing(
    api: ApiClient, container: Container, method: str, path: str, body: Any, query: dict[str, Any] | None, status: int
) -> None:
    # Given an empty store
    before = count_items(container.table)
    # When a bad request arrives
    raw = body if isinstance(body, str) else (json.dumps(body) if body is not None else None)
    reply = api.request(method, path, raw_body=raw, query=query)
    # Then it gets the expected 4xx and the error body of API.md
    assert reply.status == status, reply.body
    error = reply.body["error"]
    assert set(error) >= {"code", "message", "request_id"}
    assert error["code"]
    assert error["message"]
    assert error["request_id"]
    # And nothing was written
    assert count_items(container.table) == before


def test_unknown_ids_are_404(api: ApiClient) -> None:
    reply = api.get(f"{SCOPE}/memories/01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert reply.status == 404
    assert reply.error_code == "not_found"
