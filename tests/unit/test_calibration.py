"""The calibration's shipped background: it stands in for the default local model's own vectors of BACKGROUND.

The native engine's numbers differ by CPU (an AVX-512 machine's vectors differ from an AVX2 machine's by
about 2e-3 per component), so the shipped vectors are held to what the calibration uses them for: each
query's standing (the cosine at which a hit becomes relevant, and the relevance of every cosine), not to
their bits. Measured across two builds of the engine on one machine, the shipped background moves the
threshold's cosine by at most 3e-4 and a relevance by at most 0.005; the bounds below leave 5x room.
"""

from __future__ import annotations

import pytest

from agentmem.embeddings.local import MODEL_ID, LocalEmbedder
from agentmem.search import calibration, relevance

QUERIES = (
    "what is the name of my pet?",
    "What is my favourite football team?",
    "When did Tomas repair the dinghy?",
    "¿Dónde vive ahora mi hermana?",
    "À quel aliment suis-je allergique ?",
    "ما هي مهنتي؟",
    "我家里养了什么动物？",  # noqa: RUF001 (Chinese ends a question with a full-width mark)
    "dark mode",
)
THRESHOLD_COSINE_TOLERANCE = 0.002
RELEVANCE_TOLERANCE = 0.02


@pytest.fixture(scope="module")
def standings() -> list[tuple[calibration.QueryStanding, calibration.QueryStanding]]:
    """Per query, its standing against the shipped background and against the background embedded now."""
    embedder = LocalEmbedder()
    shipped = calibration._shipped(MODEL_ID, embedder.dimension)
    assert shipped is not None, "run: python -m agentmem.search.calibration"
    fresh = embedder.embed(list(calibration.BACKGROUND))
    pairs = []
    for query in QUERIES:
        vector = embedder.embed_query(query)
        pairs.append((calibration.QueryStanding.over(shipped, vector), calibration.QueryStanding.over(fresh, vector)))
    return pairs


def test_the_shipped_background_puts_each_querys_threshold_where_the_model_does(
    standings: list[tuple[calibration.QueryStanding, calibration.QueryStanding]],
) -> None:
    shifts = [abs(s.relevant_cosine() - f.relevant_cosine()) for s, f in standings]
    assert max(shifts) < THRESHOLD_COSINE_TOLERANCE, "the model changed: run python -m agentmem.search.calibration"


def test_the_shipped_background_scores_every_cosine_as_the_model_does(
    standings: list[tuple[calibration.QueryStanding, calibration.QueryStanding]],
) -> None:
    cosines = [0.6 + i / 100 for i in range(41)]
    shifts = [abs(relevance.score(s.logit(c)) - relevance.score(f.logit(c))) for s, f in standings for c in cosines]
    assert max(shifts) < RELEVANCE_TOLERANCE, "the model changed: run python -m agentmem.search.calibration"


def test_another_model_embeds_the_background_itself() -> None:
    from agentmem.embeddings.hashing import HashingEmbedder

    embedder = HashingEmbedder(64)
    assert calibration._shipped(embedder.model_id, embedder.dimension) is None
    standing = calibration.QueryStanding(embedder, embedder.embed(["blue bicycle"])[0])
    assert standing.std > 0
    assert standing.logit(1.0) > standing.logit(standing.mean)
