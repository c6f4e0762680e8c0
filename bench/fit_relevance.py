"""Fit the relevance calibration of the default local model on the generated fit set (bench/data/relevance_set.py).

``python bench/fit_relevance.py`` embeds the fit set's memories and questions (answerable and never-stored,
in en, es, fr, ar and zh) with the default local model, takes every question's five best hits by cosine,
and fits a logistic regression of "this hit answers the question" on the hit's cosine and the question's
standing toward the hit's script (the mean and spread of its cosines with the sentences of
:data:`agentmem.search.calibration.BACKGROUND` in the script the hit is written in), classes weighted
evenly, L2 1/C with C = 10. The intercept is then moved to the point where the share of answers kept in
the top 5 equals the share of never-stored questions answered with nothing, on the fit set. It prints
the coefficients to paste into :data:`agentmem.search.relevance.FITTED` and the figures on the fit set;
``make bench ONLY=search`` reports them on the paraphrase set and the hand-written set, which are never
fitted on. numpy only (Newton's method).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
C = 10.0
TOP = 5


def rows(data: Any) -> tuple[list[dict[str, Any]], int]:
    """Per question, its best hits with (question id, language, never-stored, answers it, features)."""
    import numpy as np

    from agentmem.embeddings.local import LocalEmbedder
    from agentmem.search import calibration

    embedder = LocalEmbedder()
    background = np.array(embedder.embed(list(calibration.BACKGROUND)))
    memories, queries = data.build()
    asked = [*queries, *data.negatives()]
    by_user: dict[str, list[Any]] = {}
    for memory in memories:
        by_user.setdefault(memory.user, []).append(memory)
    vectors = {user: np.array(embedder.embed([m.text for m in held])) for user, held in by_user.items()}
    out = []
    for number, query in enumerate(asked):
        vector = np.array(embedder.embed_query(query.text))
        cosines = vectors[query.user] @ vector
        standing = calibration.QueryStanding.over(background, vector)
        for index in np.argsort(-cosines)[:TOP]:
            toward = standing.toward(calibration.script_of(by_user[query.user][index].text))
            out.append(
                {
                    "question": number,
                    "language": query.language,
                    "never_stored": not query.answer,
                    "answers": by_user[query.user][index].key == query.answer,
                    "features": [float(cosines[index]), toward.mean, toward.std],
                }
            )
    return out, len(queries)


def figures(hits: list[dict[str, Any]], answerable: int, logits: list[float]) -> tuple[float, dict[str, float]]:
    """(share of answers kept in the top 5 at logit >= 0, per language the share of never-stored questions
    whose every hit is below 0)."""
    kept = 0
    best: dict[int, tuple[str, float]] = {}
    for hit, logit in zip(hits, logits, strict=True):
        if hit["never_stored"]:
            language, top = best.get(hit["question"], (hit["language"], -1e9))
            best[hit["question"]] = (language, max(top, logit))
        elif hit["answers"] and logit >= 0:
            kept += 1
    rejected: dict[str, list[bool]] = {}
    for language, top in best.values():
        rejected.setdefault(language, []).append(top < 0)
    by_language = {language: sum(v) / len(v) for language, v in sorted(rejected.items())}
    by_language["all"] = sum(sum(v) for v in rejected.values()) / sum(len(v) for v in rejected.values())
    return kept / answerable, by_language


def fit(hits: list[dict[str, Any]]) -> list[float]:
    """Weights (features..., intercept) of a class-balanced L2 logistic regression, by Newton's method."""
    import numpy as np

    x = np.array([[*h["features"], 1.0] for h in hits])
    y = np.array([1.0 if h["answers"] else 0.0 for h in hits])
    weight = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    penalty = np.eye(x.shape[1]) / C
    penalty[-1, -1] = 0.0  # the intercept is not shrunk
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ w)))
        gradient = x.T @ (weight * (p - y)) + penalty @ w
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return [float(v) for v in w]


def main() -> None:
    from benchlib import data_module

    hits, answerable = rows(data_module("relevance_set"))
    weights = fit(hits)
    base = [sum(w * f for w, f in zip(weights[:-1], h["features"], strict=True)) + weights[-1] for h in hits]

    def balance(shift: float) -> float:
        kept, rejected = figures(hits, answerable, [b + shift for b in base])
        return min(kept, rejected["all"])

    shift = max((s / 20 for s in range(-80, 81)), key=balance)
    kept, rejected = figures(hits, answerable, [b + shift for b in base])
    print(f"fit set: {answerable} answerable questions, {len({h['question'] for h in hits}) - answerable} never-stored")
    print(
        f"FITTED = SemanticModel(cosine={weights[0]:.3f}, background_mean={weights[1]:.3f}, "
        f"background_std={weights[2]:.3f}, bias={weights[3] + shift:.3f})"
    )
    print(
        f"on the fit set at the threshold: answers kept in the top 5 {kept:.2f}, never-stored answered with nothing "
        + ", ".join(f"{k} {v:.2f}" for k, v in rejected.items())
    )


if __name__ == "__main__":
    sys.path[:0] = [str(HERE), str(HERE.parent / "layers" / "core" / "python")]
    main()
