"""The ``nextToken`` of AgentCore's list operations here (ListEvents, ListSessions, ListActors): the page's
last sort key (and, for ListEvents, the branches met so far), encoded; a token this API did not give is a
ValidationException, never a read."""

from __future__ import annotations

import base64
import binascii
import json
import re
import unicodedata
from typing import Any

from agentmem.errors import InvalidInput
from agentmem.stores.table import MAX_SORT_KEY_BYTES

MAX_BRANCHES = 100
"""Branches a ListEvents token carries at most (the branches met on the pages read so far)."""


def encode(state: dict[str, Any]) -> str:
    raw = json.dumps(state, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


_FORGED = "nextToken is not one this API returned"


_ENTRY_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def decode(token: str, after_prefix: str, *, branches: bool = False) -> dict[str, Any]:
    """A page token this API gave: ``after``, a sort key beginning with ``after_prefix`` (and, for ListEvents,
    ``branches``, branch key -> entry id or null); any other token is a ValidationException, never a read."""
    try:
        state = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput(_FORGED, code="invalid_cursor") from None
    after = state.get("after") if isinstance(state, dict) else None
    allowed = {"after", "branches"} if branches else {"after"}
    if (
        not isinstance(state, dict)
        or set(state) - allowed
        or not isinstance(after, str)
        or not after.startswith(after_prefix)
        or len(after.encode("utf-8", "surrogatepass")) > MAX_SORT_KEY_BYTES
        or any(unicodedata.category(ch) == "Cc" for ch in after)
    ):
        raise InvalidInput(_FORGED, code="invalid_cursor")
    kept = state.get("branches") or {}
    if branches and not _ENTRY_ID.fullmatch(after):  # ListEvents: the last entry id read
        raise InvalidInput(_FORGED, code="invalid_cursor")
    if branches and (
        not isinstance(kept, dict)
        or len(kept) > MAX_BRANCHES
        or not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in kept.items())
    ):
        raise InvalidInput(_FORGED, code="invalid_cursor")
    return state
