"""What each strategy asks the model, and the answers it accepts (JSON checked against these models).

Answers are strict: a field the schema does not name makes the answer invalid (it is asked again, then the
work is parked), so an answer can never name a namespace, an actor or a user: where a record goes is the
strategy's namespace template, filled in with the actor and session extracted for, never the model's word.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentmem.clock import format_timestamp
from agentmem.extraction.config import StrategyType
from agentmem.memory import records as memory_records
from agentmem.stores.table import Item

MAX_RECORD_CHARS = 1_000
MAX_CANDIDATES = 8
"""Records one model call may propose (a longer list does not validate)."""
MAX_SUMMARY_CHARS = 4_000


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Fact(_Answer):
    text: str = Field(min_length=1, max_length=MAX_RECORD_CHARS)
    about: str | None = Field(default=None, max_length=120)
    about_type: str | None = Field(default=None, max_length=40)
    messages: list[int] = Field(default_factory=list, max_length=20)


class Facts(_Answer):
    facts: list[Fact] = Field(max_length=MAX_CANDIDATES)


class Preference(_Answer):
    text: str = Field(min_length=1, max_length=MAX_RECORD_CHARS)
    category: str | None = Field(default=None, max_length=60)
    messages: list[int] = Field(default_factory=list, max_length=20)


class Preferences(_Answer):
    preferences: list[Preference] = Field(max_length=MAX_CANDIDATES)


class Summary(_Answer):
    summary: str = Field(max_length=MAX_SUMMARY_CHARS)


class Episode(_Answer):
    situation: str = Field(max_length=MAX_RECORD_CHARS)
    actions: str = Field(max_length=MAX_RECORD_CHARS)
    outcome: str = Field(max_length=MAX_RECORD_CHARS)
    messages: list[int] = Field(default_factory=list, max_length=20)


class Episodes(_Answer):
    episodes: list[Episode] = Field(max_length=5)


class Decision(_Answer):
    memory: int = Field(ge=0)
    action: Literal["ADD", "UPDATE", "NOOP"]
    existing: int | None = Field(default=None, ge=0)


class Decisions(_Answer):
    decisions: list[Decision] = Field(max_length=MAX_CANDIDATES)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation, numbered as the prompt shows it."""

    number: int
    entry_id: str
    role: str
    text: str
    said_at: str
    """The day it was said (``YYYY-MM-DD``): relative dates in it are read against this day."""
    timestamp: str = ""
    """When it was said (RFC 3339)."""
    written: int = 0
    """When its session row was written (epoch milliseconds; 0 for a row written before that was kept)."""
    said: int = 1
    """The messages it holds: its text parts (an AgentCore event of a user's and an assistant's message holds
    two), which the app's message trigger counts, as AgentCore counts ``messageCount``."""


_SYSTEM = {
    "SEMANTIC": (
        "You extract lasting facts from a conversation for a long-term memory. A fact is one short sentence "
        "that makes sense on its own: name the person or thing it is about (never 'I', 'he' or 'she'), and turn "
        "relative dates into dates using the day each message was said. Keep only what the messages state, "
        "never guesses, greetings or questions. For each fact give `about` (the person or thing), `about_type` "
        "(person, place, organisation, thing, event or other) and `messages` (the numbers of the messages it "
        'comes from). Answer with JSON only: {"facts": [...]}, an empty list when there is nothing to keep.'
    ),
    "USER_PREFERENCE": (
        "You extract the preferences of {actor} from a conversation for a long-term memory: what they like, "
        "dislike, choose, want or habitually do. Each preference is one short sentence naming {actor}. Keep "
        "only what the messages state, never guesses. Give a `category` (food, travel, work, hobby, style, "
        "health, communication or other) and `messages` (the numbers of the messages it comes from). Answer "
        'with JSON only: {"preferences": [...]}, an empty list when there is none.'
    ),
    "SUMMARIZATION": (
        "You keep a running summary of one conversation for a long-term memory: who took part, what was said "
        "and decided, with dates. Given the summary so far and the new messages, write the summary as it should "
        'now read, at most 200 words. Answer with JSON only: {"summary": "..."}.'
    ),
    "EPISODIC": (
        "You record the episodes of a conversation for a long-term memory: a situation, what was done, and how "
        "it turned out. Give the `messages` each episode comes from. Answer with JSON only: "
        '{"episodes": [...]}, an empty list when nothing happened.'
    ),
}

CONSOLIDATION_SYSTEM = (
    "You keep a long-term memory free of repeats and of outdated entries. For each new memory, compare it "
    "with the existing memories listed under it and decide: ADD when it says something the existing ones do "
    "not; UPDATE with `existing` set to the number of the existing memory it replaces, when it is about the "
    "same thing and newer or more complete (a changed preference, a corrected fact); NOOP when an existing "
    'memory already says it. Answer with JSON only: {"decisions": [{"memory": n, "action": ..., '
    '"existing": m}]}, one decision per new memory.'
)

ANSWERS: dict[StrategyType, type[BaseModel]] = {
    "SEMANTIC": Facts,
    "USER_PREFERENCE": Preferences,
    "SUMMARIZATION": Summary,
    "EPISODIC": Episodes,
}


def system_prompt(kind: StrategyType, actor: str, instruction: str | None) -> str:
    prompt = _SYSTEM[kind].replace("{actor}", actor)
    return f"{prompt}\n\n{instruction.strip()}" if instruction and instruction.strip() else prompt


def conversation(messages: Sequence[Message], earlier: Sequence[Message] = ()) -> str:
    """The messages as the prompt shows them: numbered, each with its day and speaker."""
    lines: list[str] = []
    if earlier:
        lines.append("Earlier messages (context only):")
        lines += [f"- ({m.said_at}) {m.role}: {m.text}" for m in earlier]
        lines.append("")
    lines.append("Messages:")
    lines += [f"[{m.number}] ({m.said_at}) {m.role}: {m.text}" for m in messages]
    return "\n".join(lines)


def summary_prompt(messages: Sequence[Message], previous: str | None) -> str:
    return f"Summary so far:\n{previous or '(none yet)'}\n\n{conversation(messages)}"


def consolidation_prompt(candidates: Sequence[str], neighbours: Sequence[Sequence[str]]) -> str:
    """Each new memory (numbered from 0) with the existing memories it may repeat or replace (numbered from 0)."""
    blocks = []
    for i, (text, existing) in enumerate(zip(candidates, neighbours, strict=True)):
        listed = "\n".join(f"    existing {j}: {e}" for j, e in enumerate(existing)) or "    (none)"
        blocks.append(f"new memory {i}: {text}\n{listed}")
    return "\n\n".join(blocks)


def messages_of(items: Sequence[Item], now: datetime) -> list[Message]:
    """Entry items as numbered messages (from 1), their text parts only; entries without text are left out."""
    messages: list[Message] = []
    for item in items:
        if not memory_records.is_live(item, format_timestamp(now)):
            continue
        text = memory_records.entry_text(item).strip()
        if not text:
            continue
        content = json.loads(item["content"])
        role = str(item.get("author") or content.get("role") or "user")
        said = sum(1 for part in content.get("parts") or [] if isinstance(part, dict) and part.get("text"))
        stamp = str(item["timestamp"])
        messages.append(Message(len(messages) + 1, item["id"], role, text, stamp[:10], stamp, said=max(1, said)))
    return messages
