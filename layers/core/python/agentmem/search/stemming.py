"""Words as memory search matches them: an English word by its stem, so "painted", "painting" and
"paints" all find "paint", and "cities" finds "city".

An entry keeps its words as written (``terms``, ``context_terms``: :mod:`agentmem.memory.records`); the
stem is taken where an index is built from them (:class:`~agentmem.search.partition.PartitionIndex`, an
OpenSearch document's word fields) and of a query's words. So a change of stemmer needs no migration of
the table, and a stem is never stemmed again (Porter2 is not idempotent: "purpose" gives "purpos", which
gives "purpo").

The stemmer is Snowball's English (Porter2), applied to words of ASCII letters only, which after the
tokenizer's accent folding includes the other Latin-script languages' words (the English rules mostly
take off their plural ``s``); words in other scripts, and words holding digits, are matched as written.
Measured on the LoCoMo dev conversations (docs/search.md): hybrid recall@10 75.7 -> 77.7, multi-hop
41.0 -> 48.0. Delete-by-query is not widened by it: it deletes the entries holding the query's words as
written (:meth:`agentmem.memory.service.MemoryService.delete_entries`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping

from agentmem.search.inverted_index import query_terms


@functools.cache
def _stemmer() -> Callable[[str], str]:
    """Snowball's English stemmer, imported on the first word stemmed (about 15 ms)."""
    from snowballstemmer.english_stemmer import EnglishStemmer  # type: ignore[import-untyped]

    stem_word: Callable[[str], str] = EnglishStemmer().stemWord
    return stem_word


STEMS_HELD = 1 << 15
"""Stems a process keeps of the words it stemmed last (about 6 MB when full): stemming a word takes about
30 us, and a user's words repeat, so a held index loads its words' stems mostly from here."""


def stem(word: str) -> str:
    """The stem a token (lowercase, as :func:`~agentmem.search.tokenize.tokenize` gives it) is matched by."""
    if not (word.isascii() and word.isalpha()):
        return word
    return _english_stem(word)


@functools.lru_cache(maxsize=STEMS_HELD)
def _english_stem(word: str) -> str:
    return _stemmer()(word)


def stemmed(counts: Mapping[str, int]) -> dict[str, int]:
    """Word counts as counts of their stems (the words of one stem add up)."""
    merged: dict[str, int] = {}
    for word, count in counts.items():
        key = stem(word)
        merged[key] = merged.get(key, 0) + count
    return merged


def stemmed_terms(own: Mapping[str, int], context: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """An entry's (own, context) word counts as stems; a context stem that is also an own stem counts as
    its own only (as a context word that is also an own word does: :func:`~agentmem.search.context.context_terms`)."""
    own_stems = stemmed(own)
    return own_stems, {word: count for word, count in stemmed(context).items() if word not in own_stems}


def query_stems(tokens: Iterable[str]) -> list[str]:
    """The distinct stems of a query's looked-up words (:func:`~agentmem.search.inverted_index.query_terms`)."""
    return list(dict.fromkeys(stem(word) for word in query_terms(tokens)))


def written_forms(tokens: Iterable[str]) -> dict[str, list[str]]:
    """Each stem of :func:`query_stems` with the query's words that gave it, the stem first: what an index
    whose documents were written before stemming (surface words) is asked for."""
    forms: dict[str, list[str]] = {}
    for word in query_terms(tokens):
        key = stem(word)
        alternatives = forms.setdefault(key, [key])
        if word not in alternatives:
            alternatives.append(word)
    return forms
