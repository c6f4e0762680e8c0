"""The filter language: parse into the typed tree, evaluate over an entry's fields (docs/search.md#filters)."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem.errors import InvalidInput
from agentmem.memory.filters import MAX_CONDITIONS, And, Compare, Field, parse
from agentmem.memory.filters import matches as evaluate

ENTRY_BUILTINS = {"author": "user", "session_id": None, "timestamp": "2026-06-01T09:30:00.000Z"}
ENTRY_METADATA = {"category": "billing", "priority": 2, "ratio": 0.5, "urgent": True, "tags": ["a", "b"], "num": "3"}


def matches(document: Any) -> bool:
    return evaluate(parse(document), ENTRY_BUILTINS, ENTRY_METADATA)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"category": "billing"}, True),
        ({"category": "other"}, False),
        ({"category": "billing", "priority": 3}, False),  # several keys: AND
        ({"tags": "a"}, True),  # a list contains the value
        ({"tags": "c"}, False),
        ({"priority": 2.0}, True),  # numbers numerically
        ({"priority": "2"}, False),  # another type does not match
        ({"num": 3}, False),
        ({"urgent": True}, True),
        ({"urgent": 1}, False),  # a boolean is not a number
        ({"priority": {"$gt": 1, "$lte": 2}}, True),
        ({"priority": {"$lt": 2}}, False),
        ({"ratio": {"$gte": 0.5}}, True),
        ({"category": {"$gt": "alpha", "$lt": "c"}}, True),  # strings by code point
        ({"category": {"$gt": "B"}}, True),  # "b" (0x62) > "B" (0x42)
        ({"priority": {"$gt": "1"}}, False),  # ordering across types: no match
        ({"urgent": {"$gt": False}}, False),  # booleans are not ordered
        ({"category": {"$ne": "other"}}, True),
        ({"priority": {"$ne": "2"}}, True),  # $ne matches a value of another type
        ({"missing": {"$ne": "x"}}, True),  # and a missing key
        ({"missing": {"$gt": 0}}, False),
        ({"category": {"$in": ["x", "billing"]}}, True),
        ({"category": {"$nin": ["x", "billing"]}}, False),
        ({"tags": {"$in": ["z", "b"]}}, True),
        ({"missing": {"$nin": ["x"]}}, True),
        ({"priority": {"$exists": True}}, True),
        ({"missing": {"$exists": True}}, False),
        ({"session_id": {"$exists": False}}, True),  # a null built-in does not exist
        ({"author": "user"}, True),
        ({"$or": [{"category": "x"}, {"priority": 2}]}, True),
        ({"$and": [{"category": "billing"}, {"$not": {"urgent": True}}]}, False),
        ({"$not": {"category": "x"}}, True),
        ({"timestamp": {"$gte": "2026-06-01T09:30:00Z"}}, True),  # compared in the stored form
        ({"timestamp": {"$gt": "2026-06-01T11:00:00+02:00"}}, True),  # = 09:00:00Z
        ({"timestamp": {"$lt": "2026-06-01T09:30:00.000Z"}}, False),
    ],
)
def test_evaluation(document: dict[str, Any], expected: bool) -> None:
    assert matches(document) is expected


def test_the_tree_is_typed() -> None:
    assert parse({"a": 1, "author": "x"}) == And(
        (Compare(Field("a", False), "$eq", 1), Compare(Field("author", True), "$eq", "x"))
    )
    assert parse(None) is None
    assert parse({}) is None


def test_fifty_conditions_pass_and_fifty_one_fail() -> None:
    assert parse({f"k{i}": i for i in range(MAX_CONDITIONS)}) is not None
    with pytest.raises(InvalidInput) as error:
        parse({f"k{i}": i for i in range(MAX_CONDITIONS + 1)})
    assert error.value.http_status == 422
    with pytest.raises(InvalidInput):
        parse({"k": {"$in": list(range(MAX_CONDITIONS + 1))}})
    deep: dict[str, Any] = {"k": 1}
    for _ in range(1000):  # nesting is bounded by the count, never by the interpreter's stack
        deep = {"$not": deep}
    with pytest.raises(InvalidInput):
        parse(deep)


@pytest.mark.parametrize(
    "document",
    [{"k": float("nan")}, {"k": float("inf")}, {"k": 10**400}, {"k": [1]}, {"$in": [1]}, {"k": {"$eq": None}}],
)
def test_malformed(document: Any) -> None:
    with pytest.raises(InvalidInput):
        parse(document)


def test_the_liveness_condition_is_split_off_for_evaluators_that_check_expiry_themselves() -> None:
    from agentmem.memory.filters import both, live, parse, without_live

    now = "2026-06-01T00:00:00.000Z"
    mine = parse({"source": "helpdesk"})
    assert without_live(live(now)) == (None, now)
    assert without_live(both(mine, live(now))) == (mine, now)
    assert without_live(mine) == (mine, None)
    assert without_live(None) == (None, None)
    # A caller's own condition on a timestamp is not mistaken for the liveness one
    own = parse({"$or": [{"$not": {"timestamp": {"$exists": True}}}, {"timestamp": {"$gt": now}}]})
    assert without_live(own) == (own, None)
