"""Relevance scores that mean the same in every search mode, and the ``min_score`` that keeps what is relevant.

A raw cosine does not say how relevant a hit is: a small embedding model scores every first-person
sentence about 0.75-0.85 against every personal question, and how high that band sits differs from
one query to the next (a question in Arabic against English memories sits lower). So a semantic hit is
scored by how far its cosine stands above the query's own background: ``z = (cos - mean) / std`` over
the cosines of the query with :data:`BACKGROUND`, everyday sentences about nothing in particular,
embedded once per process by the same model. A keyword hit is scored by its BM25 score (normalised so
that a hit holding every query token once scores 1). Both become a relevance in (0, 1) through a
logistic, and :data:`RELEVANCE_THRESHOLD` (0.5) is the point where a hit counts as relevant:

- semantic: ``logistic(SLOPE * (z - Z_RELEVANT))``;
- keyword: ``logistic(KEYWORD_SLOPE * (bm25 - BM25_RELEVANT))``;
- hybrid: ``logistic(SLOPE * (z - Z_RELEVANT) + KEYWORD_BONUS * bm25)``: keyword evidence can only add
  (a hit that only keyword search found is scored as in keyword mode), and hits are ranked by it.

``Z_RELEVANT`` was measured on the paraphrase set of bench/data with the default local model (the z
that best separates right answers from the best hit of a question whose answer was never stored);
``make bench`` prints recall and rejection at the threshold per mode.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from agentmem.embeddings.port import Embedder

RELEVANCE_THRESHOLD = 0.5
Z_RELEVANT = 2.4
SLOPE = 1.5
BM25_RELEVANT = 0.5
KEYWORD_SLOPE = 8.0
KEYWORD_BONUS = 4.0

BACKGROUND = (
    "The meeting was moved to the large conference room.",
    "Please remember to water the plants on the balcony.",
    "The train to the airport leaves every twenty minutes.",
    "I finished reading the quarterly report this morning.",
    "Our team uses a shared calendar for holidays.",
    "The printer on the third floor is out of toner again.",
    "We ordered pizza for the office party.",
    "The new software update fixed the login bug.",
    "It rained all weekend so we stayed indoors.",
    "The library closes early on public holidays.",
    "I need to renew my passport before the summer.",
    "The recipe calls for two cups of flour.",
    "My neighbour is renovating the kitchen next door.",
    "The project deadline is the end of the month.",
    "We watched a documentary about the ocean.",
    "The bakery on the corner sells fresh croissants.",
    "I prefer taking the stairs instead of the lift.",
    "The invoice was sent to the accounting department.",
    "Traffic was heavy on the ring road this morning.",
    "The museum has a new exhibition on ancient coins.",
    "Our internet connection dropped twice yesterday.",
    "I keep my receipts in a folder on the desk.",
    "The school run takes about fifteen minutes.",
    "We planted tomatoes and basil in the garden.",
    "The hotel room had a view of the harbour.",
    "I usually drink coffee without sugar.",
    "The bus driver was very friendly today.",
    "We are saving up for a new sofa.",
    "The concert tickets sold out within an hour.",
    "I back up my laptop every Friday evening.",
    "The dentist appointment is next Thursday at nine.",
    "Our flat gets a lot of sunlight in the afternoon.",
    "The gym is crowded in the early evening.",
    "I lost my umbrella on the tram.",
    "The conference will be held online this year.",
    "We bought a second-hand bicycle for the kids.",
    "I like to listen to podcasts while cooking.",
    "The parking garage fills up before eight.",
    "My phone battery drains quickly in the cold.",
    "The shop offers free delivery on large orders.",
    "La reunión se ha trasladado al jueves por la tarde.",
    "Compramos pan en la panadería del barrio.",
    "El tren llegó con media hora de retraso.",
    "Tengo que pagar la factura de la luz esta semana.",
    "Nous avons visité le marché de Noël samedi.",
    "Le bureau sera fermé lundi prochain.",
    "J'ai oublié mes clés dans la voiture.",
    "La piscine municipale ouvre à sept heures.",
    "تأخرت الحافلة بسبب الزحام في الصباح.",
    "اشترينا خبزا طازجا من المخبز.",
    "سأرسل التقرير إلى المدير غدا.",
    "المكتبة مغلقة يوم الجمعة.",
    "我们周末去公园散步了。",
    "会议改到下周三下午。",
    "我把雨伞忘在地铁上了。",
    "这家超市晚上十点关门。",
    "The kettle takes two minutes to boil.",
    "We changed our mobile phone provider last month.",
    "The windows need cleaning before the guests arrive.",
    "I signed up for the newsletter of the local theatre.",
    "The package should arrive by Wednesday.",
    "Our landlord raised the rent slightly.",
    "I prefer paper notebooks to note-taking apps.",
    "The car wash on the high street is closed for repairs.",
)

_lock = threading.Lock()
_backgrounds: dict[str, list[list[float]]] = {}


def _background(embedder: Embedder) -> list[list[float]]:
    """:data:`BACKGROUND` embedded by ``embedder`` (once per model and process, on the first search)."""
    with _lock:
        vectors = _backgrounds.get(embedder.model_id)
        if vectors is None:
            vectors = [list(v) for v in embedder.embed(list(BACKGROUND))]
            _backgrounds[embedder.model_id] = vectors
        return vectors


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


class QueryStanding:
    """How far a cosine stands above one query's background, as a logit of relevance."""

    def __init__(self, embedder: Embedder, query_vector: Sequence[float]) -> None:
        cosines = [sum(a * b for a, b in zip(query_vector, v, strict=True)) for v in _background(embedder)]
        self.mean = sum(cosines) / len(cosines)
        self.std = math.sqrt(sum((c - self.mean) ** 2 for c in cosines) / len(cosines)) or 1.0

    def logit(self, cosine: float) -> float:
        return SLOPE * ((cosine - self.mean) / self.std - Z_RELEVANT)


def semantic(standing: QueryStanding, hits: Sequence[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """Cosine hits (best first) rescored as relevance."""
    return [(p, d, round(_logistic(standing.logit(cosine)), 6)) for p, d, cosine in hits]


def keyword(hits: Sequence[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """BM25 hits (best first) rescored as relevance."""
    return [(p, d, round(_logistic(KEYWORD_SLOPE * (bm25 - BM25_RELEVANT)), 6)) for p, d, bm25 in hits]


def hybrid(
    standing: QueryStanding,
    keyword_hits: Sequence[tuple[str, str, float]],
    cosine_hits: Sequence[tuple[str, str, float]],
) -> list[tuple[str, str, float]]:
    """Both rankings as one, by relevance: the semantic logit plus the keyword evidence; ties to newer ids."""
    bm25 = {(p, d): s for p, d, s in keyword_hits}
    scores = {
        (p, d): _logistic(standing.logit(cos) + KEYWORD_BONUS * bm25.get((p, d), 0.0)) for p, d, cos in cosine_hits
    }
    for (p, d), relevance in zip(bm25, (s for _, _, s in keyword(keyword_hits)), strict=True):
        scores.setdefault((p, d), relevance)
    fused = [(p, d, round(s, 6)) for (p, d), s in scores.items()]
    fused.sort(key=lambda h: (h[2], h[1]), reverse=True)
    return fused
