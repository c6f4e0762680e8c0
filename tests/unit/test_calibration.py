"""The calibration's shipped background: the default local model's own vectors of BACKGROUND."""

from __future__ import annotations

from agentmem.embeddings.local import MODEL_ID, LocalEmbedder
from agentmem.search import calibration


def test_the_shipped_background_is_what_the_default_model_embeds() -> None:
    embedder = LocalEmbedder()
    shipped = calibration._shipped(MODEL_ID, embedder.dimension)
    assert shipped is not None, "run: python -m agentmem.search.calibration"
    fresh = embedder.embed(list(calibration.BACKGROUND))
    assert len(shipped) == len(fresh) == len(calibration.BACKGROUND)
    worst = max(abs(a - b) for row, again in zip(shipped, fresh, strict=True) for a, b in zip(row, again, strict=True))
    assert worst < 1e-3, "the model changed: run python -m agentmem.search.calibration"


def test_another_model_embeds_the_background_itself() -> None:
    from agentmem.embeddings.hashing import HashingEmbedder

    embedder = HashingEmbedder(64)
    assert calibration._shipped(embedder.model_id, embedder.dimension) is None
    standing = calibration.QueryStanding(embedder, embedder.embed(["blue bicycle"])[0])
    assert standing.std > 0
    assert standing.logit(1.0) > standing.logit(standing.mean)
