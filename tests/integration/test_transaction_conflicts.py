"""Concurrent writes of one user on DynamoDB, with DynamoDB's transaction conflicts modelled (issue 17,
point 12).

Every write transaction of a user checks the same deletion mark, and a large write sends several
transactions at once, so on DynamoDB they cancel each other (``TransactionConflict``). moto does not model
that; :class:`tests.moto_support.TransactionConflicts` does, from the Developer Guide. Through the real
handler, 16 writers of one user, each writing single entries and multi-transaction sessions: every write
is acknowledged and every acknowledged entry is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.dynamo_table import DynamoTable
from tests.moto_support import TransactionConflicts
from tests.support import ApiClient, scope_path, text_entry

USER = scope_path("app", "busy")
WRITERS = 16


@pytest.fixture
def conflicts(dynamo_table: DynamoTable) -> Iterator[TransactionConflicts]:
    model = TransactionConflicts(dynamo_table.client)
    set_container(Container(Settings(deletion_drain_seconds=0), table=dynamo_table))
    yield model
    set_container(None)


def test_sixteen_writers_of_one_user_all_succeed_and_nothing_is_lost(conflicts: TransactionConflicts) -> None:
    api = ApiClient()
    answers: list[int] = []
    stored_expected: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(WRITERS)

    def writer(n: int) -> None:
        start.wait()
        for i in range(3):
            reply = api.post(f"{USER}/memories", {"entry": text_entry(f"writer {n} note {i}")})
            with lock:
                answers.append(reply.status)
                stored_expected.append(1 if reply.status == 201 else 0)
        # a session of 30 entries of many words: its index items span several transactions
        entries = [
            text_entry(f"writer {n} turn {t} " + " ".join(f"w{n}x{t}y{k}" for k in range(40))) for t in range(30)
        ]
        reply = api.put(f"{USER}/sessions/s{n}/memories", {"entries": entries})
        with lock:
            answers.append(reply.status)
            stored_expected.append(30 if reply.status == 200 else 0)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then the model did cancel transactions, and yet every write was acknowledged
    assert conflicts.conflicts > 0
    assert sorted(set(answers)) == [200, 201], answers
    # And every acknowledged entry is stored
    stored = 0
    cursor = None
    while True:
        page = api.get(f"{USER}/memories", query={"limit": 100, **({"cursor": cursor} if cursor else {})}).body
        stored += len(page["entries"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert stored == sum(stored_expected) == WRITERS * 33
