"""Independent transactions in one call (``transact_write_each``, concurrent on DynamoDB) and chunked
batch writes, on both tables and behind the write guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem import users
from agentmem.errors import ConditionFailed, UserDeletionInProgress
from agentmem.keys import UserRef
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Condition, Put, Table, query_all

ANA = UserRef("shop", "ana")
SCOPE = ANA.scope(None)


def _keys(table: Table) -> list[str]:
    return [i["sk"] for i in query_all(table, SCOPE.partition)]


def test_each_transaction_lands_or_is_refused_on_its_own(table: Table) -> None:
    # Given an item the second batch requires to be absent
    table.put({"pk": SCOPE.partition, "sk": "B#taken"})
    batches = [
        [Put({"pk": SCOPE.partition, "sk": f"A#{i}"}) for i in range(3)],
        [
            Put({"pk": SCOPE.partition, "sk": "B#new"}),
            Put({"pk": SCOPE.partition, "sk": "B#taken"}, Condition(exists=False)),
        ],
        [Put({"pk": SCOPE.partition, "sk": f"C#{i}"}) for i in range(3)],
    ]
    # When the three are written in one call
    outcomes = table.transact_write_each(batches)
    # Then the second was refused whole and the others written whole
    assert [type(o).__name__ if o else None for o in outcomes] == [None, "ConditionFailed", None]
    assert isinstance(outcomes[1], ConditionFailed)
    assert _keys(table) == ["A#0", "A#1", "A#2", "B#taken", "C#0", "C#1", "C#2"]


def test_a_batch_write_of_many_chunks_writes_every_item(table: Table) -> None:
    table.batch_write(puts=[{"pk": SCOPE.partition, "sk": f"I#{i:03d}", "n": i} for i in range(130)])
    assert _keys(table) == [f"I#{i:03d}" for i in range(130)]


def test_guarded_transactions_of_a_user_being_erased_are_refused_with_a_409(table: Table) -> None:
    # Given a registered scope and a user marked for erasure
    guarded = users.guarded(table)
    guarded.put(users.registry_item(SCOPE))
    pk, sk = users.deletion_mark_key(ANA)
    table.batch_write(puts=users.mark_items({"pk": pk, "sk": sk, "deletion_id": "d1"}))
    # When two batches of the user's items are written in one call
    with pytest.raises(UserDeletionInProgress):
        guarded.transact_write_each([[Put({"pk": SCOPE.partition, "sk": f"X#{b}{i}"}) for i in range(2)] for b in "ab"])
    # Then neither landed
    assert _keys(table) == []


def test_a_guarded_batch_of_many_chunks_registers_its_scope_first_on_both_tables(table: Table) -> None:
    # Given an unregistered scope and a write of several transactions' worth of items that registers it
    guarded = users.guarded(table)
    items = [{"pk": SCOPE.partition, "sk": f"I#{i:03d}"} for i in range(250)]
    # When it is written (SQLite: every chunk in order in one commit; DynamoDB: the registry's chunk first)
    guarded.batch_write(puts=[*items, users.registry_item(SCOPE)])
    # Then every chunk's registry check held: all of it landed
    assert _keys(table) == [i["sk"] for i in items]
    assert table.get(ANA.partition, users.registry_sk(SCOPE.project_id)) is not None


def test_sqlite_applies_a_guarded_batch_of_many_chunks_in_one_commit(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "one-commit.db")
    guarded = users.guarded(table)
    guarded.put(users.registry_item(SCOPE))  # registering a scope is a write of its own, once
    commits: list[str] = []
    table._connection().set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    guarded.batch_write(
        puts=[users.registry_item(SCOPE), *({"pk": SCOPE.partition, "sk": f"I#{i}"} for i in range(250))]
    )
    assert commits == ["COMMIT"]
    assert len(_keys(table)) == 250
    table.close()
