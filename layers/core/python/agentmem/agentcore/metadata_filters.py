"""AgentCore's metadata filters (ListEvents' ``eventMetadata``, the records' ``metadataFilters`` and strategy)
in this service's filter language (docs/search.md#filters)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentmem.agentcore import models
from agentmem.agentcore import records as ac
from agentmem.errors import InvalidInput
from agentmem.memory import filters


def event_filter(expressions: Sequence[models.EventMetadataFilter] | None) -> filters.Node | None:
    conditions = [
        _condition(e.left.metadata_key or "", e.operator, e.right.metadata_value if e.right else None)
        for e in expressions or ()
    ]
    return filters.parse({"$and": conditions} if conditions else None)


def record_filter(
    strategy: str | None, expressions: Sequence[models.RecordMetadataFilter] | None
) -> filters.Node | None:
    conditions = [
        _condition(e.left.metadata_key or "", e.operator, e.right.metadata_value if e.right else None)
        for e in expressions or ()
    ]
    if strategy is not None:
        manual = strategy == ac.MANUAL_STRATEGY
        conditions.append({ac.STRATEGY: {"$exists": False}} if manual else {ac.STRATEGY: strategy})
    return filters.parse({"$and": conditions}) if conditions else None


_ORDER = {
    "BEFORE": "$lt",
    "AFTER": "$gt",
    "GREATER_THAN": "$gt",
    "GREATER_THAN_OR_EQUALS": "$gte",
    "LESS_THAN": "$lt",
    "LESS_THAN_OR_EQUALS": "$lte",
}


def _condition(key: str, operator: str, value: Any) -> dict[str, Any]:
    """An AgentCore metadata filter expression in this service's filter language (docs/search.md#filters)."""
    ac.check_key(key)
    if operator in ("EXISTS", "NOT_EXISTS"):
        return {key: {"$exists": operator == "EXISTS"}}
    if value is None:
        raise InvalidInput(f"the {operator} filter on {key!r} needs a right-hand value")
    wanted = ac.stored_value(value) if isinstance(value, models.RecordMetadataValue) else value.string_value
    if operator in _ORDER:
        if isinstance(wanted, list):
            raise InvalidInput(f"the {operator} filter on {key!r} compares one value, not a list")
        return {key: {_ORDER[operator]: wanted}}
    if isinstance(wanted, list):  # EQUALS_TO: one of them; CONTAINS: the list holds all of them
        return {key: {"$in": wanted}} if operator == "EQUALS_TO" else {"$and": [{key: v} for v in wanted]}
    return {key: wanted}
