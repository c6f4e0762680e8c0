"""Where extracted records go: the port extraction writes through, implemented by the AgentCore package
(records are AgentCore memory records, and entries of this API), so that extraction never imports it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agentmem.extraction.consolidation import Existing
from agentmem.keys import Scope
from agentmem.stores.table import WriteOp


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to write: its namespace (already filled in for one actor), the strategy that made it, its
    text and when it was said (its newest source), the entries it came from, what it is about, and the
    current record it replaces (whose valid time then ends)."""

    namespace: str
    strategy_id: str
    text: str
    said_at: datetime
    sources: tuple[str, ...] = ()
    about: str | None = None
    replaces: Existing | None = None


class RecordSink(Protocol):
    def similar(self, scope: Scope, namespace: str, text: str, limit: int) -> list[Existing]:
        """The current (valid) records of ``namespace`` most similar to ``text``, best first."""
        ...

    def newest(self, scope: Scope, namespace: str, limit: int) -> list[Existing]:
        """The current records of ``namespace``, newest first."""
        ...

    def commit(self, scope: Scope, records: Sequence[NewRecord], extra: Sequence[WriteOp]) -> list[str]:
        """Write ``records`` into the actor's scope and end the valid time of the records they replace, with
        ``extra`` (the cursor's advance, checks that the sources still exist), in one transaction; return the
        new records' ids in order. Raise ConditionFailed when anything read has changed meanwhile (nothing is
        written), InvalidInput when a namespace belongs to another actor, UserDeletionInProgress while the
        actor is being erased."""
        ...
