"""Lambda event filtering, as an event source mapping applies its ``FilterCriteria`` to a record (the subset of
the pattern syntax the stack uses), for the template tests and the cloud rehearsal.

A record passes when any filter's pattern matches it. A pattern is an object: each of its keys must be in the
record, a nested object matches the record's object at that key, and a list matches a value equal to one
of its literals (string, number, boolean, null) or satisfying one of its matchers (``prefix``, ``suffix``,
``exists``, ``anything-but`` of literals). A record's list value matches when one of its elements does. Any
other matcher raises: never a silent pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

_MISSING = object()


def passes(filters: Sequence[Mapping[str, Any]], record: Mapping[str, Any]) -> bool:
    """Whether ``record`` passes the mapping's ``FilterCriteria.Filters`` (each ``{"Pattern": "<json>"}``)."""
    return any(matches(json.loads(f["Pattern"]), record) for f in filters)


def matches(pattern: Mapping[str, Any], record: Any) -> bool:
    if not isinstance(record, Mapping):
        return False
    for key, expected in pattern.items():
        value = record.get(key, _MISSING)
        if isinstance(expected, Mapping):
            if value is _MISSING or not matches(expected, value):
                return False
        elif isinstance(expected, list):
            if not _leaf(expected, value):
                return False
        else:
            raise ValueError(f"a filter pattern's values are objects or lists, not {expected!r}")
    return True


def _leaf(rules: list[Any], value: Any) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(_rule(rule, v) for rule in rules for v in values)


def _rule(rule: Any, value: Any) -> bool:
    if not isinstance(rule, Mapping):
        return value is not _MISSING and value == rule and type(value) is type(rule)
    ((operator, operand),) = rule.items()
    if operator == "exists":
        return (value is not _MISSING) is bool(operand)
    if value is _MISSING:
        return False
    if operator == "prefix":
        return isinstance(value, str) and value.startswith(operand)
    if operator == "suffix":
        return isinstance(value, str) and value.endswith(operand)
    if operator == "anything-but":
        excluded = operand if isinstance(operand, list) else [operand]
        if any(isinstance(e, Mapping) for e in excluded):
            raise ValueError(f"anything-but with a matcher is not supported here: {rule!r}")
        return value not in excluded
    raise ValueError(f"filter matcher {operator!r} is not supported here")
