"""The tokenizer: lowercase, accent-folded, split on non-alphanumerics, CJK-aware.

Runs of CJK characters (Han, kana, Hangul) have no spaces between words, so each character and each
adjacent pair of characters is a token: a query for 東京 matches 我住在東京 through the pair 東京.

A token longer than :data:`MAX_TOKEN_CHARS` (a hex dump, a base64 string) is replaced by a fixed-size
digest of itself, so every index key stays far under DynamoDB's 1 KiB sort-key limit while the same
long word in a query still matches.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_TOKEN_CHARS = 32
"""Longer tokens are indexed and searched as ``~`` and 20 hex digits of their BLAKE2b digest."""

_WORD = re.compile(r"[^\W_]+")

_CJK_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x2FA1F),  # CJK Extensions B..F and supplement
)

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me
    more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves im ive id dont el la los las un una unos
    unas de del y o que en es por con para al lo se su sus le les le la les un une des du de et ou
    est en au aux ce cette je tu il elle nous vous ils elles
    """.split()
)


def is_cjk(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_CJK_RUN = re.compile("([" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]+)")


def _split_cjk(run: str) -> list[tuple[bool, str]]:
    """Split an alphanumeric run into (is_cjk, segment) pieces."""
    # re.split with a group alternates: non-CJK, CJK, non-CJK, ... (empty pieces at the ends)
    return [(i % 2 == 1, piece) for i, piece in enumerate(_CJK_RUN.split(run)) if piece]


def _bounded(token: str) -> str:
    if len(token) <= MAX_TOKEN_CHARS:
        return token
    # "~" never occurs in a real token (tokens are alphanumeric), so a digest never equals a word.
    return "~" + hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def tokenize(text: str, *, min_length: int = 2, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Tokens in order of appearance (with repeats).

    Non-CJK words shorter than ``min_length`` are dropped unless they are numbers; stopwords are dropped;
    words longer than :data:`MAX_TOKEN_CHARS` become their digest.
    """
    if text.isascii():  # most text: normalising, folding and CJK splitting leave ASCII as it is
        return [
            _bounded(word)
            for word in _WORD.findall(text.lower())
            if word not in stopwords and (len(word) >= min_length or word.isdigit())
        ]
    return _unicode_tokens(text, min_length, stopwords)


def _unicode_tokens(text: str, min_length: int, stopwords: frozenset[str]) -> list[str]:
    tokens: list[str] = []
    for run in _WORD.findall(unicodedata.normalize("NFKC", text).lower()):
        for cjk, segment in _split_cjk(run):
            if cjk:
                tokens.extend(segment)
                tokens.extend(segment[i : i + 2] for i in range(len(segment) - 1))
                continue
            word = _fold(segment)
            if not word or word in stopwords:
                continue
            if len(word) >= min_length or word.isdigit():
                tokens.append(_bounded(word))
    return tokens


def graph_tokens(text: str) -> list[str]:
    """The graph search tokenizer of SPEC section 2: 3+ characters, no stopwords, CJK as above."""
    return tokenize(text, min_length=3)
