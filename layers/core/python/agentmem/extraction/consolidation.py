"""Consolidation as a pure function: each candidate record against the most similar current records of its
namespace becomes an addition, an update (the existing record's valid time ends and the candidate replaces
it; nothing is deleted) or nothing.

What needs no model is settled here: a candidate that repeats a record (or an earlier candidate of the same
batch) word for word is nothing; one with no similar record is an addition. The rest follow the model's
decisions, each checked: an update must name one of that candidate's own neighbours, not one an earlier
candidate already replaced; anything else the model says becomes an addition (a fact is never dropped on a
malformed decision).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentmem.extraction.prompts import Decision, Episode, Preference


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record a model proposed: its text, what it is about (for the knowledge graph), the entries it came
    from."""

    text: str
    about: str | None = None
    about_type: str | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Existing:
    """A current record of the namespace, as similar records are found."""

    record_id: str
    text: str
    about: str | None = None
    item: Mapping[str, object] = field(default_factory=dict, compare=False)
    """The record's entry item as read (a replacement is written only if it is still so)."""


@dataclass(frozen=True, slots=True)
class Add:
    candidate: Candidate


@dataclass(frozen=True, slots=True)
class Update:
    candidate: Candidate
    replaces: Existing


@dataclass(frozen=True, slots=True)
class Keep:
    """Nothing to write: the candidate is already known."""

    candidate: Candidate
    reason: str


Action = Add | Update | Keep


def normalised(text: str) -> str:
    """A text as compared for repeats: case folded, spaces collapsed, final punctuation dropped."""
    return re.sub(r"\s+", " ", text.casefold()).strip().rstrip(".!;:, ")


def settled(candidates: Sequence[Candidate], neighbours: Sequence[Sequence[Existing]]) -> dict[int, Action]:
    """The candidates decided without a model: repeats (of a record, or of an earlier candidate) and those
    with no similar record."""
    decided: dict[int, Action] = {}
    seen: set[str] = set()
    for i, (candidate, near) in enumerate(zip(candidates, neighbours, strict=True)):
        key = normalised(candidate.text)
        if key in seen:
            decided[i] = Keep(candidate, "repeats an earlier candidate")
        elif any(normalised(e.text) == key for e in near):
            decided[i] = Keep(candidate, "repeats a record")
        elif not near:
            decided[i] = Add(candidate)
        seen.add(key)
    return decided


def plan(
    candidates: Sequence[Candidate],
    neighbours: Sequence[Sequence[Existing]],
    decisions: Sequence[Decision] = (),
) -> list[Action]:
    """One action per candidate, in order: :func:`settled` first, then the model's ``decisions`` (numbered
    as in the consolidation prompt: candidates and each one's neighbours from 0)."""
    decided = settled(candidates, neighbours)
    told: dict[int, Decision] = {}
    for decision in decisions:
        told.setdefault(decision.memory, decision)
    replaced: set[str] = set()
    actions: list[Action] = []
    for i, (candidate, near) in enumerate(zip(candidates, neighbours, strict=True)):
        action = decided.get(i)
        if action is None:
            action = _checked(candidate, near, told.get(i), replaced)
        if isinstance(action, Update):
            replaced.add(action.replaces.record_id)
        actions.append(action)
    return actions


def _checked(candidate: Candidate, near: Sequence[Existing], decision: Decision | None, replaced: set[str]) -> Action:
    if decision is None:
        return Add(candidate)
    if decision.action == "NOOP":
        return Keep(candidate, "the model found it known")
    if decision.action == "UPDATE" and decision.existing is not None and decision.existing < len(near):
        target = near[decision.existing]
        if target.record_id not in replaced:
            return Update(candidate, target)
    return Add(candidate)


ANSWER_LISTS = ("facts", "preferences", "episodes")
"""The fields of the answers that list candidates (prompts.Facts, Preferences, Episodes)."""


def candidates_of(answer: Any, by_number: Mapping[int, str], actor: str) -> list[Candidate]:
    """The candidate records of an extraction answer (facts, preferences or episodes), each naming the entries
    it came from (``by_number``: the prompt's message numbers to entry ids; all of them when it names none)
    and what it is about (a preference is about ``actor``)."""
    items: list[Any] = next((list(getattr(answer, n)) for n in ANSWER_LISTS if hasattr(answer, n)), [])
    return [_candidate(item, by_number, actor) for item in items]


def _candidate(item: Any, by_number: Mapping[int, str], actor: str) -> Candidate:
    sources = tuple(dict.fromkeys(by_number[n] for n in getattr(item, "messages", []) if n in by_number))
    every = sources or tuple(by_number.values())
    if isinstance(item, Episode):
        return Candidate(
            f"Situation: {item.situation} Actions: {item.actions} Outcome: {item.outcome}".strip(), sources=every
        )
    if isinstance(item, Preference):
        return Candidate(item.text.strip(), about=actor, about_type="person", sources=every)
    about = (item.about or "").strip() or None
    return Candidate(item.text.strip(), about=about, about_type=item.about_type, sources=every)
