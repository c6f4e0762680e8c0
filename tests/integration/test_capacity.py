"""Request units per Table call (agentmem/capacity.py): both adapters charge what DynamoDB on demand bills
for the same calls, computed from the items read and written, so the local figures are the cloud's."""

from __future__ import annotations

import math

import pytest

from agentmem import capacity
from agentmem.keys import Scope
from agentmem.stores.table import Add, Check, Condition, Delete, Put, Table
from agentmem.users import guarded, registry_item


def _item(sk: str, size: int, pk: str = "p") -> dict[str, object]:
    """An item of about ``size`` bytes as DynamoDB counts them."""
    item: dict[str, object] = {"pk": pk, "sk": sk, "blob": b""}
    item["blob"] = b"x" * (size - capacity.item_size(item))
    assert capacity.item_size(item) == size
    return item


def test_each_call_is_charged_by_the_items_it_read_and_wrote(table: Table) -> None:
    big, small = _item("big", 5000), _item("small", 300)
    with capacity.measuring() as writes:
        table.put(big)  # 5 units: 1 KiB each, rounded up
        table.batch_write(puts=[small, _item("other", 1025)])  # 1 + 2
    assert (writes.write_units, writes.items_written, writes.read_units) == (8, 3, 0)

    with capacity.measuring() as reads:
        table.get("p", "big")  # 2 units: 4 KiB each, rounded up
        table.get("p", "absent")  # a key that holds nothing still costs a unit
        table.batch_get([("p", "big"), ("p", "small"), ("p", "absent")])  # 2 + 1 + 1
        table.query("p")  # one call: the total of 5000 + 300 + 1025 bytes, rounded up once
    assert reads.read_units == 2 + 1 + 4 + math.ceil((5000 + 300 + 1025) / 4096)
    assert reads.items_read == 1 + 1 + 2 + 3
    assert reads.calls == {"GetItem": 2, "BatchGetItem": 1, "Query": 1}

    with capacity.measuring() as transaction:
        table.transact_write(
            [
                Put(_item("new", 1500)),  # 2
                Check("p", "small", Condition(exists=True)),  # 1
                Add("p", "counter", {"n": 1}),  # 1
                Delete("p", "other"),  # its size: 2
            ]
        )
    assert transaction.write_units == 2 * (2 + 1 + 1 + 2)
    assert transaction.items_written == 3

    with capacity.measuring() as deletes:
        table.delete("p", "big")  # the deleted item's size
        table.increment("p", "counter", {"n": 1})
    assert deletes.write_units == 5 + 1


def test_measurements_nest_and_count_the_work_of_the_adapters_threads(table: Table) -> None:
    # Given a guarded write of 150 items of a user: transactions of up to 100 items, sent concurrently
    scope = Scope("app", "user")
    items = [_item(f"E#{n:04d}", 700, pk=scope.partition) for n in range(150)]
    with capacity.measuring() as outer:
        guarded(table).put(registry_item(scope))
        with capacity.measuring() as inner:
            guarded(table).batch_write(puts=items)
    # Then the inner measurement saw every transaction, each item at twice its unit, checks included
    assert inner.calls["TransactWriteItems"] >= 2
    checks = 2 * inner.calls["TransactWriteItems"]  # a mark shard and a registry shard per transaction
    assert inner.write_units == 2 * (150 + checks)
    assert inner.items_written == 150
    # And the outer one saw it too, with the registration before it
    assert outer.write_units > inner.write_units
    assert outer.calls["TransactWriteItems"] == inner.calls["TransactWriteItems"] + 1


def test_nothing_is_charged_outside_a_measurement(table: Table) -> None:
    table.put(_item("a", 100))
    with capacity.measuring() as measured:
        pass
    assert measured.write_units == 0
    assert not capacity.active()


@pytest.mark.parametrize("size", [1, 1023, 1024, 1025, 4096, 4097, 400 * 1024])
def test_units_round_up_per_started_unit(size: int) -> None:
    assert capacity.write_units(size) == max(1, math.ceil(size / 1024))
    assert capacity.read_units(size) == max(1, math.ceil(size / 4096))
