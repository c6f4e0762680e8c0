"""Fit the relevance calibration of the default local model (agentmem/search/relevance.py).

``python bench/fit_relevance.py`` (LOCOMO_DIR: the LoCoMo dev conversations, never copied into the
repository) searches two sets through MemoryService in process, as the server does, in every mode, and
records each hit's evidence (its cosine, the query's standing toward the hit's script, the query's own
level over the user's memories, its keyword coverage) and whether it answers:

- the generated fit set (bench/data/relevance_set.py: questions in en, es, fr, ar and zh, answerable and
  never-stored), each question's best 5;
- the LoCoMo dev conversations (each turn ``"<speaker>: <text>"``, as ``make bench ONLY=locomo`` stores
  them), each question's best 10, a hit answering when it is one of the question's evidence turns. Its
  questions name the people the whole conversation is about, so its other turns are the hits that share
  the question's names and not its answer.

It fits three class-balanced logistic regressions (L2 1/C with C = 10, each set weighing the same, Newton's
method): the semantic model on the cosine, the background's mean and spread and the cosine above the own
level, its intercept then moved to where the share of answers kept in the top 5 equals the share of
never-stored questions answered with nothing on the fit set, as before; hybrid's keyword slope on the
coverage (capped at 1) with that semantic logit held, its bias chosen by the same balance (relevance.py
scores a hybrid hit as keyword mode does where that is higher). It shows what a
keyword-mode line fitted on LoCoMo dev would be (relevance.py keeps 8 x (coverage - 0.5)). It prints the
values to paste into relevance.py and the figures before and after on the fit sets; ``make bench
ONLY=search`` reports them on the paraphrase set and the hand-written set, and ``make bench ONLY=locomo``
on questions of another conversation, none of them fitted on.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
C = 10.0
Row = dict[str, Any]


def _recording() -> list[tuple[Any, ...]]:
    """Each hit's evidence as search scores it, recorded (the relevance functions search calls, wrapped)."""
    from agentmem.search import relevance

    seen: list[tuple[Any, ...]] = []
    hit_logit, keyword_scores = relevance.hit_logit, relevance.keyword_scores

    def hit(model_id: str, standing: Any, cosine: float | None, coverage: float, own: Any) -> float:
        seen.append((cosine, standing.mean, standing.std, own, coverage))
        return hit_logit(model_id, standing, cosine, coverage, own)

    def keyword(coverages: Sequence[float]) -> list[float]:  # keyword mode
        seen.extend((None, 0.0, 0.0, None, coverage) for coverage in coverages)
        return keyword_scores(coverages)

    relevance.hit_logit = hit  # type: ignore[assignment]
    relevance.keyword_scores = keyword  # type: ignore[assignment]
    return seen


def _searched(
    service: Any, seen: list[tuple[Any, ...]], scope: Any, text: str, top: int, answers: Callable[[Any], bool]
) -> list[tuple[str, list[tuple[Any, ...]], list[bool]]]:
    out = []
    for mode in ("keyword", "semantic", "hybrid"):
        seen.clear()
        entries = service.search(scope, text, top_k=top, mode=mode).entries
        out.append((mode, list(seen[: len(entries)]), [answers(e) for e in entries]))
    return out


def fit_set_rows(service: Any, seen: list[tuple[Any, ...]]) -> tuple[list[Row], int]:
    from benchlib import data_module

    from agentmem.keys import Scope
    from agentmem.models.memory import MemoryEntry

    data = data_module("relevance_set")
    memories, queries = data.build()
    by_user: dict[str, list[Any]] = {}
    for memory in memories:
        by_user.setdefault(memory.user, []).append(memory)
    key_of = {}
    for user, held in by_user.items():
        entries = [MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": m.text}]}}) for m in held]
        service.add_session(Scope("fit", user), "s", entries)
        key_of.update({(user, m.text): m.key for m in held})
    rows: list[Row] = []
    for number, query in enumerate([*queries, *data.negatives()]):

        def answers(entry: Any, query: Any = query) -> bool:
            return bool(query.answer) and key_of.get((query.user, entry.content["parts"][0]["text"])) == query.answer

        for mode, features, labels in _searched(service, seen, Scope("fit", query.user), query.text, 5, answers):
            rows += [
                {"set": "fit", "q": number, "mode": mode, "never": not query.answer, "y": y, "f": f}
                for f, y in zip(features, labels, strict=True)
            ]
    return rows, len(queries)


def locomo_rows(service: Any, seen: list[tuple[Any, ...]]) -> list[Row]:
    import bench_locomo

    from agentmem.keys import Scope
    from agentmem.models.memory import MemoryEntry

    convs, source = bench_locomo.conversations()
    print(source, file=sys.stderr, flush=True)
    rows: list[Row] = []
    for conv in convs:
        scope = Scope("locomo", conv.name)
        for number, session in enumerate(conv.sessions(), 1):
            service.add_session(
                scope, str(number), [MemoryEntry.model_validate(bench_locomo._entry(t)) for t in session]
            )
        for question in conv.questions:

            def answers(entry: Any, question: Any = question) -> bool:
                return entry.metadata["dia_id"] in question.evidence

            for mode, features, labels in _searched(service, seen, scope, question.text, 10, answers):
                rows += [{"set": "locomo", "mode": mode, "y": y, "f": f} for f, y in zip(features, labels, strict=True)]
    return rows


def fit(groups: Sequence[tuple[Any, Any]], offset: Sequence[Any] | None = None) -> list[float]:
    """Weights (features..., intercept): classes balanced within each group, each group weighing the same."""
    import numpy as np

    x = np.vstack([np.asarray(g[0], dtype=float) for g in groups])
    y = np.concatenate([np.asarray(g[1], dtype=float) for g in groups])
    base = np.zeros(len(y)) if offset is None else np.concatenate([np.asarray(o, dtype=float) for o in offset])
    weight = np.concatenate(
        [np.where(np.asarray(g[1]), 0.5 / max(sum(g[1]), 1), 0.5 / max(len(g[1]) - sum(g[1]), 1)) for g in groups]
    ) * (len(y) / len(groups))
    x = np.c_[x, np.ones(len(x))]
    penalty = np.eye(x.shape[1]) / C
    penalty[-1, -1] = 0.0  # the intercept is not shrunk
    w = np.zeros(x.shape[1])
    for _ in range(200):
        p = 1 / (1 + np.exp(-(x @ w + base)))
        gradient = x.T @ (weight * (p - y)) + penalty @ w
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return [float(v) for v in w]


def kept_and_rejected(rows: Sequence[Row], answerable: int, logit: Callable[[Row], float]) -> tuple[float, float]:
    """(share of answers kept at logit >= 0, share of never-stored questions whose every hit is below 0)."""
    kept = sum(1 for r in rows if r["y"] and logit(r) >= 0) / answerable
    best: dict[int, float] = {}
    for r in rows:
        if r["never"]:
            best[r["q"]] = max(best.get(r["q"], -1e9), logit(r))
    return kept, sum(b < 0 for b in best.values()) / max(len(best), 1)


def evidence_kept(rows: Sequence[Row], logit: Callable[[Row], float]) -> tuple[float, float]:
    """(share of evidence hits at logit >= 0, share of other hits below 0)."""
    evidence = [logit(r) for r in rows if r["y"]]
    other = [logit(r) for r in rows if not r["y"]]
    return sum(v >= 0 for v in evidence) / len(evidence), sum(v < 0 for v in other) / len(other)


def main() -> None:
    from agentmem.embeddings.local import MODEL_ID, LocalEmbedder
    from agentmem.memory.service import MemoryService
    from agentmem.search import relevance
    from agentmem.search.calibration import Standing
    from agentmem.stores.sqlite_table import SqliteTable

    scored_now = relevance.hit_logit
    seen = _recording()
    with tempfile.TemporaryDirectory() as folder:
        service = MemoryService(SqliteTable(Path(folder) / "fit.db"), embedder=LocalEmbedder())
        fit_rows, answerable = fit_set_rows(service, seen)
        lo_rows = locomo_rows(service, seen)

    def of(rows: list[Row], mode: str) -> list[Row]:
        return [r for r in rows if r["mode"] == mode and (mode == "keyword" or r["f"][0] is not None)]

    def semantic_features(r: Row) -> list[float]:
        cosine, mean, std, own, _ = r["f"]
        return [cosine, mean, std, cosine - own.mean(mean)]

    def coverage(r: Row) -> list[float]:
        return [min(r["f"][4], 1.0)]

    groups = [(of(fit_rows, "semantic"), "fit"), (of(lo_rows, "semantic"), "locomo")]
    w = fit([([semantic_features(r) for r in rows], [r["y"] for r in rows]) for rows, _ in groups])

    def semantic(r: Row, shift: float = 0.0) -> float:
        return sum(a * b for a, b in zip(w[:-1], semantic_features(r), strict=True)) + w[-1] + shift

    fit_semantic = of(fit_rows, "semantic")
    shift = max(
        (s / 20 for s in range(-80, 81)),
        key=lambda s: min(kept_and_rejected(fit_semantic, answerable, lambda r: semantic(r, s))),
    )
    w[-1] += shift
    hybrid_rows = (of(fit_rows, "hybrid"), of(lo_rows, "hybrid"))
    slope = fit(
        [([coverage(r) for r in rows], [r["y"] for r in rows]) for rows in hybrid_rows],
        offset=[[semantic(r) for r in rows] for rows in hybrid_rows],
    )[0]

    def hybrid(r: Row, bias: float = 0.0) -> float:
        return semantic(r) + slope * coverage(r)[0] + bias

    fit_hybrid = of(fit_rows, "hybrid")
    bias = max(
        (s / 20 for s in range(-80, 81)),
        key=lambda s: min(kept_and_rejected(fit_hybrid, answerable, lambda r: hybrid(r, s))),
    )
    fitted_keyword = fit([([coverage(r) for r in rows], [r["y"] for r in rows]) for rows in (of(lo_rows, "keyword"),)])
    print(
        f"SemanticModel(cosine={w[0]:.3f}, background_mean={w[1]:.3f}, background_std={w[2]:.3f}, "
        f"above_own={w[3]:.3f}, bias={w[4]:.3f}, keyword=Line(slope={slope:.3f}, bias={bias:.3f}))"
    )
    print(f"keyword mode on LoCoMo dev alone would fit {fitted_keyword[0]:.2f} x coverage {fitted_keyword[1]:+.2f}")

    def after(r: Row) -> float:
        if r["f"][0] is None:
            return relevance.KEYWORD(r["f"][4])
        if r["mode"] == "semantic":
            return semantic(r)
        return max(hybrid(r, bias), relevance.KEYWORD(r["f"][4]))

    def before(r: Row) -> float:
        """The logit relevance.py gives now (its values as they stand)."""
        cosine, mean, std, own, cover = r["f"]
        if cosine is None:
            return relevance.KEYWORD(cover)
        return scored_now(MODEL_ID, Standing(mean, std), cosine, cover if r["mode"] == "hybrid" else 0.0, own)

    for mode in ("keyword", "semantic", "hybrid"):
        for name, logit in (("these values", after), ("relevance.py now", before)):
            k, r = kept_and_rejected(of(fit_rows, mode), answerable, logit)
            e, o = evidence_kept(of(lo_rows, mode), logit)
            print(
                f"{mode:<8} {name:<16} fit set: answers kept in the top 5 {k:.2f}, never-stored answered with "
                f"nothing {r:.2f}; LoCoMo dev top 10: evidence kept {e:.2f}, other turns dropped {o:.2f}"
            )


if __name__ == "__main__":
    sys.path[:0] = [str(HERE), str(HERE.parent / "layers" / "core" / "python")]
    main()
