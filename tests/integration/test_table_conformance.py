"""The Table port's conformance suite: every test runs against SqliteTable and DynamoTable (moto)."""

from __future__ import annotations

import threading
import time

import pytest

from agentmem.errors import ConditionFailed, InvalidInput, PayloadTooLarge
from agentmem.stores.table import Add, Check, Condition, Delete, Put, Table, query_all


def test_put_then_get_round_trips_every_value_type(table: Table) -> None:
    # Given an item holding each supported value type
    item = {
        "pk": "p",
        "sk": "s",
        "text": "héllo #%/ 東京",
        "number": 42,
        "negative": -7,
        "flag": True,
        "nothing": None,
        "blob": b"\x00\x01\xff",
        "items": ["a", 1, None],
        "nested": {"k": ["v", {"deep": 2}]},
    }
    # When it is written and read back
    table.put(item)
    # Then it comes back unchanged
    assert table.get("p", "s") == item


@pytest.mark.parametrize("value", [0.5, {"deep": [1, 2.5]}, ["a", (3, 0.25)]])
def test_floats_are_refused_alike_at_any_depth_and_nothing_is_written(table: Table, value: object) -> None:
    # DynamoDB (boto3) stores no floats: the embedded table refuses them too, so a bug shows on a laptop
    with pytest.raises(InvalidInput):
        table.put({"pk": "p", "sk": "float", "value": value})
    assert table.get("p", "float") is None


def test_get_of_a_missing_item_is_none(table: Table) -> None:
    assert table.get("nope", "nothing") is None


def test_conditional_put_refuses_when_the_item_exists(table: Table) -> None:
    table.put({"pk": "p", "sk": "s", "v": 1}, Condition(exists=False))
    with pytest.raises(ConditionFailed):
        table.put({"pk": "p", "sk": "s", "v": 2}, Condition(exists=False))
    assert table.get("p", "s")["v"] == 1  # type: ignore[index]


def test_conditional_put_on_an_attribute_value(table: Table) -> None:
    table.put({"pk": "p", "sk": "s", "version": 1})
    table.put({"pk": "p", "sk": "s", "version": 2}, Condition(equals={"version": 1}))
    with pytest.raises(ConditionFailed):
        table.put({"pk": "p", "sk": "s", "version": 3}, Condition(equals={"version": 1}))
    assert table.get("p", "s")["version"] == 2  # type: ignore[index]


def test_conditional_put_on_an_absent_attribute(table: Table) -> None:
    # An item without the attribute: the put that requires it absent lands (once), in a transaction too
    absent = Condition(absent=("revision",))
    with pytest.raises(ConditionFailed):  # requires the item itself to exist
        table.put({"pk": "p", "sk": "s", "revision": 2}, absent)
    table.put({"pk": "p", "sk": "s", "v": 1})
    table.transact_write([Put({"pk": "p", "sk": "s", "revision": 2}, absent)])
    with pytest.raises(ConditionFailed):
        table.put({"pk": "p", "sk": "s", "revision": 3}, absent)
    with pytest.raises(ConditionFailed):
        table.transact_write([Put({"pk": "p", "sk": "s", "revision": 3}, absent)])
    assert table.get("p", "s") == {"pk": "p", "sk": "s", "revision": 2}


def test_conditional_delete_requires_existence(table: Table) -> None:
    with pytest.raises(ConditionFailed):
        table.delete("p", "missing", Condition(exists=True))
    table.put({"pk": "p", "sk": "s"})
    table.delete("p", "s", Condition(exists=True))
    assert table.get("p", "s") is None


def test_query_returns_one_partition_prefix_in_sort_order(table: Table) -> None:
    # Given items in two partitions under two prefixes
    table.batch_write(
        puts=[{"pk": "p", "sk": f"A#{i:03d}"} for i in range(5)]
        + [{"pk": "p", "sk": "B#1"}, {"pk": "other", "sk": "A#000"}, {"pk": "p", "sk": "A"}]
    )
    # When one prefix of one partition is queried
    ascending = [i["sk"] for i in table.query("p", "A#").items]
    descending = [i["sk"] for i in table.query("p", "A#", descending=True).items]
    # Then only its items come back, in order both ways
    assert ascending == [f"A#{i:03d}" for i in range(5)]
    assert descending == list(reversed(ascending))


def test_query_pages_with_a_cursor_in_both_directions(table: Table) -> None:
    table.batch_write(puts=[{"pk": "p", "sk": f"E#{i:03d}"} for i in range(7)])
    for descending in (False, True):
        seen: list[str] = []
        start = None
        while True:
            page = table.query("p", "E#", limit=3, descending=descending, start_after=start)
            seen += [i["sk"] for i in page.items]
            assert len(page.items) <= 3
            if page.next_start is None:
                break
            start = page.next_start
        expected = [f"E#{i:03d}" for i in range(7)]
        assert seen == (list(reversed(expected)) if descending else expected)


def test_batch_write_handles_more_than_one_dynamodb_batch(table: Table) -> None:
    # Given 60 puts (DynamoDB batches hold 25) and then deletes of half
    table.batch_write(puts=[{"pk": "p", "sk": f"{i:03d}", "n": i} for i in range(60)])
    table.batch_write(deletes=[("p", f"{i:03d}") for i in range(0, 60, 2)])
    # Then exactly the odd ones remain
    assert [i["n"] for i in query_all(table, "p", page_size=7)] == list(range(1, 60, 2))


def test_batch_get_returns_only_existing_items(table: Table) -> None:
    table.batch_write(puts=[{"pk": "p", "sk": f"{i:03d}"} for i in range(150)])
    keys = [("p", f"{i:03d}") for i in range(0, 150, 3)] + [("p", "missing"), ("p", "000")]
    found = sorted(i["sk"] for i in table.batch_get(keys))
    assert found == [f"{i:03d}" for i in range(0, 150, 3)]


def test_transaction_writes_all_or_nothing(table: Table) -> None:
    # Given two existing items
    table.put({"pk": "p", "sk": "a", "v": 1})
    table.put({"pk": "p", "sk": "0", "v": 0})
    # When a transaction's condition fails after it overwrote one item and created another
    with pytest.raises(ConditionFailed):
        table.transact_write(
            [
                Put({"pk": "p", "sk": "0", "v": 10}),
                Put({"pk": "p", "sk": "b", "v": 2}),
                Delete("p", "a", Condition(equals={"v": 99})),
            ]
        )
    # Then nothing of it was applied
    assert table.get("p", "a") == {"pk": "p", "sk": "a", "v": 1}
    assert table.get("p", "0") == {"pk": "p", "sk": "0", "v": 0}
    assert table.get("p", "b") is None
    # And a transaction whose conditions hold applies every operation
    table.transact_write(
        [
            Put({"pk": "p", "sk": "b", "v": 2}, Condition(exists=False)),
            Delete("p", "a"),
            Check("p", "c", Condition(exists=False)),
        ]
    )
    assert table.get("p", "a") is None
    assert table.get("p", "b") == {"pk": "p", "sk": "b", "v": 2}


def test_transaction_checks_another_item_and_adds_to_counters(table: Table) -> None:
    # Given a counter and a "mark" item whose absence the transactions below require
    table.increment("p", "stats", {"docs": 2})
    table.put({"pk": "u", "sk": "mark"})
    absent_mark = Check("u", "mark", Condition(exists=False))
    # When the mark is present, a transaction adding and putting is refused as a whole
    with pytest.raises(ConditionFailed):
        table.transact_write([absent_mark, Add("p", "stats", {"docs": 1}), Add("p", "new", {"docs": 1})])
    assert table.get("p", "stats") == {"pk": "p", "sk": "stats", "docs": 2}
    assert table.get("p", "new") is None
    # Once the mark is gone, the same transaction adds to the counter and creates the missing one
    table.delete("u", "mark")
    table.transact_write([absent_mark, Add("p", "stats", {"docs": 1, "length": 5}), Add("p", "new", {"docs": -1})])
    assert table.get("p", "stats") == {"pk": "p", "sk": "stats", "docs": 3, "length": 5}
    assert table.get("p", "new") == {"pk": "p", "sk": "new", "docs": -1}
    # and an add that must not create its item is refused on an absent one
    with pytest.raises(ConditionFailed):
        table.transact_write([Add("p", "absent", {"docs": -1}, Condition(exists=True))])
    assert table.get("p", "absent") is None


def test_conditional_increment_never_creates_an_absent_item(table: Table) -> None:
    # Given no counter
    # When decrementing it only if it exists
    with pytest.raises(ConditionFailed):
        table.increment("p", "stats", {"docs": -1}, Condition(exists=True))
    # Then it is still absent; once it exists, the same call applies
    assert table.get("p", "stats") is None
    table.increment("p", "stats", {"docs": 2})
    assert table.increment("p", "stats", {"docs": -1}, Condition(exists=True))["docs"] == 1
    assert table.get("p", "stats") == {"pk": "p", "sk": "stats", "docs": 1}


def test_increment_is_atomic_under_concurrent_threads(table: Table) -> None:
    # Given 4 threads each adding 1 twenty times
    def bump() -> None:
        for _ in range(20):
            table.increment("p", "counter", {"hits": 1, "total": 2})

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then no increment was lost
    item = table.get("p", "counter")
    assert item is not None
    assert (item["hits"], item["total"]) == (80, 160)


def test_expired_items_read_as_absent(table: Table) -> None:
    now = int(time.time())
    table.put({"pk": "p", "sk": "old", "ttl": now - 10})
    table.put({"pk": "p", "sk": "new", "ttl": now + 3600})
    assert table.get("p", "old") is None
    assert [i["sk"] for i in table.query("p").items] == ["new"]


def test_ping_succeeds_on_a_reachable_store(table: Table) -> None:
    table.ping()


def test_transaction_refuses_two_operations_on_one_item(table: Table) -> None:
    # DynamoDB refuses this; the embedded store must behave the same
    with pytest.raises(InvalidInput):
        table.transact_write([Put({"pk": "p", "sk": "a"}), Delete("p", "a")])
    assert table.get("p", "a") is None


def test_keys_and_items_over_dynamodb_limits_are_refused_alike_and_nothing_is_written(table: Table) -> None:
    ok = {"pk": "p", "sk": "fine", "v": "x"}
    huge = {"pk": "p", "sk": "huge", "blob": "A" * (400 * 1024)}
    # Given keys and an item each just over DynamoDB's limits: every adapter refuses them the same way
    with pytest.raises(InvalidInput) as long_sk:
        table.put({"pk": "p", "sk": "s" * 1025})
    assert long_sk.value.code == "key_too_long"
    with pytest.raises(InvalidInput) as long_pk:
        table.put({"pk": "p" * 2049, "sk": "s"})
    assert long_pk.value.code == "key_too_long"
    with pytest.raises(PayloadTooLarge) as big:
        table.put(huge)
    assert big.value.code == "item_too_large"
    # And a batch or a transaction holding one such item writes none of its items
    with pytest.raises(PayloadTooLarge):
        table.batch_write(puts=[ok, huge])
    with pytest.raises(PayloadTooLarge):
        table.transact_write([Put(ok), Put(huge)])
    assert table.query("p").items == []
    # While keys and an item at the limits are stored
    table.put({"pk": "p" * 2048, "sk": "s" * 1024})
    table.put({"pk": "p", "sk": "big", "blob": "A" * (390 * 1024)})
    assert table.get("p" * 2048, "s" * 1024) is not None
    assert table.get("p", "big") is not None
