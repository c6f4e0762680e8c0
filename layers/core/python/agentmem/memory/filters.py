"""The filter language of API.md: one parser into a typed tree, one evaluator over an entry's fields.

A filter is a JSON document over metadata keys and the built-in fields ``author``, ``session_id`` and
``timestamp`` (a metadata key of one of those names cannot be filtered on: the built-in wins)::

    {"k": v}                                    equality (a list-valued key: the list contains v)
    {"k": {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": v}}
    {"k": {"$in"|"$nin": [v, ...]}}, {"k": {"$exists": true|false}}
    {"$and": [f, ...]}, {"$or": [f, ...]}, {"$not": f}

Several keys (or operators) in one object are ANDed. Comparison is typed: numbers numerically (as
IEEE doubles), strings by code point, booleans only for equality; a value of another type does not
match, so ``$ne`` and ``$nin`` (the negations of ``$eq`` and ``$in``) match it, and match a missing key; so
does a held number no double holds (an integer of 400 digits): it never raises.
A ``timestamp`` value in RFC 3339 is compared in the stored form (UTC, milliseconds). Every comparison
(each value of ``$in``/``$nin``) and every ``$and``/``$or``/``$not`` counts as one condition; more than
:data:`MAX_CONDITIONS`, an unknown operator or a malformed document raises :class:`InvalidInput` (422).

Backends evaluate the tree: :func:`compile_filter` (once per search) or :func:`matches` over the table's
items (SQLite and DynamoDB, and the exact vector index over its cached rows); the OpenSearch adapter
translates it into its k-NN filter.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentmem.clock import format_timestamp, parse_timestamp
from agentmem.errors import InvalidInput

MAX_CONDITIONS = 50
BUILTIN_FIELDS = ("author", "session_id", "timestamp")
EXPIRES_AT = "expires_at"
"""An internal built-in (never parsed from a request): the liveness condition of searches."""
KEY_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{1,64}")

Scalar = str | int | float | bool
COMPARISONS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
ORDERINGS = ("$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    builtin: bool
    """True for ``author``, ``session_id``, ``timestamp`` (and the internal ``expires_at``); else a metadata key."""


@dataclass(frozen=True, slots=True)
class Compare:
    field: Field
    op: str
    """One of :data:`COMPARISONS`."""
    value: Scalar


@dataclass(frozen=True, slots=True)
class In:
    field: Field
    values: tuple[Scalar, ...]
    negate: bool = False


@dataclass(frozen=True, slots=True)
class Exists:
    field: Field
    present: bool


@dataclass(frozen=True, slots=True)
class And:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    part: Node


Node = Compare | In | Exists | And | Or | Not


def _bad(message: str) -> InvalidInput:
    return InvalidInput(f"filter: {message}", code="invalid_filter")


class _Parser:
    def __init__(self) -> None:
        self.conditions = 0

    def count(self, n: int = 1) -> None:
        self.conditions += n
        if self.conditions > MAX_CONDITIONS:
            raise _bad(f"more than {MAX_CONDITIONS} conditions")

    def document(self, value: Any) -> Node:
        if not isinstance(value, dict):
            raise _bad("a filter is a JSON object")
        parts: list[Node] = []
        for key, operand in value.items():
            if key.startswith("$"):
                parts.append(self.logical(key, operand))
            else:
                parts.extend(self.field(key, operand))
        if not parts:
            raise _bad("an empty object inside a filter matches nothing in particular; leave it out")
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def logical(self, op: str, operand: Any) -> Node:
        if op == "$not":
            self.count()
            return Not(self.document(operand))
        if op in ("$and", "$or"):
            self.count()
            if not isinstance(operand, list) or not operand:
                raise _bad(f"{op} takes a non-empty list of filters")
            parts = tuple(self.document(f) for f in operand)
            return And(parts) if op == "$and" else Or(parts)
        raise _bad(f"unknown operator {op!r}")

    def field(self, key: str, operand: Any) -> list[Node]:
        if not KEY_PATTERN.fullmatch(key):
            raise _bad(f"{key!r} is not a metadata key (1..64 characters of A-Z a-z 0-9 _ . -)")
        target = Field(key, key in BUILTIN_FIELDS)
        if not isinstance(operand, dict):
            self.count()
            return [Compare(target, "$eq", self.scalar(target, operand))]
        if not operand:
            raise _bad(f"no operator for {key!r}")
        nodes: list[Node] = []
        for op, value in operand.items():
            if op in COMPARISONS:
                self.count()
                nodes.append(Compare(target, op, self.scalar(target, value)))
            elif op in ("$in", "$nin"):
                if not isinstance(value, list) or not value:
                    raise _bad(f"{op} takes a non-empty list of values")
                self.count(len(value))
                nodes.append(In(target, tuple(self.scalar(target, v) for v in value), negate=op == "$nin"))
            elif op == "$exists":
                if not isinstance(value, bool):
                    raise _bad("$exists takes true or false")
                self.count()
                nodes.append(Exists(target, value))
            else:
                raise _bad(f"unknown operator {op!r} for {key!r}")
        return nodes

    @staticmethod
    def scalar(target: Field, value: Any) -> Scalar:
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            if not is_finite(value):
                raise _bad("a number must be finite and within the range of a double")
            return value
        if isinstance(value, str):
            return _normal_timestamp(value) if target.name == "timestamp" and target.builtin else value
        raise _bad(f"a value is a string, a number or a boolean, not {type(value).__name__}")


def is_finite(number: float) -> bool:
    """A number JSON, DynamoDB and OpenSearch all hold as a double (no NaN, no infinity, no 10**400)."""
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


def _normal_timestamp(value: str) -> str:
    try:
        moment = parse_timestamp(value)
    except ValueError:  # not a time with a zone: compared as the string it is
        return value
    try:
        return format_timestamp(moment)
    except OverflowError:
        raise _bad(f"timestamp {value!r} falls outside years 1 to 9999 in UTC") from None


def parse(document: Any) -> Node | None:
    """The filter tree of a request's ``filter``; None for an absent or empty filter (matches everything)."""
    if document is None or document == {}:
        return None
    try:
        return _Parser().document(document)
    except RecursionError:
        raise _bad("nested too deeply") from None


# -- evaluation over an entry's fields -------------------------------------------------------------

_MISSING = object()


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _double(number: float) -> float | None:
    """A held number as a finite double; None for one no double holds (10**400 stored by an earlier
    version or by hand, an infinity): it equals no operand and matches no range condition."""
    try:
        double = float(number)
    except OverflowError:
        return None
    return double if math.isfinite(double) else None


def _equal(held: Any, wanted: Scalar) -> bool:
    if isinstance(held, list):
        return isinstance(wanted, str) and wanted in held
    kind = _kind(held)
    if kind != _kind(wanted):
        return False
    if kind == "number":
        double = _double(held)
        return double is not None and double == float(wanted)
    return bool(held == wanted)


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _ordered(held: Any, op: str, wanted: Scalar) -> bool:
    kind = _kind(held)
    if kind != _kind(wanted) or kind not in ("number", "string"):
        return False
    if kind == "number":
        double = _double(held)
        return double is not None and _ORDER[op](double, float(wanted))
    return _ORDER[op](held, wanted)


Predicate = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""``predicate(builtins, metadata)``: whether an entry with these fields matches."""


def compile_filter(node: Node) -> Predicate:
    """The tree as one closure, built once and called per entry (the exact index calls it per cached row)."""
    if isinstance(node, And):
        parts = [compile_filter(p) for p in node.parts]
        return lambda b, m: all(p(b, m) for p in parts)
    if isinstance(node, Or):
        parts = [compile_filter(p) for p in node.parts]
        return lambda b, m: any(p(b, m) for p in parts)
    if isinstance(node, Not):
        inner = compile_filter(node.part)
        return lambda b, m: not inner(b, m)
    name = node.field.name
    get: Callable[[Mapping[str, Any], Mapping[str, Any]], Any] = (
        (lambda b, m: b.get(name)) if node.field.builtin else (lambda b, m: m.get(name))
    )
    if isinstance(node, Exists):
        present = node.present
        return lambda b, m: (get(b, m) is not None) == present
    if isinstance(node, In):
        values, negate = node.values, node.negate

        def within(b: Mapping[str, Any], m: Mapping[str, Any]) -> bool:
            held = get(b, m)
            return (held is not None and any(_equal(held, v) for v in values)) != negate

        return within
    op, wanted = node.op, node.value
    if op in ("$eq", "$ne"):
        equal = op == "$eq"

        def compare(b: Mapping[str, Any], m: Mapping[str, Any]) -> bool:
            held = get(b, m)
            return (held is not None and _equal(held, wanted)) == equal

        return compare

    def ordered(b: Mapping[str, Any], m: Mapping[str, Any]) -> bool:
        held = get(b, m)
        return held is not None and _ordered(held, op, wanted)

    return ordered


def matches(node: Node | None, builtins: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    return node is None or compile_filter(node)(builtins, metadata)


def live(now: str) -> Node:
    """Entries not expired at ``now`` (a stored-form timestamp): no ``expires_at``, or a later one."""
    expires = Field(EXPIRES_AT, builtin=True)
    return Or((Exists(expires, present=False), Compare(expires, "$gt", now)))


def without_live(where: Node | None) -> tuple[Node | None, str | None]:
    """``where`` split into the caller's filter and the ``now`` of its :func:`live` condition (None: it has
    none), for an evaluator that checks expiry its own, faster way."""
    if isinstance(where, Or) and len(where.parts) == 2 and isinstance(where.parts[1], Compare):
        value = where.parts[1].value
        if isinstance(value, str) and where == live(value):
            return None, value
    if isinstance(where, And) and len(where.parts) == 2:
        rest, now = without_live(where.parts[1])
        if rest is None and now is not None:
            return where.parts[0], now
    return where, None


def pinned(node: Node | None, name: str) -> str | None:
    """The one text value ``node`` requires the built-in field ``name`` to have (its equality, alone or in a
    top-level ``$and``), or None: what lets a reader go straight to those items (a session's rows)."""
    field = Field(name, builtin=True)
    if isinstance(node, Compare) and node.field == field and node.op == "$eq" and isinstance(node.value, str):
        return node.value
    if isinstance(node, In) and node.field == field and not node.negate and len(set(node.values)) == 1:
        value = node.values[0]
        return value if isinstance(value, str) else None
    if isinstance(node, And):
        return next((v for v in (pinned(part, name) for part in node.parts) if v is not None), None)
    return None


def both(first: Node | None, second: Node | None) -> Node | None:
    if first is None:
        return second
    if second is None:
        return first
    return And((first, second))
