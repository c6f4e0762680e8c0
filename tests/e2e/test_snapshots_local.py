"""The local server snapshots the search index of a user it had to read whole, in the background (issue 35,
point 1), and a server started afterwards answers from that snapshot as the first one did (keyword ranking:
exactly; semantic ranking within the vectors' quantization is tested in tests/integration)."""

from __future__ import annotations

import time
from pathlib import Path

from agentmem.keys import Scope
from agentmem.search.snapshots import snapshot_key
from tests.e2e.conftest import ServerFactory

SCOPE = "/v1/apps/app/users/ana"


def test_a_restarted_server_answers_from_the_snapshot_the_first_one_wrote(
    live_server_factory: ServerFactory, tmp_path: Path
) -> None:
    db = tmp_path / "memory.db"
    first = live_server_factory(db_path=db, env={"MEMORY_EMBEDDER": "hashing"}, args=("--workers", "1"))
    entries = [
        {"content": {"role": "user", "parts": [{"text": f"note {n} about the {n % 7} garden"}]}} for n in range(200)
    ]
    with first.client() as http:
        assert http.put(f"{SCOPE}/sessions/s1/memories", json={"entries": entries}).status_code == 200
        before = http.post(f"{SCOPE}/memories/search", json={"query": "garden 3", "mode": "keyword"}).json()
    snapshot = Path(f"{db}.snapshots") / snapshot_key(Scope("app", "ana").partition)
    deadline = time.monotonic() + 30
    while not snapshot.exists() and time.monotonic() < deadline:  # written by a background thread
        time.sleep(0.1)
    assert snapshot.exists()
    first.stop()
    second = live_server_factory(db_path=db, env={"MEMORY_EMBEDDER": "hashing"}, args=("--workers", "1"))
    with second.client() as http:
        after = http.post(f"{SCOPE}/memories/search", json={"query": "garden 3", "mode": "keyword"}).json()
    assert [(e["id"], e["score"]) for e in after["entries"]] == [(e["id"], e["score"]) for e in before["entries"]]
    assert len(after["entries"]) == 10
