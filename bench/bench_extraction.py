"""`make bench ONLY=extraction`: memory that learns (docs/extraction.md), measured.

1. **The write path.** CreateEvent (boto3 over HTTP) and a session PUT of 10 turns (REST) against the local
   server (one worker, SQLite, hashing embedder), with extraction off (no model) and on (a model configured and
   the app learning three strategies), alternately, three rounds each: p50 and p95. Extraction never runs in a
   write; the write gains one row (the session's pending row) in its commit. Its triggers are set beyond what
   the measured writes reach, so what is measured is the write path, not extraction sharing the one worker
   (in the cloud it runs in a function of its own).
2. **The pipeline, with a real model.** Every LoCoMo dev conversation (``LOCOMO_DIR``, as ``make bench
   ONLY=locomo`` reads them) ingested session by session (REST PUT) into an app that learns semantic facts, user
   preferences and session summaries; the local server's runner extracts in the background, through an
   OpenAI-compatible endpoint: by default SmolLM2-135M-Instruct served on this CPU by llama.cpp
   (bench/extraction_model.py; ``make extraction-model`` builds it), or any endpoint and model given by
   ``EXTRACTION_MODEL_URL`` and ``EXTRACTION_MODEL`` (``EXTRACTION_BENCH_MODEL=gemma3`` for the local Gemma 3
   270M; ``EXTRACTION_BENCH_CONVERSATIONS=N`` for the first N conversations only: a 135M model on two cores
   answers a call in ten seconds when the machine is idle, and a session takes about five calls). Every answer
   passes through a counting proxy, which checks it against the schema it was asked for.
   Figures: turns per second, model tokens per turn, records per session, the share of answers in schema and
   of records citing the turns they came from, and LoCoMo evidence recall at 10 (overall and multi-hop) of a
   hybrid search over the turns alone and over the turns beside the facts and preferences learnt, in the same
   run. A record in the top 10 retrieves the turns it cites (at most 3: a record citing more is counted as
   retrieving none, so that a vague record cannot buy recall); session summaries are left out of the search.

At ``BENCH_SCALE`` below 1 (``make test``) the pipeline runs on the sample conversation
(bench/data/sample_conversation.py) with the scripted model, and no model is built or downloaded. Results go to
bench/out/extraction.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchlib import SCALE, LocalServer, Rest, agentcore_client, percentiles, scaled, timed

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "extraction.json"
APP = "learning-bench"
ROUNDS = 3 if SCALE >= 1 else 1
WRITES = scaled(200, 5)
STRATEGIES = [
    {"type": "SEMANTIC", "name": "facts", "namespace": "/facts/{actorId}/"},
    {"type": "USER_PREFERENCE", "name": "preferences", "namespace": "/preferences/{actorId}/"},
    {"type": "SUMMARIZATION", "name": "summaries", "namespace": "/summaries/{actorId}/{sessionId}/"},
]
MAX_CITED = 3
"""A record in the top 10 retrieves the turns it cites when it cites at most this many."""


def main() -> None:
    """``EXTRACTION_BENCH_PARTS`` (``write_path``, ``pipeline`` or both, comma-separated) selects the parts."""
    sys.path[:0] = [str(HERE.parent)]
    parts = set((os.environ.get("EXTRACTION_BENCH_PARTS") or "write_path,pipeline").split(","))
    results: dict[str, Any] = (
        json.loads(OUT.read_text()) if OUT.exists() and parts != {"write_path", "pipeline"} else {}
    )
    if "write_path" in parts:
        results["write_path"] = write_path()
    if "pipeline" in parts:
        results["pipeline"] = pipeline()
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written {OUT.relative_to(HERE.parent)}")


# -- a scripted endpoint, and a counting proxy ---------------------------------------------------------


def scripted(request: dict[str, Any]) -> str:
    """Answers of a plausible length at once: three facts and a preference per batch, a 60-word summary."""
    name = request.get("response_format", {}).get("json_schema", {}).get("name", "")
    if name == "Facts":
        facts = [
            {"text": f"Fact {n} the conversation states about someone.", "about": "Someone", "messages": [n]}
            for n in (1, 2, 3)
        ]
        return json.dumps({"facts": facts})
    if name == "Preferences":
        return json.dumps({"preferences": [{"text": "The user prefers quiet mornings.", "messages": [1]}]})
    if name == "Summary":
        return json.dumps({"summary": " ".join(["They talked about their week and their plans."] * 6)})
    return json.dumps({name.lower(): []})


class CountingProxy:
    """An OpenAI-compatible endpoint that forwards to ``upstream`` (or answers with ``scripted``) and keeps each
    answer with the schema it was asked for."""

    def __init__(self, upstream: str | None) -> None:
        self.upstream = upstream
        self.answers: list[tuple[str, str]] = []
        self.seconds = 0.0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = json.loads(body)
                started = time.perf_counter()
                if proxy.upstream is None:
                    content = scripted(request)
                    answer = {
                        "object": "chat.completion",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                        ],
                        "usage": {
                            "prompt_tokens": sum(len(m["content"]) for m in request["messages"]) // 4,
                            "completion_tokens": len(content) // 4,
                        },
                    }
                    raw = json.dumps(answer).encode()
                else:
                    forward = urllib.request.Request(
                        proxy.upstream + "/chat/completions", body, {"Content-Type": "application/json"}
                    )
                    with urllib.request.urlopen(forward, timeout=900) as reply:
                        raw = reply.read()
                    answer = json.loads(raw)
                proxy.seconds += time.perf_counter() - started
                name = request.get("response_format", {}).get("json_schema", {}).get("name", "")
                proxy.answers.append((name, answer["choices"][0]["message"]["content"] or ""))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *_: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()

    def in_schema(self) -> float:
        """The share of answers that are JSON of the schema they were asked for."""
        from agentmem.extraction import prompts
        from agentmem.llm.port import parse_json

        models = {m.__name__: m for m in (*prompts.ANSWERS.values(), prompts.Decisions)}
        valid = 0
        for name, text in self.answers:
            try:
                models[name].model_validate(parse_json(text))
                valid += 1
            except Exception:  # any answer that does not parse or validate
                continue
        return valid / len(self.answers) if self.answers else float("nan")


def model_env(url: str, model: str) -> dict[str, str]:
    return {
        "MEMORY_MODEL": "openai",
        "MEMORY_MODEL_URL": url,
        "MEMORY_MODEL_ID": model,
        "MEMORY_MODEL_TIMEOUT_SECONDS": "900",
    }


# -- 1. the write path -----------------------------------------------------------------------------------


def write_path() -> dict[str, Any]:
    proxy = CountingProxy(None)
    samples: dict[str, dict[str, list[float]]] = {mode: {} for mode in ("off", "on")}
    try:
        for _ in range(ROUNDS):
            for mode in ("off", "on"):
                env = model_env(proxy.url, "scripted") if mode == "on" else {}
                with (
                    tempfile.TemporaryDirectory() as folder,
                    LocalServer(Path(folder) / "memory.db", workers=1, embedder="hashing", env=env) as server,
                ):
                    for call, taken in _writes(server).items():
                        samples[mode].setdefault(call, []).extend(taken)
    finally:
        proxy.close()
    print(f"write path: the local server, one worker, SQLite, hashing embedder; {ROUNDS} rounds off and on")
    print(f"{'call':<26} {'off p50':>9} {'on p50':>9} {'on/off':>8} {'off p95':>9} {'on p95':>9}")
    figures: dict[str, Any] = {}
    for call in samples["off"]:
        off50, off95 = percentiles(samples["off"][call])
        on50, on95 = percentiles(samples["on"][call])
        print(f"{call:<26} {off50:9.2f} {on50:9.2f} {on50 / off50:8.2f} {off95:9.2f} {on95:9.2f}")
        figures[call] = {"off_p50_ms": off50, "on_p50_ms": on50, "off_p95_ms": off95, "on_p95_ms": on95}
    return figures


def _writes(server: LocalServer) -> dict[str, list[float]]:
    """CreateEvent and session PUT latencies against one server of an app configured to learn."""
    rest = Rest(server.port)
    # Triggers no measured write reaches: what is timed is the writes, not extraction sharing the one worker.
    quiet = {"strategies": STRATEGIES, "trigger_messages": 50, "trigger_idle_seconds": 3000}
    rest.call("PUT", f"/v1/apps/{APP}/extraction", quiet, 200)
    client = agentcore_client(server)

    def event(n: int) -> Callable[[], object]:
        said = {"conversational": {"content": {"text": f"turn {n} about the weekend plans"}, "role": "USER"}}
        return lambda: client.create_event(
            memoryId=APP, actorId="alice", sessionId=f"s{n % 7}", eventTimestamp=time.time(), payload=[said]
        )

    def session(n: int) -> Callable[[], object]:
        turns = [
            {"content": {"parts": [{"text": f"session {n} turn {t} about the weekend"}]}, "author": "bob"}
            for t in range(10)
        ]
        path = f"/v1/apps/{APP}/users/bob/sessions/p{n}/memories"
        return lambda: rest.call("PUT", path, {"entries": turns}, 200)

    event(-1)()
    taken = {
        "CreateEvent": timed([event(n) for n in range(WRITES)]),
        "session PUT (10 turns)": timed([session(n) for n in range(max(2, WRITES // 5))]),
    }
    rest.close()
    return taken


# -- 2. the pipeline ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str | None, str]]:
    """The model to measure: a given endpoint, the local model (full scale), or the scripted one (make test)."""
    given = os.environ.get("EXTRACTION_MODEL_URL")
    if given:
        yield given.rstrip("/"), os.environ.get("EXTRACTION_MODEL") or "model"
        return
    if SCALE < 1:
        yield None, "scripted (no model: BENCH_SCALE below 1)"
        return
    from extraction_model import serve_model

    with serve_model(os.environ.get("EXTRACTION_BENCH_MODEL") or "smollm2") as (url, name):
        yield url, name


def pipeline() -> dict[str, Any]:
    from bench_locomo import TOP_K, Scores, _entry, conversations

    convs, source = conversations()
    chosen = os.environ.get("EXTRACTION_BENCH_CONVERSATIONS")  # how many, for a slow model (default: all)
    if chosen and chosen != "all" and int(chosen) < len(convs):
        convs, source = convs[: int(chosen)], f"{source}, the first {int(chosen)} of them"
    turns = sum(len(c.turns) for c in convs)
    sessions = sum(len(c.sessions()) for c in convs)
    with endpoint() as (upstream, model), tempfile.TemporaryDirectory() as folder:
        proxy = CountingProxy(upstream)
        db = Path(folder) / "learning.db"
        env = {**model_env(proxy.url, model), "MEMORY_EMBEDDER": "local"}
        print(f"pipeline: {source}; {turns} turns in {sessions} sessions; model {model}", flush=True)
        with LocalServer(db, workers=1, embedder="local", env=env) as server:
            rest = Rest(server.port)
            body = {"strategies": STRATEGIES, "trigger_messages": 1, "trigger_idle_seconds": 10}
            configured = rest.call("PUT", f"/v1/apps/{APP}/extraction", body, 200)
            ids = {s["name"]: s["id"] for s in configured["strategies"]}  # type: ignore[index]
            started = time.perf_counter()
            for conv in convs:
                scope = f"/v1/apps/{APP}/users/{quote(conv.name, safe='')}"
                for number, turns_of in enumerate(conv.sessions(), 1):
                    rest.call(
                        "PUT", f"{scope}/sessions/{number}/memories", {"entries": [_entry(t) for t in turns_of]}, 200
                    )
            _wait_for_extraction(
                db, lambda: print(f"  extracting: {len(proxy.answers)} answers so far", file=sys.stderr, flush=True)
            )
            seconds = time.perf_counter() - started
            usage: Any = rest.call("GET", f"/v1/apps/{APP}/usage", expect=200)
            tokens_in = sum(d["model_input_tokens"] for d in usage["days"])
            tokens_out = sum(d["model_output_tokens"] for d in usage["days"])
            alone, beside = Scores(), Scores()
            records = cited = 0
            for conv in convs:
                scope = f"/v1/apps/{APP}/users/{quote(conv.name, safe='')}"
                dia_of = _dia_ids(rest, scope)
                learnt = _records(rest, scope)
                records += len(learnt)
                cited += sum(1 for r in learnt if r["metadata"].get("agentcore.sources"))
                for question in conv.questions:
                    alone.add(question, _ranked(rest, scope, question, {"agentcore.kind": {"$exists": False}}, dia_of))
                    either = {
                        "$or": [
                            {"agentcore.kind": {"$exists": False}},
                            {"agentcore.strategy": {"$in": [ids["facts"], ids["preferences"]]}},
                        ]
                    }
                    beside.add(question, _ranked(rest, scope, question, either, dia_of))
            rest.close()
        proxy.close()
    figures = {
        "model": model,
        "source": source,
        "turns": turns,
        "sessions": sessions,
        "records": records,
        "records_per_session": records / sessions,
        "answers": len(proxy.answers),
        "answers_in_schema": proxy.in_schema(),
        "records_citing_their_turns": cited / records if records else float("nan"),
        "seconds": seconds,
        "turns_per_second": turns / seconds,
        "model_seconds": proxy.seconds,
        "input_tokens_per_turn": tokens_in / turns,
        "output_tokens_per_turn": tokens_out / turns,
        "locomo_r10_turns": alone.mean("all", "R@10"),
        "locomo_r10_with_records": beside.mean("all", "R@10"),
        "locomo_multi_hop_r10_turns": alone.mean("multi-hop", "R@10"),
        "locomo_multi_hop_r10_with_records": beside.mean("multi-hop", "R@10"),
        "top_k": TOP_K,
    }
    report(figures)
    return figures


def report(f: dict[str, Any]) -> None:
    print(f"model {f['model']}: {f['turns_per_second']:.2f} turns/s ({f['seconds']:.0f} s for {f['turns']} turns)")
    print(f"  {f['model_seconds']:.0f} s of it answering in the model")
    print(f"tokens per turn: {f['input_tokens_per_turn']:.0f} in, {f['output_tokens_per_turn']:.0f} out")
    print(f"answers: {f['answers']}, {100 * f['answers_in_schema']:.1f}% in schema")
    print(f"records: {f['records']} ({f['records_per_session']:.2f} a session)")
    print(f"  {100 * f['records_citing_their_turns']:.1f}% citing their turns")
    print(f"{'LoCoMo hybrid, top 10':<34} {'R@10':>6} {'multi-hop R@10':>15}")
    print(f"{'turns alone':<34} {f['locomo_r10_turns']:6.1f} {f['locomo_multi_hop_r10_turns']:15.1f}")
    beside = f"{f['locomo_r10_with_records']:6.1f} {f['locomo_multi_hop_r10_with_records']:15.1f}"
    print(f"{'turns beside the records learnt':<34} {beside}")


def _wait_for_extraction(db: Path, progress: Callable[[], None]) -> None:
    """Until no session has work pending (no pending or retry row left), telling progress every minute."""
    last = time.monotonic()
    while True:
        with sqlite3.connect(db) as connection:
            left = connection.execute(
                "SELECT count(*) FROM items WHERE sk >= 'XP#' AND sk < 'XP$' OR sk >= 'XR#' AND sk < 'XR$'"
            ).fetchone()[0]
        if not left:
            return
        if time.monotonic() - last > 60:
            progress()
            last = time.monotonic()
        time.sleep(1)


def _dia_ids(rest: Rest, scope: str) -> dict[str, str]:
    """Entry id -> the LoCoMo turn (dia_id) of every turn of the user."""
    found: dict[str, str] = {}
    cursor = None
    while True:
        page: Any = rest.call(
            "GET", f"{scope}/memories?limit=100" + (f"&cursor={quote(cursor)}" if cursor else ""), expect=200
        )
        found.update({e["id"]: e["metadata"]["dia_id"] for e in page["entries"] if "dia_id" in e["metadata"]})
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def _records(rest: Rest, scope: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor = None
    while True:
        current = {"agentcore.kind": "record", "agentcore.valid_to": {"$exists": False}}  # not replaced since
        body = {"filter": current, "limit": 100, **({"cursor": cursor} if cursor else {})}
        page: Any = rest.call("POST", f"{scope}/memories/query", body, 200)
        records += page["entries"]
        cursor = page["next_cursor"]
        if cursor is None:
            return records


def _ranked(rest: Rest, scope: str, question: Any, where: dict[str, Any], dia_of: dict[str, str]) -> list[str]:
    """The turns a hybrid search's top 10 retrieves: its turns, and the turns its records cite."""
    reply: Any = rest.call(
        "POST",
        f"{scope}/memories/search",
        {"query": question.text, "top_k": 10, "mode": "hybrid", "filter": where},
        200,
    )
    ranked: list[str] = []
    for hit in reply["entries"]:
        if "dia_id" in hit["metadata"]:
            ranked.append(hit["metadata"]["dia_id"])
            continue
        sources = hit["metadata"].get("agentcore.sources") or []
        if len(sources) <= MAX_CITED:
            ranked += [dia_of[s] for s in sources if s in dia_of]
    return list(dict.fromkeys(ranked))
