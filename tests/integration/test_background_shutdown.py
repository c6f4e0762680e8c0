"""A process stops its background threads before its table closes (issue 40, point 1).

The local server's worker runs a snapshot writer, extraction and erasures in threads of its own; at exit
(gunicorn's ``worker_exit``) and in the tests' fixtures, :meth:`Container.close` ends them first and closes the
table after. Before, the SQLite fixture closed every thread's connection from the main thread while the snapshot
thread still used its own, and a pytest worker died of a segmentation fault. On both tables, with real snapshot
files and the real API handler."""

from __future__ import annotations

import threading
from pathlib import Path

from agentmem.container import Container, set_container
from agentmem.keys import Scope
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.support import ApiClient, scope_path, text_entry

SCOPE = Scope("my-app", "alice")


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


def _snapshotting(table: Table, folder: Path) -> Container:
    return Container(Settings(embedder="hashing", snapshots="files", snapshot_dir=str(folder)), table=table)


def test_closing_a_container_writes_what_was_asked_ends_the_snapshot_thread_then_closes_the_table(
    table: Table, tmp_path: Path
) -> None:
    # Given a user with memories, and a process new to the user whose first search read the index whole: its
    # snapshot was asked for, to be written by the background thread
    writer = _snapshotting(table, tmp_path)
    set_container(writer)
    try:
        entries = [text_entry(f"turn {i} about the garden") for i in range(40)]
        stored = ApiClient().put(f"{scope_path('my-app', 'alice')}/sessions/s1/memories", {"entries": entries})
        assert stored.status == 200, stored.body
    finally:
        set_container(None)
    assert writer.close(60)
    cold = _snapshotting(table, tmp_path)
    set_container(cold)
    try:
        found = ApiClient().post(f"{scope_path('my-app', 'alice')}/memories/search", {"query": "garden"})
        assert found.status == 200, found.body
    finally:
        set_container(None)
    assert "local_snapshots" in cold.__dict__, "the cold search asked for no snapshot"
    # When the process closes
    closed = cold.close(60)
    # Then the thread has ended, after writing what was asked, and only then was the table closed
    assert closed
    assert _threads("snapshots") == []
    assert cold.snapshots is not None
    assert cold.snapshots.exists(SCOPE.partition)


def test_closing_a_container_ends_its_extraction_thread(table: Table) -> None:
    # Given a process whose extraction runs in a background thread, waiting for a session's idle trigger
    container = Container(Settings(embedder="hashing"), table=table)
    runner = container.local_extraction
    runner.wake(SCOPE.partition, "s1", 2**62)
    assert _threads("extraction"), "no extraction thread started"
    # When the process closes
    assert container.close(30)
    # Then the thread has ended and none starts again
    assert _threads("extraction") == []
    runner.wake(SCOPE.partition, "s2", 0)
    assert _threads("extraction") == []
