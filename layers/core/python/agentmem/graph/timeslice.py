"""Which facts a graph read shows: the current ones, or those of a moment of valid and transaction time
(docs/adr/0400-graph-bitemporal-semantics.md)."""

from __future__ import annotations

from dataclasses import dataclass

from agentmem.stores.table import Item


def is_current(item: Item) -> bool:
    """An observation or relation this service still holds current (not invalidated, not superseded)."""
    return item.get("expired_at") is None


@dataclass(frozen=True, slots=True)
class TimeSlice:
    """Which facts a read shows. No bounds: the current ones (not expired).

    ``recorded_as_of`` R: the facts recorded by R and still held current at R (as the graph was known).
    ``as_of`` A: the facts whose valid time holds A, as known at R (now when R is absent): a fact
    invalidated after R still counts as open-ended, because at R nobody knew it would end.
    """

    as_of: str | None = None
    recorded_as_of: str | None = None

    def shows(self, item: Item) -> bool:
        if self.as_of is None and self.recorded_as_of is None:
            return is_current(item)
        known = self.recorded_as_of
        if known is not None and item["recorded_at"] > known:
            return False
        expired = item.get("expired_at")
        ended_then = expired is not None and (known is None or expired <= known)
        if self.as_of is None:
            return not ended_then
        valid_to = item.get("valid_to") if ended_then else None
        return bool(item["valid_from"] <= self.as_of and (valid_to is None or self.as_of < valid_to))
