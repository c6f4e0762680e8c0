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

The other way round, an entry also names the entry it continues (:func:`continued`: its author's own
entry before the one it answers), and a hybrid search's first hits bring that entry right after them
(:mod:`agentmem.memory.search`): the turn that says when or why is often the one before the turn that
says what.
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


def continued(said: Sequence[tuple[str | None, str]], author: str | None) -> int | None:
    """The position in ``said`` (as :func:`context_of` takes it) of the entry an entry by ``author``
    continues: the author's own entry just before the other author's entry it answers, as in

        A: "Something not so great happened yesterday..."    <- continued
        B: "Oh no, what happened?"
        A: "A car ran a red light and hit us."

    where the question "when did A have a car accident?" is answered by the first turn and found by the
    last. None when the entry answers no one, or the entry before the one it answers is someone else's."""
    spoken = [(position, who) for position, (who, text) in enumerate(said) if text.strip()]
    if len(spoken) < 2 or spoken[-1][1] == author or spoken[-2][1] != author:
        return None
    return spoken[-2][0]


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
