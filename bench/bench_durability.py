"""What durable acknowledgements cost on SQLite: item writes with ``synchronous=FULL`` (the WAL fsynced on
every commit, as shipped) against ``NORMAL`` (no fsync: the last commits can be lost on power loss).

Measured in-process on a real file in the system's temporary folder: one ``put`` of a 200-byte item, and
``MemoryService.add_entry`` of a 25-word entry without an embedder (its items, postings and statistics),
FULL and NORMAL interleaved in rounds so that both see the same disk load.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from benchlib import report, scaled, sentence, timed, vocabulary

from agentmem.keys import Scope
from agentmem.memory.service import MemoryService
from agentmem.models.memory import MemoryEntry
from agentmem.stores.sqlite_table import SqliteTable

ROUNDS = scaled(3)
CALLS = scaled(200, 10)


class UnsyncedTable(SqliteTable):
    """The store as it was before: every commit with ``synchronous=NORMAL``."""

    def _write(self, *, synced: bool = True) -> AbstractContextManager[Any]:
        return super()._write(synced=False)


def _samples(
    table_class: type[SqliteTable], folder: Path, rng: random.Random, words: list[str]
) -> Iterator[tuple[str, list[float]]]:
    table = table_class(folder / f"{table_class.__name__}.db")
    try:
        puts = [lambda i=i: table.put({"pk": "P#bench", "sk": f"S#{i}", "v": "x" * 200}) for i in range(CALLS)]
        yield "put one item", timed(puts)
        service = MemoryService(table)
        scope = Scope("bench", "durability")
        entries = [
            MemoryEntry.model_validate(
                {"content": {"role": "user", "parts": [{"text": sentence(rng, words, (25, 25))}]}}
            )
            for _ in range(CALLS)
        ]
        yield "add_entry of 25 words", timed([lambda e=e: service.add_entry(scope, e) for e in entries])
    finally:
        table.close()


def main() -> None:
    words = vocabulary()
    collected: dict[tuple[str, str], list[float]] = {}
    for round_no in range(ROUNDS):
        for label, table_class in (("FULL", SqliteTable), ("NORMAL (before)", UnsyncedTable)):
            with tempfile.TemporaryDirectory() as folder:
                for what, samples in _samples(table_class, Path(folder), random.Random(round_no), words):
                    collected.setdefault((what, label), []).extend(samples)
    for (what, label), samples in sorted(collected.items()):
        report(f"SQLite {what}: {label}", samples)


if __name__ == "__main__":
    main()
