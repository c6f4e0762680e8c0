"""Concurrent writers on both tables: nothing acknowledged is lost, a session re-ingest is all-or-nothing."""

from __future__ import annotations

import threading

from agentmem.keys import Scope
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.stores.table import Table


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}})


def _run_together(*targets: object) -> None:
    barrier = threading.Barrier(len(targets))

    def start(target: object) -> None:
        barrier.wait()
        target()  # type: ignore[operator]

    threads = [threading.Thread(target=start, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_concurrent_reingests_of_one_session_leave_exactly_one_version(table: Table) -> None:
    # Given four clients re-sending the same session with different contents at the same moment
    service = MemoryService(table)
    scope = Scope("app", "user")
    versions = {f"v{n}": [f"version {n} line {i}" for i in range(3)] for n in range(4)}

    def ingest(name: str) -> object:
        return lambda: service.add_session(scope, "s1", [_entry(t) for t in versions[name]])

    for _ in range(3):
        _run_together(*(ingest(name) for name in versions))
        # Then the session holds the lines of exactly one of them, never a mix or nothing
        held = sorted(e.content["parts"][0]["text"] for e in service.list_recent(scope, limit=100).entries)
        assert held in [sorted(lines) for lines in versions.values()]


def test_concurrent_single_writes_are_all_kept_and_found(table: Table) -> None:
    service = MemoryService(table)
    scope = Scope("app", "user", "proj")

    def writer(worker: int) -> object:
        return lambda: [service.add_entry(scope, _entry(f"worker{worker} fact {i}")) for i in range(8)]

    _run_together(*(writer(w) for w in range(4)))
    assert len(service.list_recent(scope, limit=100).entries) == 32
    assert len(service.search(scope, "fact", top_k=100).entries) == 32
