"""Byte budgets that keep every response below Lambda's 6 MB response payload limit.

Over the limit API Gateway answers 502 and the client gets nothing, so every route that returns a
list (entries, search hits, graph facts, episodes, the profile card) fills its answer item by item
and stops at a budget, saying ``truncated: true`` (with a ``next_cursor`` where the route pages).

Sizes are measured as the bytes travel: the API writes the body as compact UTF-8 JSON and the Lambda
runtime embeds that body as a JSON string (ASCII-escaped), which doubles a quote or a backslash and
turns one CJK character (3 bytes in UTF-8) into ``\\uXXXX`` (6). :func:`wire_size` is that exact size.
"""

from __future__ import annotations

import json
from typing import Any

LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024
"""The synchronous invocation response payload limit of Lambda (6 MB)."""
RESPONSE_BUDGET_BYTES = 4 * 1024 * 1024
"""What the items of one response may take on the wire: 2 MiB of margin for the envelope (status,
headers, the other fields, a cursor) and for one item that alone exceeds the budget."""
CARD_BUDGET_BYTES = 256 * 1024
"""A profile card (its text and its entities) is for a system prompt: at most 256 KiB on the wire."""


def dumps(value: Any) -> str:
    """The API's JSON body encoding: compact, UTF-8 (no ASCII escaping)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def wire_size(value: Any) -> int:
    """The bytes ``value`` takes in a Lambda response once written into a JSON body."""
    return len(json.dumps(dumps(value))) - 2


class Budget:
    """Counts the bytes of one response as items are added; ``take`` says whether the next one fits.

    The first item is always taken, so a paged route always progresses (an item that alone exceeds
    the budget still travels, within the margin of :data:`RESPONSE_BUDGET_BYTES`).
    """

    def __init__(self, limit: int = RESPONSE_BUDGET_BYTES) -> None:
        self.left = limit
        self.taken = 0
        self.truncated = False

    def take(self, value: Any) -> bool:
        """Charge ``value`` and return True if it fits (or is the first); else mark the answer cut."""
        if self.truncated:
            return False
        size = wire_size(value) + 1
        if self.taken and size > self.left:
            self.truncated = True
            return False
        self.left -= size
        self.taken += 1
        return True

    def charge(self, value: Any) -> None:
        """Charge what goes with the items (a repeated header) without counting it as an item."""
        self.left -= wire_size(value) + 1
