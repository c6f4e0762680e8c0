"""The VectorIndex port: the search index of memory entries, always inside one user's scopes: nearest
neighbours over their embeddings and BM25 over their words.

The table is the source of truth (each entry item carries its vector, model id and words); an index is
derived from it and can be rebuilt. Every adapter filters by app, user and project inside the search,
so one tenant's query never ranks another tenant's entries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentmem.keys import Scope, UserRef
from agentmem.memory.filters import Node
from agentmem.search.inverted_index import Ranking


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """What a derived index keeps of one entry: its vector (None until it is embedded), the fields a filter
    reads (to filter as it searches), and its words (to rank it by BM25)."""

    scope: Scope
    entry_id: str
    vector: Sequence[float] | None
    model_id: str | None
    session_id: str | None = None
    author: str | None = None
    timestamp: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    expires_at: str | None = None
    terms: Mapping[str, int] = field(default_factory=dict)
    """The entry's own words and their counts."""
    context_terms: Mapping[str, int] = field(default_factory=dict)
    """The words of the entries before it that it is also found by, and their counts."""
    length: int = 0
    context_length: int = 0
    told: str | None = None
    """The periods the entry tells of (:data:`agentmem.memory.records.TOLD`)."""


@dataclass(frozen=True, slots=True)
class VectorHit:
    scope: Scope
    entry_id: str
    score: float
    """Cosine similarity mapped to [0, 1]."""
    author: str | None = None
    timestamp: str | None = None
    told: str | None = None
    """The entry's author, timestamp and the periods it tells of (ranking reads them:
    :mod:`agentmem.search.fusion`)."""


@runtime_checkable
class VectorIndex(Protocol):
    name: str
    derived: bool
    """True when the index holds copies of the table's vectors (OpenSearch): erasure must empty it on its
    own, and a rebuild may drop and rewrite it. False when the vectors are the entry items' own (exact):
    they go with the entries, and a rebuild must never strip them."""
    visibility_seconds: int
    """How long a write or delete can take to show in searches and counts (0: at once). Erasure waits
    that long before sweeping again when its verification still counts vectors."""

    def upsert(self, records: Sequence[VectorRecord]) -> None: ...

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None: ...

    def search(
        self,
        scopes: Sequence[Scope],
        vector: Sequence[float],
        top_k: int,
        model_id: str,
        where: Node | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` nearest vectors among the entries matching ``where`` (filtered while searching,
        never after the cut: fewer than ``top_k`` only when fewer match)."""
        ...

    max_entries: int | None
    """The most entries one scope may hold for this index to search it (None: no limit). A write past it
    is refused, never stored unsearchable."""

    filters_keyword: bool
    """True when :meth:`keyword` applies ``where`` itself (from what it holds of each entry); False when its
    ranking holds every entry and the caller reads the entries to filter them."""

    def keyword(
        self,
        scopes: Sequence[Scope],
        words: Sequence[str],
        now: str,
        *,
        contextual: bool = False,
        where: Node | None = None,
    ) -> Ranking:
        """BM25 of ``words`` over the scopes' entries live at ``now`` (one collection), best first: their own
        words, or with ``contextual`` also the words of the entries before them (agentmem/search/context.py);
        only the entries matching ``where`` when :attr:`filters_keyword`."""
        ...

    def documents_with_all(self, scope: Scope, words: Sequence[str], now: str) -> set[str]:
        """Ids of the scope's entries live at ``now`` holding every one of ``words`` among their own."""
        ...

    def other_models(self, scopes: Sequence[Scope], model_id: str) -> list[str]:
        """Model ids other than ``model_id`` whose vectors the scopes hold (searches leave them out)."""
        ...

    def delete_user(self, user: UserRef) -> int:
        """Remove every vector of the user in every project; return how many were removed."""
        ...

    def count_user(self, user: UserRef) -> int:
        """How many vectors the index holds for the user (erasure verifies this is 0)."""
        ...

    def health(self) -> str:
        """``ok`` or ``failing``."""
        ...
