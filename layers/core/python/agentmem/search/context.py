"""What an entry is found by beside its own words: the entries said just before it in its session.

A turn of a conversation rarely stands alone: "Yes, next month, once the water is warmer" answers a
question about a boat that only the turn before names. So each entry written into a session in answer to
another author carries the end of the :data:`CONTEXT_ENTRIES` entries before it (its ``context``, stored
on the entry item so a rebuild embeds and indexes it the same way), and

- its vector embeds the entry before it and then the entry itself (:func:`embedding_text`);
- its keyword postings hold the context's words as well, at half the weight of its own words
  (``cf`` beside ``tf``: :mod:`agentmem.search.inverted_index`). Hybrid search ranks by that contextual
  BM25; keyword search and delete-by-query read the entry's own words only.

The entry is stored and returned exactly as written. Measured on the LoCoMo dev conversations
(docs/search.md): context in the vector and the index took hybrid recall@10 from 59.5 to 67.5.
"""

from __future__ import annotations

from collections.abc import Sequence

CONTEXT_ENTRIES = 2
"""How many entries before an entry (in its session) are its context."""
CONTEXT_CHARS = 400
"""Characters kept of each context entry: its end, which is what the next turn answers."""
CONTEXT_TERMS = 32
"""Distinct context words indexed per entry (the first ones), beside its own."""
OWN_WEIGHT = 2
"""An entry's own word counts this many times a context word in contextual BM25."""
EMBEDDED_CONTEXT_BELOW = 2000
"""An entry of this many characters or more is embedded alone: it carries its own context."""


def context_of(said: Sequence[tuple[str | None, str]], author: str | None) -> list[str]:
    """The context an entry by ``author`` keeps of what was said before it in its session ((author, text),
    oldest first): the last :data:`CONTEXT_ENTRIES` texts when the entry answers someone else (the entry just
    before it is another author's), else nothing: a run of one author's notes ("I prefer dark mode", "my dog
    is called Pixel") are facts of their own, and lending each other words would only blur them."""
    said = [(who, text.strip()) for who, text in said if text.strip()]
    if not said or said[-1][0] == author:
        return []
    return [text[-CONTEXT_CHARS:] for _, text in said[-CONTEXT_ENTRIES:]]


def embedding_text(own: str, context: Sequence[str]) -> str:
    """What is embedded for an entry: the entry before it, then the entry."""
    if not context or len(own) >= EMBEDDED_CONTEXT_BELOW:
        return own
    return f"{context[-1]}\n{own}"


def context_terms(context_tokens: Sequence[str], own: set[str], limit: int = CONTEXT_TERMS) -> dict[str, int]:
    """The context words an entry is indexed under (not its own words: those count as its own), with
    their frequencies: the first ``limit`` distinct ones."""
    counts: dict[str, int] = {}
    for token in context_tokens:
        if token in own:
            continue
        if token not in counts and len(counts) >= limit:
            continue
        counts[token] = counts.get(token, 0) + 1
    return counts
