"""LangGraph's filter on a store item's value: ``{field: value}`` or ``{field: {"$op": value}}``.

Evaluated as LangGraph's stores do (:func:`matches`), and translated, where the engine can evaluate it
the same way, into the memory filter over the mirrored fields (:func:`pushdown`), so a search with a
query filters before it ranks.
"""

from __future__ import annotations

import math
from typing import Any

from agentmem.errors import InvalidInput
from agentmem.memory.filters import is_finite
from agentmem.store import records

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_RANGE = {"$gt", "$gte", "$lt", "$lte"}


def check(filter_: dict[str, Any]) -> None:
    """Refuse what LangGraph's filter language does not hold, or what we cannot evaluate: nested fields, and
    a range operand that is no finite number (a 400-digit integer, ``"1e400"``, a word, null)."""
    for name, condition in filter_.items():
        if "." in name:
            raise InvalidInput(
                f"filter field {name!r}: filters on nested fields are not supported; filter on a top-level field",
                code="invalid_filter",
            )
        if isinstance(condition, dict):
            operators = [op for op in condition if op.startswith("$")]
            if not operators:
                raise InvalidInput(
                    f"filter field {name!r}: filters on nested fields are not supported; "
                    f"use a value or an operator of {', '.join(OPERATORS)}",
                    code="invalid_filter",
                )
            for op, operand in condition.items():
                if op not in OPERATORS:
                    raise InvalidInput(
                        f"filter field {name!r}: unknown operator {op!r}; use one of {', '.join(OPERATORS)}",
                        code="invalid_filter",
                    )
                if op in _RANGE and _number(operand) is None:
                    raise InvalidInput(
                        f"filter field {name!r}: {op} compares numbers; its operand must be a finite number "
                        "within the range of a double (or a string holding one)",
                        code="invalid_filter",
                    )


def matches(value: dict[str, Any], filter_: dict[str, Any] | None) -> bool:
    """Whether a value passes the filter, as LangGraph's stores compare (numbers by value for ranges)."""
    if not filter_:
        return True
    return all(_holds(value.get(name), condition) for name, condition in filter_.items())


def _holds(field: Any, condition: Any) -> bool:
    if isinstance(condition, dict):
        return all(_apply(field, op, operand) for op, operand in condition.items())
    return bool(field == condition)


def _apply(field: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(field == operand)
    if op == "$ne":
        return bool(field != operand)
    left, right = _number(field), _number(operand)
    if left is None or right is None:
        return False
    if op == "$gt":
        return left > right
    if op == "$gte":
        return left >= right
    if op == "$lt":
        return left < right
    return left <= right


def _number(value: Any) -> float | None:
    """``value`` as a finite double, or None (a stored value that is none matches no range condition)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond a double's range
        return None
    return number if math.isfinite(number) else None


def pushdown(filter_: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The conditions of ``filter_`` the memory filter evaluates exactly as :func:`matches` would on the
    mirrored fields (strings and finite numbers; a boolean operand, ``$ne`` and lists are left to the
    check on each hit, where Python's ``True == 1`` holds)."""
    conditions: list[dict[str, Any]] = []
    for name, condition in (filter_ or {}).items():
        target = records.field_key(name)
        if target is None:
            continue
        operators = condition if isinstance(condition, dict) else {"$eq": condition}
        for op, operand in operators.items():
            if op in _RANGE and not _plain_number(operand):
                continue
            if op == "$ne" or not (_plain_number(operand) or isinstance(operand, str)):
                continue  # a missing or non-mirrored field matches $ne: only the exact check can tell
            conditions.append({target: {op: operand}})
    return conditions


def _plain_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and is_finite(value)
