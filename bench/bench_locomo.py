"""LoCoMo retrieval: does search find the turns that answer a question about a long conversation?

LoCoMo (Maharana et al., ACL 2024, "Evaluating Very Long-Term Conversational Memory of LLM Agents") holds
very long conversations between two people with questions annotated with the turns (``evidence``) that
answer them. Each conversation is one user; each session is stored with one ``PUT .../sessions/{n}/memories``
through the real local server (``agentmem serve``, default local model), each turn one entry:
``"<speaker>: <text>"``, ``author`` the speaker, ``timestamp`` the session's date. Each question of
categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) is searched over REST, top 10, in
every mode. Side by side, in the same run and on the same turns: plain BM25 with the project's tokenizer
and stopwords (in process), and Google ADK's ``InMemoryMemoryService`` (in process).

Figures per system and category: recall@5 and recall@10 (the share of a question's evidence turns in the
top k, averaged over questions), hit@10 (at least one evidence turn in the top 10), MRR (of the first
evidence turn), search p50/p95, and the ingest cost per turn (milliseconds over REST, rows written). And
the scores' calibration per mode: with ``min_score`` at the relevance_threshold, the share of the top 10's
evidence turns kept and of its other turns dropped, and the share of another conversation's questions
(never told to this user: each conversation is asked the next one's) answered with nothing.

The data: ``LOCOMO_DIR`` (default ``../shared/data/locomo-dev`` beside the repository), never copied into
it. Where it is absent, the section says so and runs on ``bench/data/sample_conversation.py``, a small
conversation of our own in the same shape; at ``BENCH_SCALE`` below 1 (``make test``) it always does.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchlib import SCALE, LocalServer, Rest, data_module, percentiles

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE.parent.parent / "shared" / "data" / "locomo-dev"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("hybrid", "semantic", "keyword")
TOP_K = 10
APP = "locomo"


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    when: datetime

    @property
    def entry_text(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]

    def sessions(self) -> list[list[Turn]]:
        grouped: dict[int, list[Turn]] = {}
        for turn in self.turns:
            grouped.setdefault(turn.session, []).append(turn)
        return [grouped[n] for n in sorted(grouped)]


def _session_date(text: str) -> datetime:
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> Conversation:
    return parse(path.stem, json.loads(path.read_text(encoding="utf-8")))


def parse(name: str, raw: dict[str, Any]) -> Conversation:
    """A conversation in LoCoMo's shape: ``session_<n>`` lists of turns with their dates, and ``qa``."""
    turns = []
    n = 1
    while f"session_{n}" in raw:
        when = _session_date(raw[f"session_{n}_date_time"])
        turns += [Turn(t["dia_id"], t["speaker"], t["text"], n, when) for t in raw[f"session_{n}"]]
        n += 1
    questions = [
        Question(q["question"], tuple(q["evidence"]), q["category"])
        for q in raw["qa"]
        if q.get("category") in CATEGORIES and q.get("evidence")
    ]
    return Conversation(name, turns, questions)


def conversations() -> tuple[list[Conversation], str]:
    """The conversations to run and where they came from."""
    folder = Path(os.environ.get("LOCOMO_DIR") or DEFAULT_DIR)
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if SCALE < 1 or not files:
        why = f"BENCH_SCALE={SCALE}" if SCALE < 1 else f"no LoCoMo files in {folder} (set LOCOMO_DIR)"
        return [
            parse("sample", data_module("sample_conversation").CONVERSATION)
        ], f"{why}: the sample conversation of bench/data/sample_conversation.py"
    return [load(f) for f in files], f"LoCoMo, {len(files)} conversations from {folder}"


# -- scoring ----------------------------------------------------------------------------------------


@dataclass
class Scores:
    """Per category (and ``all``): the per-question figures, and the search latencies."""

    by_category: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    latencies_ms: list[float] = field(default_factory=list)
    scored: list[tuple[float, bool]] = field(default_factory=list)
    """Each top-10 hit's score and whether it is evidence (over REST)."""
    unasked_best: list[float] = field(default_factory=list)
    """Per question of another conversation asked of this one, its best score (0 for no hit)."""

    def add(
        self,
        question: Question,
        ranked: Sequence[str],
        latency_ms: float | None = None,
        scores: Sequence[float] = (),
    ) -> None:
        evidence = set(question.evidence)
        self.scored += [(score, dia in evidence) for dia, score in zip(ranked, scores, strict=False)]
        first = next((i + 1 for i, dia in enumerate(ranked[:TOP_K]) if dia in evidence), None)
        figures = {
            "R@5": len(evidence & set(ranked[:5])) / len(evidence),
            "R@10": len(evidence & set(ranked[:10])) / len(evidence),
            "hit@10": float(first is not None),
            "MRR": 1.0 / first if first else 0.0,
        }
        for category in ("all", CATEGORIES[question.category]):
            for name, value in figures.items():
                self.by_category[category][name].append(value)
        if latency_ms is not None:
            self.latencies_ms.append(latency_ms)

    def mean(self, category: str, figure: str) -> float:
        values = self.by_category[category][figure]
        return 100 * statistics.fmean(values) if values else float("nan")


def print_calibration(results: dict[str, Scores], threshold: float) -> None:
    """What ``min_score`` at the capabilities' relevance_threshold keeps of each mode's top 10: the evidence
    turns, the other turns, and, for the questions of another conversation (never told to this user), how
    many get nothing; and the mean score of evidence and other turns."""
    print(f"min_score {threshold} (relevance_threshold), over REST, top 10:")
    for name, scores in results.items():
        if not scores.scored:
            continue
        evidence = [s for s, is_evidence in scores.scored if is_evidence]
        other = [s for s, is_evidence in scores.scored if not is_evidence]

        def share(values: Sequence[bool]) -> float:
            return sum(values) / len(values) if values else float("nan")

        def mean(values: Sequence[float]) -> float:
            return statistics.fmean(values) if values else float("nan")

        print(
            f"  {name:<20} evidence kept {share([s >= threshold for s in evidence]):.2f}, "
            f"other turns dropped {share([s < threshold for s in other]):.2f}, "
            "another conversation's questions answered with nothing "
            f"{share([best < threshold for best in scores.unasked_best]):.2f} (n={len(scores.unasked_best)}); "
            f"mean score: evidence {mean(evidence):.2f}, other {mean(other):.2f}",
            flush=True,
        )


def print_table(results: dict[str, Scores]) -> None:
    categories = ["all", *CATEGORIES.values()]
    print(
        f"{'system':<44} {'R@5':>6} {'R@10':>6} {'hit@10':>7} {'MRR':>6}   "
        + "  ".join(f"{c[:11]:>11}" for c in categories[1:])
        + f"   {'p50':>7} {'p95':>7}"
    )
    print(f"{'':<44} {'(all questions, %)':>28}   " + "  ".join(f"{'R@10':>11}" for _ in categories[1:]) + "   (ms)")
    for name, scores in results.items():
        head = (
            " ".join(f"{scores.mean('all', f):6.1f}" for f in ("R@5", "R@10")) + f" {scores.mean('all', 'hit@10'):7.1f}"
        )
        head += f" {scores.mean('all', 'MRR') / 100:6.3f}"
        rest = "  ".join(f"{scores.mean(c, 'R@10'):11.1f}" for c in categories[1:])
        p50, p95 = percentiles(scores.latencies_ms) if scores.latencies_ms else (float("nan"), float("nan"))
        print(f"{name:<44} {head}   {rest}   {p50:7.2f} {p95:7.2f}", flush=True)


# -- the systems ------------------------------------------------------------------------------------


def _entry(turn: Turn) -> dict[str, Any]:
    return {
        "content": {"role": "user", "parts": [{"text": turn.entry_text}]},
        "author": turn.speaker,
        "timestamp": turn.when.isoformat().replace("+00:00", "Z"),
        "metadata": {"dia_id": turn.dia_id},
    }


def ours_over_rest(convs: Sequence[Conversation], folder: Path) -> tuple[dict[str, Scores], dict[str, float]]:
    """Every conversation through the real local server (default local model), every mode."""
    results = {f"ours, {mode}": Scores() for mode in MODES}
    db = folder / "locomo.db"
    ingest_ms = 0.0
    turns = sum(len(c.turns) for c in convs)
    with LocalServer(db, embedder="local") as server:
        rest = Rest(server.port)
        for index, conv in enumerate(convs, 1):
            scope = f"/v1/apps/{APP}/users/{quote(conv.name, safe='')}"
            print(
                f"  ours: ingest {conv.name} ({index}/{len(convs)}, {len(conv.turns)} turns)",
                file=sys.stderr,
                flush=True,
            )
            for number, session in enumerate(conv.sessions(), 1):
                started = time.perf_counter()
                rest.call("PUT", f"{scope}/sessions/{number}/memories", {"entries": [_entry(t) for t in session]}, 200)
                ingest_ms += (time.perf_counter() - started) * 1000
            print(f"  ours: {len(conv.questions)} questions x {len(MODES)} modes", file=sys.stderr, flush=True)
            for question in conv.questions:
                for mode in MODES:
                    body = {"query": question.text, "top_k": TOP_K, "mode": mode}
                    started = time.perf_counter()
                    reply: Any = rest.call("POST", f"{scope}/memories/search", body, 200)
                    latency = (time.perf_counter() - started) * 1000
                    ranked = [hit["metadata"]["dia_id"] for hit in reply["entries"]]
                    scores = [hit["score"] for hit in reply["entries"]]
                    results[f"ours, {mode}"].add(question, ranked, latency, scores)
        for index, conv in enumerate(convs):  # each conversation asked the next one's questions
            scope = f"/v1/apps/{APP}/users/{quote(conv.name, safe='')}"
            for question in convs[(index + 1) % len(convs)].questions if len(convs) > 1 else ():
                for mode in MODES:
                    body = {"query": question.text, "top_k": TOP_K, "mode": mode}
                    reply = rest.call("POST", f"{scope}/memories/search", body, 200)
                    best = max((hit["score"] for hit in reply["entries"]), default=0.0)
                    results[f"ours, {mode}"].unasked_best.append(best)
        rest.close()
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT count(*) FROM items").fetchone()[0]
    return results, {"ms per turn": ingest_ms / turns, "rows per turn": rows / turns}


def plain_bm25(convs: Sequence[Conversation]) -> Scores:
    """BM25 (k1 1.2, b 0.75) over each turn's own words, with the project's tokenizer and stopwords."""
    from agentmem.search.tokenize import tokenize

    scores = Scores()
    for conv in convs:
        documents = [Counter(tokenize(t.entry_text)) for t in conv.turns]
        lengths = [sum(d.values()) for d in documents]
        average = statistics.fmean(lengths) or 1.0
        frequency = Counter(token for d in documents for token in d)
        postings: dict[str, list[int]] = defaultdict(list)
        for i, document in enumerate(documents):
            for token in document:
                postings[token].append(i)
        n = len(documents)
        for question in conv.questions:
            started = time.perf_counter()
            totals: dict[int, float] = defaultdict(float)
            for token in dict.fromkeys(tokenize(question.text)):
                idf = math.log(1 + (n - frequency[token] + 0.5) / (frequency[token] + 0.5))
                for i in postings.get(token, ()):
                    tf = documents[i][token]
                    totals[i] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[i] / average))
            best = sorted(totals, key=lambda i: -totals[i])[:TOP_K]
            latency = (time.perf_counter() - started) * 1000
            scores.add(question, [conv.turns[i].dia_id for i in best], latency)
    return scores


def adk_in_memory(convs: Sequence[Conversation]) -> Scores:
    """Google ADK's InMemoryMemoryService: each session stored as an ADK session of events; the first 10
    memories its search returns."""
    from google.adk.events import Event
    from google.adk.memory import InMemoryMemoryService
    from google.adk.sessions import Session
    from google.genai import types

    scores = Scores()

    async def run() -> None:
        for conv in convs:
            service = InMemoryMemoryService()
            by_text = {}
            for number, session in enumerate(conv.sessions(), 1):
                events = [
                    Event(
                        author=t.speaker,
                        timestamp=t.when.timestamp(),
                        content=types.Content(role="user", parts=[types.Part(text=t.entry_text)]),
                    )
                    for t in session
                ]
                for t in session:
                    by_text.setdefault(t.entry_text, t.dia_id)
                await service.add_session_to_memory(
                    Session(id=str(number), app_name=APP, user_id=conv.name, events=events)
                )
            for question in conv.questions:
                started = time.perf_counter()
                found = await service.search_memory(app_name=APP, user_id=conv.name, query=question.text)
                latency = (time.perf_counter() - started) * 1000
                texts = [m.content.parts[0].text for m in found.memories if m.content and m.content.parts]
                scores.add(question, [by_text.get(t or "", "") for t in texts[:TOP_K]], latency)

    asyncio.run(run())
    return scores


ABLATIONS: list[tuple[str, dict[str, Any]]] = [
    ("all of it (the default)", {}),
    ("without stemming (words as written)", {"stemming": False}),
    ("without the turns the first hits continue", {"BRINGING": 0}),
    ("without the dates entries tell of", {"told": False}),
    ("without the date cue", {"DATE_WEIGHT": 0.0}),
    ("without the author cue", {"AUTHOR_WEIGHT": 0.0}),
    ("without author and date", {"AUTHOR_WEIGHT": 0.0, "DATE_WEIGHT": 0.0}),
    ("keyword evidence x2", {"KEYWORD_WEIGHT": 0.8}),
    ("keyword evidence x0.5", {"KEYWORD_WEIGHT": 0.2}),
    ("started from snapshots (8-bit vectors)", {"snapshots": True}),
]
"""One part changed at a time: a setting of :mod:`agentmem.search.fusion` or :mod:`agentmem.memory.search`,
or ``stemming`` off (:mod:`agentmem.search.stemming`: the index is built again, from the words as written),
or ``told`` off (ranking reads no entry's told periods, :mod:`agentmem.search.told`: the date cue reads
timestamps alone), or ``snapshots``: a process that starts each user's index from its snapshot (vectors at
8 bits: agentmem/search/snapshot.py) instead of reading every entry (issue 35: the answers must not move)."""


def ablation(convs: Sequence[Conversation], folder: Path) -> dict[str, Scores]:
    """Hybrid search in process (the same MemoryService the server runs), one part taken out at a time:
    the fusion's cues and weights by setting them, stemming by building the index again without it, the
    context by ingesting again without it."""
    from agentmem.embeddings.local import LocalEmbedder
    from agentmem.keys import Scope
    from agentmem.memory import search as memory_search
    from agentmem.memory import service as memory_service
    from agentmem.models.memory import MemoryEntry
    from agentmem.search import fusion, stemming, told
    from agentmem.stores.sqlite_table import SqliteTable

    embedder = LocalEmbedder()
    results: dict[str, Scores] = {}
    for with_context in (True, False):
        table = SqliteTable(folder / f"ablation-{with_context}.db")
        service = memory_service.MemoryService(table, embedder=embedder)
        original = memory_service.context_of
        if not with_context:
            memory_service.context_of = lambda said, author: []  # type: ignore[assignment]
        try:
            for conv in convs:
                print(f"  ablation: ingest {conv.name} (context {with_context})", file=sys.stderr, flush=True)
                for number, session in enumerate(conv.sessions(), 1):
                    entries = [MemoryEntry.model_validate(_entry(t)) for t in session]
                    service.add_session(Scope(APP, conv.name), str(number), entries)
        finally:
            memory_service.context_of = original
        runs = ABLATIONS if with_context else [("without context (each turn alone)", {})]
        for name, settings in runs:
            weights = {key: value for key, value in settings.items() if key not in ("stemming", "told", "snapshots")}
            owner = {key: fusion if hasattr(fusion, key) else memory_search for key in weights}
            saved = {key: getattr(owner[key], key) for key in weights}
            for key, value in weights.items():
                setattr(owner[key], key, value)
            stem, decode_told = stemming.stem, told.decode
            searcher = service
            if settings.get("told") is False:
                told.decode = lambda stored: []  # type: ignore[assignment]
            if settings.get("stemming") is False:  # a fresh service: its held index is built without stems
                stemming.stem = lambda word: word  # type: ignore[assignment]
                searcher = memory_service.MemoryService(table, embedder=embedder)
            if settings.get("snapshots"):
                searcher = _started_from_snapshots(table, embedder, convs, folder)
            scores = results.setdefault(f"ablation: {name}", Scores())
            try:
                for conv in convs:
                    for question in conv.questions:
                        hits = searcher.search(Scope(APP, conv.name), question.text, top_k=TOP_K, mode="hybrid")
                        scores.add(question, [e.metadata["dia_id"] for e in hits.entries])
            finally:
                stemming.stem = stem  # type: ignore[method-assign]
                told.decode = decode_told  # type: ignore[method-assign]
                for key, value in saved.items():
                    setattr(owner[key], key, value)
        table.close()
    return results


def _started_from_snapshots(table: Any, embedder: Any, convs: Sequence[Conversation], folder: Path) -> Any:
    """A service whose index of each conversation starts from the snapshot another process wrote."""
    from agentmem.keys import Scope
    from agentmem.memory import service as memory_service
    from agentmem.search import changes
    from agentmem.search.snapshots import FileSnapshots, Snapshotter
    from agentmem.vectors.exact import ExactVectorIndex

    store = FileSnapshots(folder / "snapshots")
    writer = ExactVectorIndex(table)

    def version_of(partition: str) -> tuple[str | None, int]:
        stats = changes.MEMORY.stats(table, partition)
        return stats.epoch, stats.version

    snapshotter = Snapshotter(store, version_of=version_of, encoded=writer.snapshot)
    for conv in convs:
        snapshotter.refresh(Scope(APP, conv.name).partition)
    return memory_service.MemoryService(table, embedder=embedder, vector_index=ExactVectorIndex(table, snapshots=store))


def main() -> None:
    convs, source = conversations()
    questions = sum(len(c.questions) for c in convs)
    turns = sum(len(c.turns) for c in convs)
    print(f"{source}: {turns} turns, {questions} questions of categories 1-4; top {TOP_K}, same run")
    results: dict[str, Scores] = {}
    with tempfile.TemporaryDirectory() as folder:
        print("  ours over REST (the local server, default local model)", file=sys.stderr, flush=True)
        ours, ingest = ours_over_rest(convs, Path(folder))
    results.update(ours)
    print("  plain BM25 (in process)", file=sys.stderr, flush=True)
    results["plain BM25 (in process)"] = plain_bm25(convs)
    print("  Google ADK InMemoryMemoryService (in process)", file=sys.stderr, flush=True)
    results["ADK InMemoryMemoryService"] = adk_in_memory(convs)
    print_table(results)
    from agentmem.search.relevance import RELEVANCE_THRESHOLD

    print_calibration(results, RELEVANCE_THRESHOLD)
    print("ablation, hybrid in process (one part changed at a time):")
    with tempfile.TemporaryDirectory() as folder:
        print_table(ablation(convs, Path(folder)))
    print(
        f"  ours, ingest over REST: {ingest['ms per turn']:.1f} ms per turn, "
        f"{ingest['rows per turn']:.1f} rows per turn"
    )
    print("  LoCoMo paper (Table 3), DRAGON over turns, 50 conversations incl. adversarial: R@5 58.8, R@10 67.5")


if __name__ == "__main__":
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    main()
