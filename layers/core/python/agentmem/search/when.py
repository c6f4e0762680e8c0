"""Time expressions in a query: the days, months or years it names, and how close an entry's timestamp is.

"What did Maria donate in December 2023?" is about what was said around then, and what was said
around then is stamped around then (an entry's ``timestamp`` is when it was said; a turn says
"yesterday" or "last week", so what it tells happened shortly before its timestamp). A query naming a
date gives entries stamped from a day before the period it names to :data:`AFTER_DAYS` days after it full
credit, and less as they lie further away (none beyond :data:`FADE_DAYS` more).

Recognised: ``2023-05-07``; ``2023年5月7日``, ``2023年5月``, ``2023年``; ``7 May 2023``, ``7th of May,
2023``, ``May 7, 2023``; ``May 2023``; ``May`` (of any year); ``2023``, with month names in English,
Spanish and French. Relative expressions
("yesterday") are not read in a query: they need the asker's clock, which a stored question does not
have. In an entry they are, against the day it was said (:mod:`agentmem.search.told`): an entry also
gets full credit when a period it tells of meets the query's, widened by a day on each side.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

AFTER_DAYS = 7
FADE_DAYS = 30
_MONTH_NAMES = (
    ("january", "jan", "enero", "janvier"),
    ("february", "feb", "febrero", "fevrier"),
    ("march", "mar", "marzo", "mars"),
    ("april", "apr", "abril", "avril"),
    ("may", "mayo", "mai"),
    ("june", "jun", "junio", "juin"),
    ("july", "jul", "julio", "juillet"),
    ("august", "aug", "agosto", "aout"),
    ("september", "sep", "sept", "septiembre", "setiembre", "septembre"),
    ("october", "oct", "octubre", "octobre"),
    ("november", "nov", "noviembre", "novembre"),
    ("december", "dec", "diciembre", "decembre"),
)
MONTHS = {name: number for number, names in enumerate(_MONTH_NAMES, 1) for name in names}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th|er|º)?"
_YEAR = r"((?:19|20)\d\d)"
_ISO = re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b")
_HAN = re.compile(r"((?:19|20)\d\d)\s*年(?:\s*(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号號])?)?")
"""A date written in Chinese or Japanese: ``2023年5月7日``, ``2023年5月``, ``2023年``."""
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+|de\s+)?{_MONTH},?\s+(?:de\s+|of\s+)?{_YEAR}\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(?:de\s+|of\s+)?{_YEAR}\b")
_WORDS_TOO = {"may", "mars", "mai", "mayo"}
"""Month names that are also words: alone, read only after "in", "en", "de" or "of" ("in May")."""
_FULL = "|".join(
    sorted((n for n in MONTHS if len(n) > 3 and n != "sept" and n not in _WORDS_TOO), key=len, reverse=True)
)
_MONTH_ALONE = re.compile(rf"\b({_FULL})\b|\b(?:in|en|de|of|au|durante|during)\s+({'|'.join(_WORDS_TOO)})\b")
_YEAR_ALONE = re.compile(rf"\b{_YEAR}\b")


@dataclass(frozen=True, slots=True)
class Period:
    """Days ``first`` to ``last``; with ``every_year``, that month in any year (``first.year`` ignored)."""

    first: date
    last: date
    every_year: bool = False


def fold(text: str) -> str:
    """Lowercase, accents taken off (what the date patterns read)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def month_period(year: int, month: int) -> Period:
    if (year, month) == (date.max.year, 12):  # December of the calendar's last year: no January after it
        return Period(date(year, 12, 1), date.max)
    following = date(year + month // 12, month % 12 + 1, 1)
    return Period(date(year, month, 1), following - timedelta(days=1))


def _day(year: int, month: int, day: int) -> Period | None:
    try:
        moment = date(year, month, day)
    except ValueError:
        return None
    return Period(moment, moment)


def named_periods(query: str) -> list[Period]:
    """The periods a query names, most precise first (each span of text is read once)."""
    text = fold(query)
    found: list[Period | None] = []
    for match in _ISO.finditer(text):
        found.append(_day(int(match[1]), int(match[2]), int(match[3])))
    text = _ISO.sub(" ", text)
    for match in _HAN.finditer(text):
        year = int(match[1])
        if match[3]:
            found.append(_day(year, int(match[2]), int(match[3])))
        elif match[2] and 1 <= int(match[2]) <= 12:
            found.append(month_period(year, int(match[2])))
        elif not match[2]:
            found.append(Period(date(year, 1, 1), date(year, 12, 31)))
    text = _HAN.sub(" ", text)
    for match in _DAY_MONTH_YEAR.finditer(text):
        found.append(_day(int(match[3]), MONTHS[match[2]], int(match[1])))
    text = _DAY_MONTH_YEAR.sub(" ", text)
    for match in _MONTH_DAY_YEAR.finditer(text):
        found.append(_day(int(match[3]), MONTHS[match[1]], int(match[2])))
    text = _MONTH_DAY_YEAR.sub(" ", text)
    for match in _MONTH_YEAR.finditer(text):
        found.append(month_period(int(match[2]), MONTHS[match[1]]))
    text = _MONTH_YEAR.sub(" ", text)
    for match in _MONTH_ALONE.finditer(text):
        period = month_period(2000, MONTHS[match[1] or match[2]])
        found.append(Period(period.first, period.last, every_year=True))
    text = _MONTH_ALONE.sub(" ", text)
    for match in _YEAR_ALONE.finditer(text):
        year = int(match[1])
        found.append(Period(date(year, 1, 1), date(year, 12, 31)))
    return [p for p in found if p is not None]


def _closeness(period: Period, first: date, last: date, after_days: int) -> float:
    """How close days ``first`` to ``last`` lie to ``period`` (widened by a day before it and
    ``after_days`` after it): 1 when they meet it, fading to 0 over :data:`FADE_DAYS`; 0 where the widening
    leaves the calendar (a period or a day at its very edge: stored times stop at 9000, queries do not)."""
    try:
        return _closeness_within(period, first, last, after_days)
    except (OverflowError, ValueError):
        return 0.0


def _closeness_within(period: Period, first: date, last: date, after_days: int) -> float:
    start, end = period.first, period.last
    if period.every_year:
        try:
            start, end = start.replace(year=last.year), end.replace(year=last.year)
        except ValueError:  # 29 February
            return 0.0
        if last < start - timedelta(days=1):  # the spill after December reaches January of the next year
            start, end = start.replace(year=last.year - 1), end.replace(year=last.year - 1)
    start, end = start - timedelta(days=1), end + timedelta(days=after_days)
    if last >= start and first <= end:
        return 1.0
    gap = (start - last).days if last < start else (first - end).days
    return max(0.0, 1.0 - gap / FADE_DAYS)


def closeness(periods: list[Period], timestamp: str | datetime | None, told: Sequence[Period] = ()) -> float:
    """How close an entry lies to the periods: by its ``timestamp`` (stored form or datetime), or by the
    periods it tells of (:mod:`agentmem.search.told`), whichever is closer; 1 inside, fading to 0."""
    if not periods:
        return 0.0
    best = 0.0
    if isinstance(timestamp, str):
        try:
            day: date | None = date.fromisoformat(timestamp[:10])
        except ValueError:
            day = None
    else:
        day = timestamp.date() if timestamp is not None else None
    if day is not None:
        best = max(_closeness(period, day, day, AFTER_DAYS) for period in periods)
    for event in told:
        if best == 1.0:
            break
        best = max(best, *(_closeness(period, event.first, event.last, 1) for period in periods))
    return best
