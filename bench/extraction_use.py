"""What extraction uses per turn, counted on the real pipeline (for bench_cost.py, issue 34's "what it costs").

Every turn of the conversations (LoCoMo's dev conversations as bench_locomo.py reads them; the sample
conversation of bench/data/sample_conversation.py at ``BENCH_SCALE`` below 1) is written through the API's
handler into an app that learns semantic facts, user preferences and session summaries; ExtractionService
extracts them through a Container's local runner (drained in this thread, on a clock the bench moves), asking a
scripted OpenAI-compatible model (tests/scripted_model.py) over loopback HTTP. Two ways turns arrive, each on a
table of its own:

- **sessions written whole**: one PUT a session (as the cost bench's workload stores turns, and as ``make bench
  ONLY=extraction`` ingests): a session's messages are extracted in batches of up to 20;
- **turn by turn**: one POST a turn (as an agent adds them), with the app's default triggers (6 new messages, or
  60 idle seconds at the session's end): batches of about 6, and the session's summary written again each time.

What is counted:

- every request the model receives, by strategy (a consolidation call counts to the strategy whose candidates it
  weighs): its input as the characters of the system prompt, the user prompt and the answer's JSON schema
  (Bedrock's Converse sends the schema as the forced tool's input schema, which the model reads), its output as
  the answer's characters, at :data:`CHARS_PER_TOKEN` characters a token (the OpenAI-compatible adapter's
  estimate when an endpoint reports none);
- what extraction's steps metered to the app (the usage route's counters after each drain less before): model
  calls and tokens as the adapter had them reported (the messages only, without the schema), DynamoDB request
  units, Titan tokens of the records embedded;
- the records the users hold at the end (current ones: a summary written again counts once).

The answers are scripted, not a model's; their lengths are a model's (:data:`FACTS_PER_MESSAGE` facts of about
:data:`FACT_WORDS` words, :data:`PREFERENCES_PER_MESSAGE` preferences of about :data:`PREFERENCE_WORDS` words, a
summary of :data:`SUMMARY_WORDS` words each batch, a decision to add for each candidate weighed), so the records
per session are the script's: ``make bench ONLY=extraction`` counts a real model's (bench/out/extraction.json).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cost_model import TOGETHER, ExtractionUse

CHARS_PER_TOKEN = 4
"""As the OpenAI-compatible adapter estimates tokens when an endpoint reports none (agentmem/llm)."""
FACTS_PER_MESSAGE = 3 / 20
"""Three facts in a batch of 20 messages."""
FACT_WORDS = 15
PREFERENCES_PER_MESSAGE = 1 / 20
PREFERENCE_WORDS = 12
SUMMARY_WORDS = 150
TITAN_DIMENSION = 1024
"""The records' vectors as long as Titan v2's in the cloud (they are in the items the DynamoDB units count); the
hashing embedder makes them here without a model."""
APP = "cost-bench"
STRATEGY_NAMES = {
    "SEMANTIC": "semantic facts",
    "USER_PREFERENCE": "user preferences",
    "SUMMARIZATION": "session summaries",
}
ARRIVALS = ("sessions written whole", "turn by turn")
_ASKED_FOR = {"Facts": "SEMANTIC", "Preferences": "USER_PREFERENCE", "Summary": "SUMMARIZATION"}
_MESSAGE = re.compile(r"^\[\d+\] \(([^)]*)\) ([^:]*): (.*)$", re.M)


@dataclass
class Tokens:
    calls: int = 0
    input: int = 0
    output: int = 0

    def add(self, input_chars: int, output_chars: int) -> None:
        self.calls += 1
        self.input += math.ceil(input_chars / CHARS_PER_TOKEN)
        self.output += math.ceil(output_chars / CHARS_PER_TOKEN)


@dataclass
class Run:
    """One way of arrival over every conversation: what the model was asked, per strategy, and what was metered."""

    arrival: str
    source: str
    turns: int
    sessions: int
    by_strategy: dict[str, Tokens]
    """By strategy type (SEMANTIC, USER_PREFERENCE, SUMMARIZATION)."""
    metered: dict[str, int]
    """The app's usage counters that extraction's steps added (model_calls, model_input_tokens, read_units...)."""
    records: int
    seconds: float


# -- the scripted model ------------------------------------------------------------------------------


@dataclass
class ScriptedExtractor:
    """Answers each extraction request with records of a model's length, made of the batch's own words (so
    that no two facts are alike and consolidation weighs them as it would a model's), and counts every request."""

    by_strategy: dict[str, Tokens] = field(default_factory=lambda: {kind: Tokens() for kind in STRATEGY_NAMES})
    _last: str = "SEMANTIC"
    _owed: dict[str, float] = field(default_factory=lambda: {"Facts": 0.0, "Preferences": 0.0})

    def __call__(self, request: dict[str, Any]) -> str:
        form = request.get("response_format", {}).get("json_schema", {})
        name = form.get("name", "")
        system, prompt = (str(m.get("content", "")) for m in request["messages"][:2])
        answer = self._answer(name, system, prompt)
        kind = _ASKED_FOR.get(name, self._last)  # a consolidation call weighs the last strategy's candidates
        self._last = kind
        self.by_strategy[kind].add(len(system) + len(prompt) + len(json.dumps(form.get("schema", {}))), len(answer))
        return answer

    def _answer(self, name: str, system: str, prompt: str) -> str:
        said = [(match[1], match[2], match[3].split()) for match in _MESSAGE.finditer(prompt)]
        if name == "Facts":
            facts = [
                {
                    "text": _sentence(said, n, FACT_WORDS),
                    "about": said[n][1],
                    "about_type": "person",
                    "messages": [n + 1],
                }
                for n in self._picks("Facts", said, FACTS_PER_MESSAGE)
            ]
            return json.dumps({"facts": facts})
        if name == "Preferences":
            actor = re.search(r"preferences of (.+?) from a conversation", system)
            who = actor[1] if actor else "The user"
            preferences = [
                {
                    "text": f"{who} likes " + _sentence(said, n, PREFERENCE_WORDS - 2),
                    "category": "hobby",
                    "messages": [n + 1],
                }
                for n in self._picks("Preferences", said, PREFERENCES_PER_MESSAGE)
            ]
            return json.dumps({"preferences": preferences})
        if name == "Summary":
            words = [word for _, _, text in said for word in text] or ["nothing"]
            return json.dumps({"summary": " ".join(words[i % len(words)] for i in range(SUMMARY_WORDS))})
        if name == "Decisions":
            weighed = len(re.findall(r"^new memory \d+:", prompt, re.M))
            return json.dumps({"decisions": [{"memory": i, "action": "ADD", "existing": None} for i in range(weighed)]})
        raise AssertionError(f"the cost bench's scripted model was asked for {name!r}")

    def _picks(self, name: str, said: Sequence[object], per_message: float) -> list[int]:
        """Which messages this batch's records come from: ``per_message`` records a message over the run
        (what a batch does not reach is owed to the next), spread over the batch."""
        self._owed[name] += per_message * len(said)
        count = min(int(self._owed[name]), len(said))
        self._owed[name] -= count
        return [round(i * len(said) / count) for i in range(count)] if count else []


def _sentence(said: Sequence[tuple[str, str, list[str]]], start: int, words: int) -> str:
    """About ``words`` words from the batch's messages from ``start`` on, said by the speaker of ``start``."""
    taken: list[str] = [said[start][1]]
    for _, _, text in said[start:]:
        taken += text[: words - len(taken)]
        if len(taken) >= words:
            break
    return " ".join(taken).rstrip(".") + "."


# -- a run -------------------------------------------------------------------------------------------


class _Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def measure(arrival: str, conversations: Sequence[Any], source: str) -> Run:
    """Every conversation arriving as ``arrival`` says, extracted by the real pipeline on a table of its own."""
    from bench_locomo import _entry

    from agentmem.clock import format_timestamp, utc_now
    from agentmem.container import Container, set_container
    from agentmem.extraction.config import AppMemory, Strategy
    from agentmem.llm.openai_compatible import OpenAICompatibleChatModel
    from agentmem.settings import Settings
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.tenancy.metering import COUNTERS, read_usage
    from tests.scripted_model import ScriptedModelServer
    from tests.support import ApiClient, scope_path

    model = ScriptedExtractor()
    clock = _Clock(utc_now())
    metered = dict.fromkeys(COUNTERS, 0)
    turns = sessions = records = 0
    with tempfile.TemporaryDirectory() as folder, ScriptedModelServer(model) as server:
        table = SqliteTable(Path(folder) / "extraction.db")
        chat = OpenAICompatibleChatModel(server.url, server.model, timeout_seconds=60)
        settings = Settings(deletion_drain_seconds=0, embedder="hashing", embedding_dimension=TITAN_DIMENSION)
        container = Container(settings, table=table, model=chat, background=False, clock=clock)
        set_container(container)
        try:
            now = format_timestamp(clock())
            strategies = tuple(
                Strategy(f"{kind.lower().replace('_', '-')}-cost", STRATEGY_NAMES[kind], kind, namespace)  # type: ignore[arg-type]
                for kind, namespace in (
                    ("SEMANTIC", "/facts/{actorId}/"),
                    ("USER_PREFERENCE", "/preferences/{actorId}/"),
                    ("SUMMARIZATION", "/summaries/{actorId}/{sessionId}/"),
                )
            )
            memory = container.memories.put(AppMemory(APP, "cost bench", APP, now, now, strategies=strategies))
            api = ApiClient()

            def drain() -> None:
                before = _usage(read_usage(table, APP), COUNTERS)
                container.local_extraction.drain()
                after = _usage(read_usage(table, APP), COUNTERS)
                for name in COUNTERS:
                    metered[name] += after[name] - before[name]

            started = time.perf_counter()
            for conversation in conversations:
                scope = scope_path(APP, conversation.name)
                for number, said in enumerate(conversation.sessions(), 1):
                    sessions += 1
                    turns += len(said)
                    entries = [_said_at(_entry(turn), turn.when + timedelta(seconds=n)) for n, turn in enumerate(said)]
                    if arrival == "sessions written whole":
                        _ok(api.put(f"{scope}/sessions/{number}/memories", {"entries": entries}))
                    else:
                        for entry in entries:
                            _ok(api.post(f"{scope}/memories", {"entry": entry, "session_id": str(number)}))
                            drain()
                    clock.now += timedelta(seconds=memory.trigger_idle_seconds + 1)  # the session ends
                    drain()
                records += sum(1 for _ in _records(api, scope))
            seconds = time.perf_counter() - started
        finally:
            set_container(None)
            table.close()
    return Run(arrival, source, turns, sessions, model.by_strategy, metered, records, seconds)


def _said_at(entry: dict[str, Any], when: datetime) -> dict[str, Any]:
    """The turn said a second after the one before it (LoCoMo dates a session, not its turns): entries written one
    at a time keep their order only by their time (their ids begin with it)."""
    return {**entry, "timestamp": when.isoformat().replace("+00:00", "Z")}


def _usage(days: Sequence[Any], counters: Sequence[str]) -> dict[str, int]:
    return {name: sum(int(getattr(day, name)) for day in days) for name in counters}


def _ok(reply: Any) -> None:
    assert reply.status < 300, (reply.status, reply.body)


def _records(api: Any, scope: str) -> Iterator[dict[str, Any]]:
    cursor = None
    while True:
        current = {"agentcore.kind": "record", "agentcore.valid_to": {"$exists": False}}  # not replaced since
        body = {"filter": current, "limit": 100, **({"cursor": cursor} if cursor else {})}
        reply = api.post(f"{scope}/memories/query", body)
        _ok(reply)
        yield from reply.body["entries"]
        cursor = reply.body["next_cursor"]
        if cursor is None:
            return


def measure_all(progress: Callable[[str], None] = lambda _: None) -> list[Run]:
    """Both ways of arrival over the conversations bench_locomo.py reads (the sample one at a hundredth)."""
    from bench_locomo import conversations

    convs, source = conversations()
    runs = []
    for arrival in ARRIVALS:
        progress(f"extraction, {arrival}: {sum(len(c.turns) for c in convs):,} turns ({source})")
        runs.append(measure(arrival, convs, source))
        progress(f"  {runs[-1].seconds:.1f} s, {sum(t.calls for t in runs[-1].by_strategy.values()):,} model calls")
    return runs


# -- per 1,000 turns -------------------------------------------------------------------------------------


def per_thousand_turns(run: Run) -> ExtractionUse:
    """What ``run`` used per 1,000 turns (tokens counted from the requests, schema included)."""
    per = 1000 / run.turns
    tokens = {STRATEGY_NAMES[kind]: (t.input * per, t.output * per) for kind, t in run.by_strategy.items()}
    tokens[TOGETHER] = (sum(i for i, _ in tokens.values()), sum(o for _, o in tokens.values()))
    calls = {STRATEGY_NAMES[kind]: t.calls * per for kind, t in run.by_strategy.items()}
    calls[TOGETHER] = sum(calls.values())
    source = (
        f"the pipeline run here ({run.source}: {run.turns:,} turns in {run.sessions} sessions) with a scripted model "
        f"of a model's answer lengths; tokens counted at {CHARS_PER_TOKEN} characters a token, the answer's JSON "
        "schema in the input (Converse sends it as the tool's schema; the usage meter, which has the messages "
        f"only, counted {run.metered['model_input_tokens'] * per:,.0f} in and "
        f"{run.metered['model_output_tokens'] * per:,.0f} out)"
    )
    return ExtractionUse(
        run.arrival,
        tokens,
        calls=calls,
        records=run.records * per,
        read_units=run.metered["read_units"] * per,
        write_units=run.metered["write_units"] * per,
        titan_tokens=run.metered["embedding_tokens"] * per,
        metered_tokens=(run.metered["model_input_tokens"] * per, run.metered["model_output_tokens"] * per),
        source=source,
    )
