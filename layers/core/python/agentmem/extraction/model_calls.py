"""What a batch asks the model, and the records it learns from the answers: per strategy, candidate records
(weighed against the most similar current records of their namespace, with a second call for what is not
settled without one) or the session's summary written again; a strategy whose call fails is reported failed,
with whether the failure was the model's (agentmem/extraction/model_state.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentmem.clock import parse_timestamp
from agentmem.errors import MemoryServiceError
from agentmem.extraction import consolidation, model_state, prompts
from agentmem.extraction.config import AppMemory, Strategy
from agentmem.extraction.consolidation import Add, Candidate, Keep, Update
from agentmem.extraction.sinks import NewRecord, RecordSink
from agentmem.keys import Scope
from agentmem.llm.port import (
    ChatModel,
    ModelAnswerInvalid,
    ModelRefused,
    ModelTimedOut,
    ModelUnavailable,
    Usage,
    structured,
)
from agentmem.observability import logger

NEIGHBOURS = 3
"""Similar current records each candidate is weighed against."""
MAX_RECORDS_PER_BATCH = 24
"""Records (new and replaced) one batch commits at most: one transaction holds them with the cursor."""
MAX_SOURCES = 32
ANSWER_TOKENS = {"records": 400, "summary": 300, "decisions": 200}
"""The most output tokens each kind of call may take: eight records of some twenty words, a 150-word summary,
a decision per candidate (a model that repeats itself stops there, and its answer is asked for again)."""


@dataclass
class Learnt:
    """A batch's outcome across strategies: records to commit, graph writes to apply, usage, failures."""

    records: list[NewRecord] = field(default_factory=list)
    graph: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    failed: dict[str, str] = field(default_factory=dict)
    """Strategy id -> why it failed (no user content: safe to keep and show)."""
    model_failure: MemoryServiceError | None = None
    """The last failure that was the model's (unreachable, timed out, refused), for the app's model state."""
    answered: bool = False
    """The model answered a call (in schema or not): it is reachable."""


class ModelCalls:
    def __init__(self, model: ChatModel | None, records: RecordSink, clock: Callable[[], datetime]) -> None:
        self._model = model
        self._records = records
        self._clock = clock

    def extract(
        self,
        scope: Scope,
        session: str,
        memory: AppMemory,
        strategies: Sequence[Strategy],
        batch: Sequence[prompts.Message],
        earlier: Sequence[prompts.Message],
    ) -> Learnt:
        result = Learnt()
        said_at = parse_timestamp(max(m.timestamp for m in batch)) if batch else self._clock()
        for strategy in strategies:
            namespace = strategy.namespace_for(scope.user, session)
            try:
                if strategy.type == "SUMMARIZATION":
                    planned = self._summarise(scope, strategy, namespace, batch)
                else:
                    planned = self._candidates(scope, strategy, namespace, batch, earlier)
            except (ModelUnavailable, ModelRefused, ModelAnswerInvalid) as error:
                result.usage = result.usage + error.usage
                hint = f"; {model_state.TIMEOUT_HINT}" if isinstance(error, ModelTimedOut) else ""
                result.failed[strategy.id] = f"{strategy.name}: {error.code} ({_plain(error.message)}{hint})"
                if model_state.status_of(error) is None:
                    result.answered = True
                else:
                    result.model_failure = error
                continue
            result.answered = True
            usage, actions = planned
            result.usage = result.usage + usage
            for action in actions:
                if isinstance(action, Keep) or len(result.records) >= MAX_RECORDS_PER_BATCH:
                    continue
                candidate = action.candidate
                replaces = action.replaces if isinstance(action, Update) else None
                index = len(result.records)
                result.records.append(
                    NewRecord(
                        namespace=namespace,
                        strategy_id=strategy.id,
                        text=candidate.text,
                        said_at=said_at,
                        sources=candidate.sources[:MAX_SOURCES],
                        about=candidate.about,
                        replaces=replaces,
                    )
                )
                if strategy.type in ("SEMANTIC", "USER_PREFERENCE") and candidate.about:
                    op: dict[str, Any] = {
                        "record": index,
                        "entity": candidate.about,
                        "type": candidate.about_type,
                        "fact": candidate.text,
                    }
                    if replaces is not None and replaces.about == candidate.about:
                        op["replaces"] = replaces.text
                    result.graph.append(op)
        return result

    def _candidates(
        self,
        scope: Scope,
        strategy: Strategy,
        namespace: str,
        batch: Sequence[prompts.Message],
        earlier: Sequence[prompts.Message],
    ) -> tuple[Usage, list[consolidation.Action]]:
        assert self._model is not None
        answer_type = prompts.ANSWERS[strategy.type]
        asked = structured(
            self._model,
            answer_type,
            system=prompts.system_prompt(strategy.type, scope.user, strategy.extraction_instruction),
            prompt=prompts.conversation(batch, earlier),
            max_output_tokens=ANSWER_TOKENS["records"],
        )
        usage = asked.usage
        by_number = {m.number: m.entry_id for m in batch}
        candidates = consolidation.candidates_of(asked.answer, by_number, scope.user)
        candidates = [c for c in candidates if c.text.strip()]
        if not candidates:
            return usage, []
        neighbours = [self._records.similar(scope, namespace, c.text, NEIGHBOURS) for c in candidates]
        decided = consolidation.settled(candidates, neighbours)
        open_ = [i for i in range(len(candidates)) if i not in decided]
        decisions: list[prompts.Decision] = []
        if open_:
            system = prompts.CONSOLIDATION_SYSTEM
            if strategy.consolidation_instruction:
                system = f"{system}\n\n{strategy.consolidation_instruction.strip()}"
            try:
                asked_again = structured(
                    self._model,
                    prompts.Decisions,
                    system=system,
                    prompt=prompts.consolidation_prompt(
                        [candidates[i].text for i in open_], [[e.text for e in neighbours[i]] for i in open_]
                    ),
                    max_output_tokens=ANSWER_TOKENS["decisions"],
                )
            except ModelAnswerInvalid as error:  # AgentCore's documented behaviour: the new records are kept
                logger.warning("consolidation answer invalid; the new records are kept", app=scope.app)
                return usage + error.usage, consolidation.plan(candidates, neighbours)
            usage = usage + asked_again.usage
            renumbered = dict(enumerate(open_))
            decisions = [
                d.model_copy(update={"memory": renumbered[d.memory]})
                for d in asked_again.answer.decisions  # type: ignore[attr-defined]
                if d.memory in renumbered
            ]
        return usage, consolidation.plan(candidates, neighbours, decisions)

    def _summarise(
        self, scope: Scope, strategy: Strategy, namespace: str, batch: Sequence[prompts.Message]
    ) -> tuple[Usage, list[consolidation.Action]]:
        """The session's summary, written again with the new messages: an update of the current one."""
        assert self._model is not None
        current = self._records.newest(scope, namespace, 1)
        previous = current[0] if current else None
        system = prompts.system_prompt("SUMMARIZATION", scope.user, strategy.extraction_instruction)
        asked = structured(
            self._model,
            prompts.Summary,
            system=system,
            prompt=prompts.summary_prompt(batch, previous.text if previous else None),
            max_output_tokens=ANSWER_TOKENS["summary"],
        )
        text = asked.answer.summary.strip()  # type: ignore[attr-defined]
        if not text:
            return asked.usage, []
        candidate = Candidate(text, sources=tuple(m.entry_id for m in batch))
        if previous is not None and consolidation.normalised(previous.text) == consolidation.normalised(text):
            return asked.usage, [Keep(candidate, "the summary did not change")]
        return asked.usage, [Update(candidate, previous) if previous is not None else Add(candidate)]


def _plain(message: str) -> str:
    """An error's message, cut short (it names no user content: the model's answer is never quoted)."""
    return message[:160]
