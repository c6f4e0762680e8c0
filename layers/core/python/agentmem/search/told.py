# ruff: noqa: RUF001  (Cyrillic and Arabic letters that look Latin are words this module matches)
"""The days an entry tells of: the dates it names and its relative dates, resolved against the day it
was said.

"We went camping last weekend", said on Monday 15 May 2023, tells of 13-14 May 2023; "two weeks ago" of
about 1 May; "next month" of June 2023; "on 3 June 2023" of that day. A query naming a date then finds
what was said about that date, not only what was said around it (:func:`agentmem.search.when.closeness`).

Read in English, Spanish, French, German, Portuguese, Italian, Russian, Chinese, Japanese, Korean and
Arabic:

- a day or two before or after ("yesterday", "ayer", "avant-hier", "morgen", "amanhã", "ieri",
  "вчера", "昨天", "おととい", "내일", "أمس");
- the previous or next week, weekend, month or year, as calendar periods ("last week", "el mes
  pasado", "l'an dernier", "nächstes Jahr", "semana passada", "il mese prossimo", "в прошлом году",
  "上周", "先月", "작년", "العام الماضي"); a week runs Monday to Sunday;
- the previous or next named weekday ("last Saturday", "el sábado pasado", "samedi dernier",
  "letzten Samstag", "sabato scorso", "в прошлую субботу", "上周六", "先週の土曜日");
- so many days, weeks, months or years ago ("3 days ago", "hace dos semanas", "il y a un mois",
  "vor zwei Jahren", "há três dias", "due settimane fa", "две недели назад", "两个月前", "3日前",
  "두 달 전", "منذ أسبوعين"): a day, the week around it, the calendar month or year;
- the dates :func:`agentmem.search.when.named_periods` reads (a month named alone is the nearest such
  month, up to three months after the day it was said).

Left out: "recently", "the other day" and other spans with no edges; seasons (hemispheres differ); a
weekday named alone ("on Saturday": before or after?).
"""

from __future__ import annotations

import contextlib
import functools
import re
import unicodedata
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import date, timedelta

from agentmem.search import when

MAX_TOLD = 8
"""Periods kept per entry at most (the first in the text)."""
ENTRY_CHARS = 2_000
"""The characters of an entry read for the dates it tells of: its beginning (a turn tells its dates early;
past that, a text is a document, read for its words only)."""
REQUEST_CHARS = 200_000
"""The characters one request reads for dates, all its entries together (:func:`reading`): past that, its
further entries keep no dates. Reading them is bounded work, as embedding them is."""

_left: ContextVar[list[int] | None] = ContextVar("told_characters_left", default=None)


@contextlib.contextmanager
def reading(limit: int = REQUEST_CHARS) -> Iterator[None]:
    """Bound the characters read for dates inside (one request)."""
    token = _left.set([limit])
    try:
        yield
    finally:
        _left.reset(token)


_Resolve = Callable[[re.Match[str], date], "when.Period | None"]
_WEEKDAYS = {
    # Monday = 0 ... Sunday = 6, as date.weekday()
    **dict.fromkeys(("monday", "lunes", "lundi", "montag", "segunda", "lunedi", "понедельник"), 0),
    **dict.fromkeys(("tuesday", "martes", "mardi", "dienstag", "terca", "martedi", "вторник"), 1),
    **dict.fromkeys(("wednesday", "miercoles", "mercredi", "mittwoch", "quarta", "mercoledi", "среду"), 2),
    **dict.fromkeys(("thursday", "jueves", "jeudi", "donnerstag", "quinta", "giovedi", "четверг"), 3),
    **dict.fromkeys(("friday", "viernes", "vendredi", "freitag", "sexta", "venerdi", "пятницу"), 4),
    **dict.fromkeys(("saturday", "sabado", "samedi", "samstag", "sabato", "субботу"), 5),
    **dict.fromkeys(("sunday", "domingo", "dimanche", "sonntag", "domenica", "воскресенье"), 6),
    **{ch: n for n, ch in enumerate("一二三四五六")},
    "日": 6,
    "天": 6,
    **{ch: n for n, ch in enumerate("月火水木金土")},
}
_LATIN_WEEKDAY = "(" + "|".join(w for w in _WEEKDAYS if w.isascii()) + ")"
_CYRILLIC_WEEKDAY = "(" + "|".join(w for w in _WEEKDAYS if "\u0400" <= w[0] <= "\u04ff") + ")"
_NUMBERS = {
    **dict.fromkeys(("a", "an", "one", "un", "una", "une", "ein", "einem", "einer", "um", "uma"), 1),
    **dict.fromkeys(("一", "한", "один", "одну", "одна"), 1),
    **dict.fromkeys(("two", "dos", "deux", "zwei", "dois", "duas", "due", "二", "两", "兩", "두", "два", "две"), 2),
    **dict.fromkeys(("three", "tres", "trois", "drei", "tre", "三", "세", "три", "ثلاثة", "ثلاث"), 3),
    **dict.fromkeys(
        ("four", "cuatro", "quatre", "vier", "quatro", "quattro", "四", "네", "четыре", "اربعة", "اربع"), 4
    ),
    **dict.fromkeys(("five", "cinco", "cinq", "funf", "cinque", "五", "다섯", "пять", "خمسة", "خمس"), 5),
    **dict.fromkeys(("six", "seis", "sechs", "sei", "六", "여섯", "шесть", "ستة", "ست"), 6),
    **dict.fromkeys(("seven", "siete", "sept", "sieben", "sete", "sette", "七", "일곱", "семь", "سبعة", "سبع"), 7),
    **dict.fromkeys(("eight", "ocho", "huit", "acht", "oito", "otto", "八", "여덟", "восемь", "ثمانية", "ثماني"), 8),
    **dict.fromkeys(("nine", "nueve", "neuf", "neun", "nove", "九", "아홉", "девять", "تسعة", "تسع"), 9),
    **dict.fromkeys(("ten", "diez", "dix", "zehn", "dez", "dieci", "十", "열", "десять", "عشرة", "عشر"), 10),
    **dict.fromkeys(("a couple of", "couple of", "un par de", "ein paar", "um par de", "пару"), 2),
    **dict.fromkeys(("a few", "few", "several", "unos", "unas", "quelques", "wenigen", "alguns", "algumas"), 3),
    **dict.fromkeys(("uns", "umas", "qualche", "几", "幾", "몇", "несколько", "بضعة", "بضع"), 3),
}
"""Counts in words ("a few": 3). A count in digits is read as a number (any script's digits)."""


def _count(word: str | None) -> int | None:
    if not word:
        return 1
    if word.isdigit():
        return int(word) if len(word) <= 3 else None
    return _NUMBERS.get(word)


_LATIN_COUNT = r"(\d{1,3}|" + "|".join(sorted((w for w in _NUMBERS if w.isascii()), key=len, reverse=True)) + ")"
_CJK_COUNT = r"(\d{1,3}|[一二两兩三四五六七八九十几幾])"


def _week(day: date, weeks: int) -> when.Period:
    """The calendar week (Monday to Sunday) ``weeks`` from the one holding ``day``."""
    monday = day - timedelta(days=day.weekday()) + timedelta(weeks=weeks)
    return when.Period(monday, monday + timedelta(days=6))


def _weekend(day: date, weeks: int) -> when.Period:
    saturday = day - timedelta(days=day.weekday()) + timedelta(weeks=weeks, days=5)
    return when.Period(saturday, saturday + timedelta(days=1))


def _month(day: date, months: int) -> when.Period:
    index = day.year * 12 + day.month - 1 + months
    return when.month_period(index // 12, index % 12 + 1)


def _year(day: date, years: int) -> when.Period:
    return when.Period(date(day.year + years, 1, 1), date(day.year + years, 12, 31))


def _days(day: date, days: int) -> when.Period:
    moment = day + timedelta(days=days)
    return when.Period(moment, moment)


def _unit_ago(unit: str, count: int | None, day: date) -> when.Period | None:
    """``count`` days, weeks, months or years before ``day`` (``unit``: its first letter, d/w/m/y)."""
    if count is None or count > 400:
        return None
    if unit == "d":
        return _days(day, -count)
    if unit == "w":
        middle = day - timedelta(weeks=count)
        return when.Period(middle - timedelta(days=3), middle + timedelta(days=3))
    if unit == "m":
        return _month(day, -count)
    return _year(day, -count)


def _last_weekday(weekday: int, day: date) -> when.Period:
    back = (day.weekday() - weekday) % 7 or 7
    return _days(day, -back)


def _next_weekday(weekday: int, day: date) -> when.Period:
    ahead = (weekday - day.weekday()) % 7 or 7
    return _days(day, ahead)


_STEPS: dict[str, Callable[[date, int], when.Period]] = {"d": _days, "w": _week, "e": _weekend, "m": _month, "y": _year}
"""Steps of days, weeks, weekends, months and years from a day's own."""


def _shift(kind: str, step: int) -> _Resolve:
    """A resolver for a fixed step of days (``d``), weeks (``w``), weekends (``e``), months or years."""
    return lambda _match, day: _STEPS[kind](day, step)


def _by_unit(step: int, units: dict[str, str], group: int = 1) -> _Resolve:
    """A step back or forward of the unit a group names (``units``: its words to d/w/e/m/y)."""

    def resolve(match: re.Match[str], day: date) -> when.Period | None:
        return _STEPS[units[match[group]]](day, step)

    return resolve


def _by_word(step: int, units: dict[str, str]) -> _Resolve:
    """A step back or forward of the unit the match's first word of ``units`` names ("la semaine
    dernière", "l'anno scorso": the noun's place differs between the phrases one pattern reads)."""

    def resolve(match: re.Match[str], day: date) -> when.Period | None:
        unit = next(units[word] for word in re.split(r"[\s']+", match[0]) if word in units)
        return _STEPS[unit](day, step)

    return resolve


def _ago(units: dict[str, str], count_group: int, unit_group: int) -> _Resolve:
    def resolve(match: re.Match[str], day: date) -> when.Period | None:
        return _unit_ago(units[match[unit_group]], _count(match[count_group]), day)

    return resolve


def _weekday(direction: int, group: int = 1) -> _Resolve:
    def resolve(match: re.Match[str], day: date) -> when.Period | None:
        weekday = _WEEKDAYS[match[group]]
        return _last_weekday(weekday, day) if direction < 0 else _next_weekday(weekday, day)

    return resolve


def _last_weeks_day(group: int = 1) -> _Resolve:
    """A weekday of the previous calendar week ("上周六", "先週の土曜日")."""

    def resolve(match: re.Match[str], day: date) -> when.Period | None:
        return _days(_week(day, -1).first, _WEEKDAYS[match[group]])

    return resolve


def _units(**words: str) -> dict[str, str]:
    """Unit words to d/w/e/m/y: ``_units(d="day days", ...)``."""
    return {word: unit for unit, spelled in words.items() for word in spelled.split()}


_EN_UNITS = _units(d="day days", w="week weeks", m="month months", y="year years")
_ES_UNITS = _units(d="dia dias", w="semana semanas", m="mes meses", y="ano anos")
"""Spanish, and Portuguese: the same words once accents are folded."""
_FR_UNITS = _units(d="jour jours", w="semaine semaines", m="mois", y="an ans annee annees")
_DE_UNITS = _units(d="tag tagen", w="woche wochen", m="monat monaten", y="jahr jahren")
_IT_UNITS = _units(d="giorno giorni", w="settimana settimane", m="mese mesi", y="anno anni")
_RU_UNITS = _units(d="день дня дней", w="неделю недели недель", m="месяц месяца месяцев", y="год года лет")
_DE_STEPS = _units(w="woche", e="wochenende", m="monat", y="jahr")
_ZH_UNITS = _units(d="天 日", w="周 週 星期 个星期 個星期 週間 周间", m="个月 個月 ヶ月 か月 カ月 ヵ月", y="年")
_KO_UNITS = _units(d="일", w="주", m="달 개월", y="년")
_AR_UNITS = _units(d="يوم ايام", w="اسبوع اسابيع", m="شهر اشهر شهور", y="سنة سنوات سنين عام اعوام")
_AR_STEPS = _units(w="الاسبوع", m="الشهر", y="العام السنة")
_AR_PAIRS = _units(d="يومين", w="اسبوعين", m="شهرين", y="سنتين عامين")

_LATIN: list[tuple[str, _Resolve]] = [
    # English
    (r"\bthe day before yesterday\b", _shift("d", -2)),
    (r"\bthe day after tomorrow\b", _shift("d", 2)),
    (r"\b(?:yesterday|last night)\b", _shift("d", -1)),
    (r"\btomorrow\b", _shift("d", 1)),
    (r"\b(?:last|past|previous) weekend\b", _shift("e", -1)),
    (r"\b(?:this|next|coming) weekend\b", _shift("e", 0)),
    (r"\b(?:last|previous) (week|month|year)\b", _by_unit(-1, _units(w="week", m="month", y="year"))),
    (r"\bnext (week|month|year)\b", _by_unit(1, _units(w="week", m="month", y="year"))),
    (rf"\blast {_LATIN_WEEKDAY}\b", _weekday(-1)),
    (rf"\bnext {_LATIN_WEEKDAY}\b", _weekday(1)),
    (rf"\b{_LATIN_COUNT} (days?|weeks?|months?|years?) ago\b", _ago(_EN_UNITS, 1, 2)),
    # Spanish (accents folded)
    (r"\b(?:anteayer|antier|antes de ayer)\b", _shift("d", -2)),
    (r"\bpasado manana\b", _shift("d", 2)),
    (r"\bayer\b", _shift("d", -1)),
    (r"(?<!\bla )(?<!\besta )(?<!\buna )(?<!\bcada )\bmanana\b", _shift("d", 1)),
    (r"\bel fin de semana pasado\b", _shift("e", -1)),
    (r"\b(?:la semana|el mes|el ano) pasad[oa]\b", _by_word(-1, _ES_UNITS)),
    (
        r"\b(?:la semana|el mes|el ano) (?:que viene|proxim[oa])\b|\b(?:la|el) proxim[oa] (?:semana|mes|ano)\b",
        _by_word(1, _ES_UNITS),
    ),
    (rf"\bel {_LATIN_WEEKDAY} pasado\b", _weekday(-1)),
    (rf"\bel proximo {_LATIN_WEEKDAY}\b", _weekday(1)),
    (rf"\bhace {_LATIN_COUNT} (dias?|semanas?|mes|meses|anos?)\b", _ago(_ES_UNITS, 1, 2)),
    # French (accents folded)
    (r"\bavant[- ]hier\b", _shift("d", -2)),
    (r"\bapres[- ]demain\b", _shift("d", 2)),
    (r"\bhier\b", _shift("d", -1)),
    (r"\bdemain\b", _shift("d", 1)),
    (r"\ble week-?end (?:dernier|passe)\b", _shift("e", -1)),
    (r"\b(?:la semaine|le mois|l'an|l'annee) (?:derniere?|passee?)\b", _by_word(-1, _FR_UNITS)),
    (r"\b(?:la semaine|le mois|l'an|l'annee) prochaine?\b", _by_word(1, _FR_UNITS)),
    (rf"\b{_LATIN_WEEKDAY} dernier\b", _weekday(-1)),
    (rf"\b{_LATIN_WEEKDAY} prochain\b", _weekday(1)),
    (rf"\bil y a {_LATIN_COUNT} (jours?|semaines?|mois|ans|annees?)\b", _ago(_FR_UNITS, 1, 2)),
    # German (umlauts folded)
    (r"\bvorgestern\b", _shift("d", -2)),
    (r"\bubermorgen\b", _shift("d", 2)),
    (r"\bgestern\b", _shift("d", -1)),
    (r"(?<!\bheute )(?<!\bam )(?<!\bguten )(?<!\bjeden )(?<!\bden )(?<!\bdem )\bmorgen\b", _shift("d", 1)),
    (r"\b(?:letzt|vorig|vergangen)(?:e|en|er|es|em)? (wochenende|woche|monat|jahr)\b", _by_unit(-1, _DE_STEPS)),
    (r"\b(?:nachst|kommend)(?:e|en|er|es|em)? (wochenende|woche|monat|jahr)\b", _by_unit(1, _DE_STEPS)),
    (rf"\b(?:letzt|vorig|vergangen)(?:e|en|er|es|em)? {_LATIN_WEEKDAY}\b", _weekday(-1)),
    (rf"\b(?:nachst|kommend)(?:e|en|er|es|em)? {_LATIN_WEEKDAY}\b", _weekday(1)),
    (rf"\bvor {_LATIN_COUNT} (tag|tagen|wochen?|monat|monaten|jahr|jahren)\b", _ago(_DE_UNITS, 1, 2)),
    # Portuguese (accents folded)
    (r"\banteontem\b", _shift("d", -2)),
    (r"\bdepois de amanha\b", _shift("d", 2)),
    (r"\bontem\b", _shift("d", -1)),
    (r"\bamanha\b", _shift("d", 1)),
    (r"\b(?:semana|mes|ano) passad[oa]\b", _by_word(-1, _ES_UNITS)),
    (r"\b(?:semana|mes|ano) que vem\b|\bproxim[oa] (?:semana|mes|ano)\b", _by_word(1, _ES_UNITS)),
    (rf"\b{_LATIN_WEEKDAY}(?:-feira)? passad[oa]\b", _weekday(-1)),
    (rf"\bha {_LATIN_COUNT} (dias?|semanas?|mes|meses|anos?)\b", _ago(_ES_UNITS, 1, 2)),
    (rf"\b{_LATIN_COUNT} (dias?|semanas?|mes|meses|anos?) atras\b", _ago(_ES_UNITS, 1, 2)),
    # Italian (accents folded)
    (r"\b(?:l'altro ieri|altroieri)\b", _shift("d", -2)),
    (r"\bdopodomani\b", _shift("d", 2)),
    (r"\bieri\b", _shift("d", -1)),
    (r"\bdomani\b", _shift("d", 1)),
    (r"\b(?:la settimana|il mese|l'anno) scors[oa]\b", _by_word(-1, _IT_UNITS)),
    (
        r"\b(?:la settimana|il mese|l'anno) prossim[oa]\b|\b(?:la|il|l')\s?prossim[oa] (?:settimana|mese|anno)\b",
        _by_word(1, _IT_UNITS),
    ),
    (rf"\b{_LATIN_WEEKDAY} scors[oa]\b", _weekday(-1)),
    (rf"\b{_LATIN_WEEKDAY} prossim[oa]\b", _weekday(1)),
    (rf"\b{_LATIN_COUNT} (giorni|giorno|settimane|settimana|mesi|mese|anni|anno) fa\b", _ago(_IT_UNITS, 1, 2)),
]
"""Latin-script expressions, over the text lowercased and accent-folded, the longer before those they hold."""


_AR_LAST = r"(?:الماضي|الماضية|المنصرم|المنصرمة|الفائت|الفائتة)"
_AR_NEXT = r"(?:القادم|القادمة|المقبل|المقبلة)"
_AR_AGO_COUNT = r"(\d{1,3}|ثلاثة|ثلاث|اربعة|اربع|خمسة|خمس|ستة|ست|سبعة|سبع|ثمانية|ثماني|تسعة|تسع|عشرة|عشر|بضعة|بضع)"
_AR_UNIT_WORDS = "|".join(_AR_UNITS)
_RU_COUNT = "|".join(w for w in _NUMBERS if "\u0400" <= w[0] <= "\u04ff")
_OTHER: list[tuple[str, _Resolve]] = [
    # Chinese and Japanese (Han and kana)
    (r"一昨日|おととい|前天", _shift("d", -2)),
    (r"明後日|あさって|后天|後天", _shift("d", 2)),
    (r"昨天|昨日|きのう|昨晚|昨夜", _shift("d", -1)),
    (r"明天|明日|あした", _shift("d", 1)),
    (r"上(?:个|個)?(?:周末|週末)|先週末", _shift("e", -1)),
    (r"上(?:周|週|个星期|個星期|星期|个礼拜|個禮拜|礼拜|禮拜)([一二三四五六日天])", _last_weeks_day()),
    (r"先週の([月火水木金土日])曜", _last_weeks_day()),
    (r"上(?:周|週|个星期|個星期|星期|个礼拜|個禮拜|礼拜|禮拜)|先週", _shift("w", -1)),
    (r"下(?:周|週|个星期|個星期|星期|个礼拜|個禮拜|礼拜|禮拜)|来週|來週", _shift("w", 1)),
    (r"上(?:个|個)月|先月", _shift("m", -1)),
    (r"下(?:个|個)月|来月|來月", _shift("m", 1)),
    (r"去年|昨年", _shift("y", -1)),
    (r"明年|来年|來年", _shift("y", 1)),
    (
        rf"{_CJK_COUNT}\s*(个月|個月|ヶ月|か月|カ月|ヵ月|个星期|個星期|星期|週間|周|週|天|日|年)前",
        _ago(_ZH_UNITS, 1, 2),
    ),
    # Korean (Hangul)
    (r"그저께|그제", _shift("d", -2)),
    (r"어제|어젯밤", _shift("d", -1)),
    (r"내일", _shift("d", 1)),
    (r"지난\s?주말", _shift("e", -1)),
    (r"지난\s?주", _shift("w", -1)),
    (r"다음\s?주", _shift("w", 1)),
    (r"지난\s?달", _shift("m", -1)),
    (r"다음\s?달", _shift("m", 1)),
    (r"작년|지난해", _shift("y", -1)),
    (r"내년", _shift("y", 1)),
    (r"일주일\s?전", lambda _m, d: _unit_ago("w", 1, d)),
    (r"며칠\s?전", lambda _m, d: _unit_ago("d", 3, d)),
    (r"(\d{1,3}|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열|몇)\s?(일|주|달|개월|년)\s?전", _ago(_KO_UNITS, 1, 2)),
    # Russian (lowercased)
    (r"\bпозавчера\b", _shift("d", -2)),
    (r"\bпослезавтра\b", _shift("d", 2)),
    (r"\bвчера\b", _shift("d", -1)),
    (r"\bзавтра\b", _shift("d", 1)),
    (r"\b(?:в|на) прошл(?:ые|ых) выходны(?:е|х)\b", _shift("e", -1)),
    (r"\bна прошлой неделе\b", _shift("w", -1)),
    (r"\bна следующей неделе\b", _shift("w", 1)),
    (r"\bв прошлом (месяце|году)\b", _by_unit(-1, _units(m="месяце", y="году"))),
    (r"\bв (?:следующем|будущем) (месяце|году)\b", _by_unit(1, _units(m="месяце", y="году"))),
    (rf"\bв прошл(?:ый|ую|ое) {_CYRILLIC_WEEKDAY}\b", _weekday(-1)),
    (rf"\bв следующ(?:ий|ую|ее) {_CYRILLIC_WEEKDAY}\b", _weekday(1)),
    (
        rf"(?:\b(\d{{1,3}}|{_RU_COUNT})\s+)?\b({'|'.join(_RU_UNITS)})\s+назад\b",
        _ago(_RU_UNITS, 1, 2),
    ),
    # Arabic (diacritics dropped, alef forms as one)
    (r"(?<!\w)(?:[وف])?(?:اول امس|قبل امس)(?!\w)", _shift("d", -2)),
    (r"(?<!\w)(?:[وف])?بعد غد(?!\w)", _shift("d", 2)),
    (r"(?<!\w)(?:[وف])?(?:بال|ال)?(?:امس|بارحة)(?!\w)", _shift("d", -1)),
    (r"(?<!\w)(?:[وف])?(?:غدا|بكرة)(?!\w)", _shift("d", 1)),
    (rf"(?<!\w)(?:عطلة )?نهاية الاسبوع {_AR_LAST}(?!\w)", _shift("e", -1)),
    (rf"(?<!\w)(?:[وف])?(?:في )?(الاسبوع|الشهر|العام|السنة) {_AR_LAST}(?!\w)", _by_unit(-1, _AR_STEPS)),
    (rf"(?<!\w)(?:[وف])?(?:في )?(الاسبوع|الشهر|العام|السنة) {_AR_NEXT}(?!\w)", _by_unit(1, _AR_STEPS)),
    (r"(?<!\w)(?:منذ|قبل) (يومين|اسبوعين|شهرين|سنتين|عامين)(?!\w)", lambda m, d: _unit_ago(_AR_PAIRS[m[1]], 2, d)),
    (
        rf"(?<!\w)(?:منذ|قبل) (?:{_AR_AGO_COUNT} )?({_AR_UNIT_WORDS})(?!\w)",
        _ago(_AR_UNITS, 1, 2),
    ),
]
"""Expressions in Han, kana, Hangul, Cyrillic and Arabic script, over the text lowercased and
compatibility-normalised."""

_LATIN_TRIGGERS = frozenset(
    """
    yesterday tomorrow last past previous this next coming ago
    anteayer antier ayer manana pasado pasada proximo proxima viene hace
    hier demain dernier derniere passe passee prochain prochaine il
    vorgestern ubermorgen gestern morgen vor
    anteontem ontem amanha passado passada vem proximo proxima ha atras
    altroieri ieri dopodomani domani scorso scorsa prossimo prossima fa
    """.split()
)
"""A word one of the Latin-script expressions holds (or starts with: :data:`_GERMAN_STEMS`): a text
without any is not read further, as most are not (one pass over its words)."""
_GERMAN_STEMS = ("letzt", "vorig", "vergangen", "nachst", "kommend")
_OTHER_TRIGGER = re.compile(
    "[昨前明后後上下先来來去年月週周おあき그어내지다작일며전]|вчера|завтра|прошл|следующ|будущ|назад|امس|بارح|غد|بكرة|اسبوع|اسابيع|شهر|اشهر|شهور|عام|اعوام|سن|منذ|قبل|يوم|ايام|نهاية"
)
"""A character or word one of the other expressions holds."""
_LATIN_WORD = re.compile(r"[a-z]+")
_ARABIC_MARKS = re.compile("[\u064b-\u0652\u0670\u0640]")
_ALEFS = str.maketrans({"\u0623": "\u0627", "\u0625": "\u0627", "\u0622": "\u0627", "\u0649": "\u064a"})
"""Alef with hamza above or below, or madda, as bare alef; alef maqsura as ya."""


@functools.cache
def _compiled() -> tuple[list[tuple[re.Pattern[str], _Resolve]], list[tuple[re.Pattern[str], _Resolve]]]:
    """The Latin and the other expressions, compiled on the first text that may hold one (about 40 ms)."""
    return [(re.compile(p), r) for p, r in _LATIN], [(re.compile(p), r) for p, r in _OTHER]


def _resolved(text: str, patterns: list[tuple[re.Pattern[str], _Resolve]], day: date) -> list[when.Period]:
    """Each pattern's matches resolved in order; a matched span is read once (by the first pattern)."""
    found: list[when.Period] = []
    for pattern, resolve in patterns:
        if pattern.search(text) is None:
            continue
        for match in pattern.finditer(text):
            try:
                period = resolve(match, day)
            except (ValueError, OverflowError):  # beyond the calendar (said on 9999-12-31, "tomorrow")
                continue
            if period is not None:
                found.append(period)
        text = pattern.sub(lambda m: " " * len(m[0]), text)
    return found


def told_periods(text: str, said_on: date) -> list[when.Period]:
    """The periods ``text``, said on ``said_on``, tells of (at most :data:`MAX_TOLD`, in the order read)."""
    found: list[when.Period] = []
    folded = when.fold(text.replace("\u2019", "'"))
    words = set(_LATIN_WORD.findall(folded))
    if any(ch.isdigit() for ch in text) or not words.isdisjoint(when.MONTHS):
        for period in when.named_periods(text):
            if period.every_year:  # a month named alone: the nearest such month, up to three months ahead
                year = said_on.year if period.first.month <= said_on.month + 3 else said_on.year - 1
                if not 1 <= year < 9999:
                    continue
                period = when.month_period(year, period.first.month)
            found.append(period)
    if not words.isdisjoint(_LATIN_TRIGGERS) or any(w.startswith(_GERMAN_STEMS) for w in words):
        found += _resolved(folded, _compiled()[0], said_on)
    if not text.isascii():
        written = _ARABIC_MARKS.sub("", unicodedata.normalize("NFKC", text).lower()).translate(_ALEFS)
        if _OTHER_TRIGGER.search(written):
            found += _resolved(written, _compiled()[1], said_on)
    return list(dict.fromkeys(found))[:MAX_TOLD]


def stored(text: str, said_on: date) -> str:
    """The periods the beginning of ``text`` (:data:`ENTRY_CHARS`) tells of, as an entry stores them
    (:func:`encode`); none once the request's characters (:func:`reading`) are spent."""
    read = text[:ENTRY_CHARS]
    left = _left.get()
    if left is not None:
        if left[0] <= 0:
            return ""
        read = read[: left[0]]
        left[0] -= len(read)
    return encode(told_periods(read, said_on))


def encode(periods: list[when.Period]) -> str:
    """Periods as stored on an entry: ``first/last`` ISO dates, space-separated."""
    return " ".join(f"{p.first.isoformat()}/{p.last.isoformat()}" for p in periods)


def decode(stored: object) -> list[when.Period]:
    """The periods :func:`encode` wrote (nothing for a value that is not of that form)."""
    if not isinstance(stored, str):
        return []
    periods = []
    for span in stored.split()[:MAX_TOLD]:
        first, _, last = span.partition("/")
        try:
            periods.append(when.Period(date.fromisoformat(first), date.fromisoformat(last)))
        except ValueError:
            continue
    return periods
