"""The request and answer of ``/v1/apps/{app}/extraction``: what an app learns from its conversations
(docs/extraction.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentmem.extraction.config import MAX_INSTRUCTION_CHARS, MAX_STRATEGIES

StrategyKind = Literal["SEMANTIC", "USER_PREFERENCE", "SUMMARIZATION", "EPISODIC"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StrategyIn(_Strict):
    type: StrategyKind
    name: str = Field(pattern=r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$", description="unique in the app")
    namespace: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="a template naming {actorId} (and {sessionId}, {memoryStrategyId}); AgentCore's default "
        "for the type when absent",
    )
    instruction: str | None = Field(
        default=None, min_length=1, max_length=MAX_INSTRUCTION_CHARS, description="appended to the prompt"
    )
    consolidation_instruction: str | None = Field(default=None, min_length=1, max_length=MAX_INSTRUCTION_CHARS)


class ExtractionIn(_Strict):
    strategies: list[StrategyIn] = Field(max_length=MAX_STRATEGIES)
    trigger_messages: int = Field(default=6, ge=1, le=50, description="extract once this many messages are new")
    trigger_idle_seconds: int = Field(
        default=60, ge=10, le=3000, description="... or once the session has been idle this long"
    )
    token_budget: int | None = Field(
        default=None, ge=1, le=10**12, description="model tokens the app may spend per calendar month (UTC)"
    )


class StrategyOut(BaseModel):
    id: str
    type: StrategyKind
    name: str
    namespace: str
    instruction: str | None
    consolidation_instruction: str | None


class ExtractionState(BaseModel):
    status: Literal[
        "off", "on", "needs_model", "paused_budget", "model_unreachable", "model_timed_out", "model_refused"
    ]
    """``off``: no strategy; ``needs_model``: strategies but no model configured (MEMORY_MODEL);
    ``paused_budget``: this month's token budget is spent (writes are never refused for it);
    ``model_unreachable``, ``model_timed_out``, ``model_refused``: the app's last model call failed so
    (``message`` says why and when), until a call is answered."""
    model: str | None
    tokens_this_month: int
    message: str


class ExtractionOut(BaseModel):
    app: str
    strategies: list[StrategyOut]
    trigger_messages: int
    trigger_idle_seconds: int
    token_budget: int | None
    state: ExtractionState


class ExtractionJob(BaseModel):
    job_id: str
    user: str
    project: str | None
    session: str
    strategy: str
    """The strategy's id (``failure`` starts with its name)."""
    entry_ids: list[str]
    """The entries (turns) the job holds: what it extracts from when started again."""
    failure: str
    """Why it was parked: the error's code and words, never the model's answer."""
    parked_at: str


class ExtractionJobs(BaseModel):
    jobs: list[ExtractionJob]
    next_cursor: str | None
