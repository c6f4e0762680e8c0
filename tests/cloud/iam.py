"""A small IAM identity-policy evaluator: is one request (action, resource, condition keys) allowed?

What it implements, as the IAM policy evaluation logic documents it for one principal's identity
policies: a request is allowed when some statement allows it and no statement denies it (an explicit
Deny wins; no match is an implicit deny). ``Action``/``NotAction`` and ``Resource``/``NotResource``
match with the ``*`` and ``?`` wildcards (actions case-insensitively). Conditions: ``StringEquals``,
``StringLike``, ``StringNotEquals``, ``StringNotLike`` and ``ArnLike``/``ArnEquals``, with the
``ForAllValues:`` / ``ForAnyValue:`` set qualifiers; a statement whose condition does not hold does not
apply (for an Allow as for a Deny). An operator it does not know raises: never a silent allow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

Context = Mapping[str, Sequence[str]]
"""Condition keys of the request, each with its values (``dynamodb:LeadingKeys`` -> the partition keys)."""


@lru_cache(maxsize=4096)
def _pattern(glob: str, case_sensitive: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(f"^{regex}$", 0 if case_sensitive else re.IGNORECASE)


def matches(glob: str, value: str, *, case_sensitive: bool = True) -> bool:
    return _pattern(glob, case_sensitive).match(value) is not None


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


_STRING_OPERATORS = {
    "StringEquals": (lambda pattern, value: pattern == value, False),
    "StringLike": (lambda pattern, value: matches(pattern, value), False),
    "ArnEquals": (lambda pattern, value: pattern == value, False),
    "ArnLike": (lambda pattern, value: matches(pattern, value), False),
    "StringNotEquals": (lambda pattern, value: pattern == value, True),
    "StringNotLike": (lambda pattern, value: matches(pattern, value), True),
}


def _condition_holds(operator: str, key: str, expected: list[str], context: Context) -> bool:
    qualifier, _, name = operator.rpartition(":")
    if name.endswith("IfExists"):
        raise ValueError(f"condition operator {operator} is not supported by this evaluator")
    if name not in _STRING_OPERATORS:
        raise ValueError(f"condition operator {operator} is not supported by this evaluator")
    compare, negated = _STRING_OPERATORS[name]
    values = list(context.get(key, ()))

    def one(value: str) -> bool:
        hit = any(compare(pattern, value) for pattern in expected)
        return not hit if negated else hit

    if qualifier == "ForAllValues":
        return all(one(v) for v in values)  # true for an empty set, as IAM documents
    if qualifier == "ForAnyValue":
        return any(one(v) for v in values)
    if qualifier:
        raise ValueError(f"condition qualifier {qualifier} is not supported by this evaluator")
    if not values:
        return negated  # a missing key: a positive operator fails, a negated one holds
    return all(one(v) for v in values) if negated else any(one(v) for v in values)


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    conditions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    sid: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any], sid: str = "") -> Statement:
        conditions = tuple(
            (operator, key, tuple(_listed(expected)))
            for operator, block in (raw.get("Condition") or {}).items()
            for key, expected in block.items()
        )
        return cls(
            effect=str(raw["Effect"]),
            actions=tuple(_listed(raw.get("Action"))),
            not_actions=tuple(_listed(raw.get("NotAction"))),
            resources=tuple(_listed(raw.get("Resource"))),
            not_resources=tuple(_listed(raw.get("NotResource"))),
            conditions=conditions,
            sid=str(raw.get("Sid") or sid),
        )

    def applies(self, action: str, resource: str, context: Context) -> bool:
        if self.not_actions:
            if any(matches(a, action, case_sensitive=False) for a in self.not_actions):
                return False
        elif not any(matches(a, action, case_sensitive=False) for a in self.actions):
            return False
        if self.not_resources:
            if any(matches(r, resource) for r in self.not_resources):
                return False
        elif not any(matches(r, resource) for r in self.resources):
            return False
        return all(_condition_holds(op, key, list(expected), context) for op, key, expected in self.conditions)

    def grants(self) -> list[tuple[str, str]]:
        """(action, resource) pairs this statement names (for the report of grants no call used)."""
        return [(a, r) for a in self.actions or ("NotAction",) for r in self.resources or ("NotResource",)]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    allowed_by: tuple[Statement, ...] = ()
    denied_by: tuple[Statement, ...] = ()


@dataclass
class Policy:
    """Every identity-policy statement of one principal."""

    statements: list[Statement] = field(default_factory=list)

    @classmethod
    def from_documents(cls, documents: Iterable[Mapping[str, Any]]) -> Policy:
        statements: list[Statement] = []
        for document in documents:
            raw = document["Statement"]
            for statement in [raw] if isinstance(raw, Mapping) else raw:
                statements.append(Statement.parse(statement, sid=f"#{len(statements)}"))
        return cls(statements)

    def evaluate(self, action: str, resource: str, context: Context | None = None) -> Decision:
        context = context or {}
        applying = [s for s in self.statements if s.applies(action, resource, context)]
        denied = tuple(s for s in applying if s.effect == "Deny")
        allowed = tuple(s for s in applying if s.effect == "Allow")
        return Decision(allowed=bool(allowed) and not denied, allowed_by=allowed, denied_by=denied)
