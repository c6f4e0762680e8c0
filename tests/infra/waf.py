"""One evaluator of the web ACL's WAF statements, as WAF documents them, for the tests that ask what a rule does to a
request: And/Or/Not, a regex or a size constraint on the path, a header or the body, after the rule's text
transformations. A statement on a header that is absent does not match; a body past what WAF inspects matches under
``OversizeHandling: MATCH``. Regexes run on Python's ``re``: the web ACL's use no construct on which it and WAF's PCRE
differ."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

INSPECTED_BODY_BYTES = 8 * 1024
"""What WAF inspects of a body (API Gateway's default limit)."""


@dataclass(frozen=True)
class Request:
    path: str = "/"
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return {k.lower(): v for k, v in self.headers.items()}.get(name.lower())


def _transform(value: bytes, transformations: list[dict[str, Any]]) -> bytes:
    for step in sorted(transformations, key=lambda t: t["Priority"]):
        kind = step["Type"]
        if kind == "LOWERCASE":
            value = value.lower()
        elif kind == "URL_DECODE":
            value = unquote(value.decode()).encode()
        else:
            assert kind == "NONE", kind
    return value


def matches(statement: dict[str, Any], request: Request) -> bool:
    """Whether ``request`` matches ``statement``."""
    ((kind, spec),) = statement.items()
    if kind == "AndStatement":
        return all(matches(s, request) for s in spec["Statements"])
    if kind == "OrStatement":
        return any(matches(s, request) for s in spec["Statements"])
    if kind == "NotStatement":
        return not matches(spec["Statement"], request)
    to_match = spec["FieldToMatch"]
    if "Body" in to_match:
        if len(request.body) > INSPECTED_BODY_BYTES:
            assert to_match["Body"]["OversizeHandling"] == "MATCH"
            return True
        value = request.body
    elif "UriPath" in to_match:
        value = request.path.encode()
    else:
        header = request.header(to_match["SingleHeader"]["Name"])
        if header is None:
            return False
        value = header.encode()
    value = _transform(value, spec.get("TextTransformations", []))
    if kind == "RegexMatchStatement":
        return re.search(spec["RegexString"], value.decode()) is not None
    assert (kind, spec["ComparisonOperator"]) == ("SizeConstraintStatement", "GT")
    return len(value) > spec["Size"]
