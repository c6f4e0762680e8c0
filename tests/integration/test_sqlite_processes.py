"""One SQLite file shared by processes (the local server's workers): no lost update, one winner per
conditional write, and commits that are on disk before they return."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from agentmem.errors import ConditionFailed
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Condition

PROCESSES = 4
ROUNDS = 100


def _hammer(path: str, worker: int, start: multiprocessing.synchronize.Event) -> None:
    table = SqliteTable(path)
    start.wait()
    try:
        for i in range(ROUNDS):
            table.increment("P#shared", "COUNTER", {"n": 1})
            table.put({"pk": "P#shared", "sk": f"ITEM#{worker}#{i}", "by": worker})
            try:
                table.put({"pk": "P#shared", "sk": f"CLAIM#{i}", "by": worker}, Condition(exists=False))
            except ConditionFailed:
                continue
            table.put({"pk": "P#shared", "sk": f"WON#{i}#{worker}"})  # what this process was told
    finally:
        table.close()


def test_processes_writing_one_file_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    SqliteTable(path).close()
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    # Given 4 processes incrementing one counter, writing their own items and racing for the same claims
    workers = [context.Process(target=_hammer, args=(path, w, start)) for w in range(PROCESSES)]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(120)
    assert [p.exitcode for p in workers] == [0] * PROCESSES

    # Then no increment is lost, every item is there, and each claim has exactly one owner
    table = SqliteTable(path)
    try:
        counter = table.get("P#shared", "COUNTER")
        assert counter is not None
        assert counter["n"] == PROCESSES * ROUNDS
        items = table.query("P#shared", "ITEM#").items
        assert sorted(item["sk"] for item in items) == sorted(
            f"ITEM#{w}#{i}" for w in range(PROCESSES) for i in range(ROUNDS)
        )
        claims = table.query("P#shared", "CLAIM#").items
        won = [item["sk"].split("#")[1:] for item in table.query("P#shared", "WON#").items]
        assert sorted(f"{c['sk'].removeprefix('CLAIM#')}#{c['by']}" for c in claims) == sorted(
            f"{i}#{w}" for i, w in won
        )
        assert len(claims) == ROUNDS
    finally:
        table.close()


def test_item_writes_are_synced_to_disk_before_they_return(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "durable.db")
    try:
        table.put({"pk": "P", "sk": "S"})
        conn: sqlite3.Connection = table._connection()  # the pragmas are per connection: read the table's own
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: the WAL is fsynced on every commit
        # A counter commits unsynced (it rides on the next synced commit), and puts the connection back
        table.increment("P", "COUNTER", {"n": 1})
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        with pytest.raises(ConditionFailed):
            table.put({"pk": "P", "sk": "S"}, Condition(exists=False))
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        table.close()
