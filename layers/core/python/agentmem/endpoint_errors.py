"""How an OpenAI-compatible endpoint's failures are put into words, for the chat model's adapter
(agentmem/llm/openai_compatible.py) and the embedder's (agentmem/embeddings/openai_compatible.py)."""

from __future__ import annotations

import json

MAX_ERROR_BYTES = 4096
"""What is read of an error answer's body."""


def error_message(raw: bytes) -> str:
    """The endpoint's own words: OpenAI's ``{"error": {"message": ...}}``, or the start of the body."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        error = json.loads(text).get("error")
        text = str(error.get("message") if isinstance(error, dict) else error or text)
    except (ValueError, AttributeError):
        pass
    return " ".join(text.split())[:200]


def describe(error: object) -> str:
    """An exception in one short line: its type, and its words when it has some."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text}"[:200] if text else type(error).__name__
