"""`agentmem serve` over HTTP, on SQLite and on DynamoDB (a moto server): a write retried with its
``Idempotency-Key`` is answered from the first after deletes of the user's other data, and refused once
what its answer holds is deleted (issue 24, point 7)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import LiveServer, MotoEndpoint, start_server


@pytest.fixture(params=["sqlite", "dynamodb"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveServer]:
    env = {"MEMORY_EMBEDDER": "hashing"}
    if request.param == "dynamodb":
        moto: MotoEndpoint = request.getfixturevalue("moto_endpoint")
        env["MEMORY_DYNAMODB_ENDPOINT_URL"] = moto.url
    started = start_server(tmp_path / "memory.db", env)
    yield started
    started.stop()


def test_a_retry_is_refused_only_once_what_its_answer_holds_is_deleted(server: LiveServer) -> None:
    scope = "/v1/apps/a/users/u"
    body = {"entry": {"content": {"parts": [{"text": "the boiler is serviced in May"}]}}}
    key = {"Idempotency-Key": "note-1"}
    with server.client() as http:
        first = http.post(f"{scope}/memories", json=body, headers=key)
        assert first.status_code == 201, first.text
        # When the user's other data is deleted: another memory, a store item put again, a graph entity
        other = http.post(f"{scope}/memories", json={"entry": {"content": {"parts": [{"text": "unrelated"}]}}})
        assert http.delete(f"{scope}/memories/{other.json()['id']}").status_code == 204
        put = {"op": "put", "user": "u", "namespace": ["prefs"], "key": "theme", "value": {"content": "dark"}}
        for content in ("dark", "light"):
            reply = http.post("/v1/apps/a/store/batch", json={"ops": [{**put, "value": {"content": content}}]})
            assert reply.status_code == 200, reply.text
        entity = {"entities": [{"name": "Bob", "observations": ["plays chess"]}]}
        assert http.post(f"{scope}/graph/entities", json=entity).status_code == 200
        assert http.delete(f"{scope}/graph/entities/Bob").status_code == 204
        # Then the retry gets the first answer
        again = http.post(f"{scope}/memories", json=body, headers=key)
        assert (again.status_code, again.json()) == (201, first.json())
        assert again.headers.get("idempotent-replayed") == "true"
        # When the memory it stored is deleted, the retry is refused and writes nothing
        assert http.delete(f"{scope}/memories/{first.json()['id']}").status_code == 204
        refused = http.post(f"{scope}/memories", json=body, headers=key)
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "idempotency_key_stale"
        assert "boiler" not in http.get(f"{scope}/memories").text
