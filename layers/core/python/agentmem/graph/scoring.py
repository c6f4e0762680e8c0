"""How graph search scores an entity (SPEC section 2), from its name, type and current observations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentmem.search.tokenize import graph_tokens

MAX_GRAPH_TERMS = 32
"""Distinct tokens a name, a type, an observation or a query is indexed and scored by (the first ones)."""


def index_tokens(text: str) -> list[str]:
    """The first ``MAX_GRAPH_TERMS`` distinct graph tokens of ``text`` (SPEC section 2), in order."""
    return list(dict.fromkeys(graph_tokens(text)))[:MAX_GRAPH_TERMS]


def score_entity(query: Sequence[str], name: str, entity_type: str, observations: Iterable[str]) -> int:
    """SPEC section 2: per query token, +3 if the name holds it, +2 if the type does, +1 per observation."""
    return score_tokens(query, name, entity_type, [index_tokens(text) for text in observations])


def score_tokens(query: Sequence[str], name: str, entity_type: str, observations: Iterable[Iterable[str]]) -> int:
    """:func:`score_entity` with the observations already tokenised (their items keep their tokens)."""
    name_tokens = set(index_tokens(name))
    type_tokens = set(index_tokens(entity_type))
    observation_tokens = [set(tokens) for tokens in observations]
    score = 0
    for token in dict.fromkeys(query):
        score += 3 * (token in name_tokens) + 2 * (token in type_tokens)
        score += sum(token in tokens for tokens in observation_tokens)
    return score
