# ruff: noqa: RUF001  (Cyrillic letters that look Latin are words under test)
"""The days an entry tells of, resolved against the day it was said (agentmem/search/told.py)."""

from __future__ import annotations

from datetime import date

import pytest

from agentmem.search.told import MAX_TOLD, decode, encode, told_periods
from agentmem.search.when import Period, closeness, named_periods

MONDAY = date(2023, 5, 15)
"""The day every text below was said: Monday 15 May 2023."""


def _day(day: int, month: int = 5, year: int = 2023) -> Period:
    return Period(date(year, month, day), date(year, month, day))


LAST_WEEK = Period(date(2023, 5, 8), date(2023, 5, 14))
NEXT_WEEK = Period(date(2023, 5, 22), date(2023, 5, 28))
LAST_WEEKEND = Period(date(2023, 5, 13), date(2023, 5, 14))
APRIL = Period(date(2023, 4, 1), date(2023, 4, 30))
JUNE = Period(date(2023, 6, 1), date(2023, 6, 30))
MARCH = Period(date(2023, 3, 1), date(2023, 3, 31))
LAST_YEAR = Period(date(2022, 1, 1), date(2022, 12, 31))
NEXT_YEAR = Period(date(2024, 1, 1), date(2024, 12, 31))
TWO_WEEKS_AGO = Period(date(2023, 4, 28), date(2023, 5, 4))


@pytest.mark.parametrize(
    ("text", "told"),
    [
        # English
        ("I ran my first marathon yesterday!", _day(14)),
        ("We had pizza last night", _day(14)),
        ("The day before yesterday the boiler broke", _day(13)),
        ("Tomorrow I start the new job", _day(16)),
        ("We went camping last weekend", LAST_WEEKEND),
        ("Last week was exhausting", LAST_WEEK),
        ("My sister visits next week", NEXT_WEEK),
        ("Last month I adopted a cat", APRIL),
        ("We move next month", JUNE),
        ("I graduated last year", LAST_YEAR),
        ("Last Saturday we hiked", _day(13)),
        ("See you next Friday", _day(19)),
        ("Two weeks ago I adopted a dog", TWO_WEEKS_AGO),
        ("3 days ago my phone died", _day(12)),
        ("a month ago I quit", APRIL),
        ("I moved here in March", MARCH),
        ("My flight is on 3 June 2023", _day(3, 6)),
        # Spanish
        ("Ayer fui al médico", _day(14)),
        ("Anteayer llovió", _day(13)),
        ("Mañana voy al cine", _day(16)),
        ("La semana pasada estuve en Sevilla", LAST_WEEK),
        ("El mes que viene nos mudamos", JUNE),
        ("El año pasado aprendí a nadar", LAST_YEAR),
        ("El sábado pasado corrimos", _day(13)),
        ("Hace dos semanas adopté un perro", TWO_WEEKS_AGO),
        # French
        ("Hier, j'ai vu Paul", _day(14)),
        ("Avant-hier il pleuvait", _day(13)),
        ("Demain je pars", _day(16)),
        ("La semaine dernière était longue", LAST_WEEK),
        ("Le mois prochain nous déménageons", JUNE),
        ("L'an dernier j'ai appris le piano", LAST_YEAR),
        ("Samedi dernier nous avons marché", _day(13)),
        ("Il y a trois jours, mon téléphone est tombé", _day(12)),
        # German
        ("Gestern war ich beim Arzt", _day(14)),
        ("Vorgestern hat es geregnet", _day(13)),
        ("Morgen fange ich an", _day(16)),
        ("Letzte Woche waren wir in Berlin", LAST_WEEK),
        ("Nächstes Jahr ziehen wir um", NEXT_YEAR),
        ("Letzten Samstag sind wir gewandert", _day(13)),
        ("Vor zwei Wochen habe ich einen Hund adoptiert", TWO_WEEKS_AGO),
        # Portuguese
        ("Ontem fui ao médico", _day(14)),
        ("Amanhã começo o trabalho", _day(16)),
        ("Na semana passada estive em Lisboa", LAST_WEEK),
        ("No mês que vem mudamos", JUNE),
        ("No sábado passado corremos", _day(13)),
        ("Há duas semanas adotei um cão", TWO_WEEKS_AGO),
        ("Três dias atrás o meu telefone caiu", _day(12)),
        # Italian
        ("Ieri sono andato dal medico", _day(14)),
        ("Domani comincio", _day(16)),
        ("L'anno scorso ho imparato a nuotare", LAST_YEAR),
        ("Il mese prossimo traslochiamo", JUNE),
        ("Sabato scorso abbiamo camminato", _day(13)),
        ("Due settimane fa ho adottato un cane", TWO_WEEKS_AGO),
        # Russian
        ("Вчера я ходил к врачу", _day(14)),
        ("Позавчера шёл дождь", _day(13)),
        ("Завтра начинаю работу", _day(16)),
        ("На прошлой неделе мы были в Москве", LAST_WEEK),
        ("В следующем месяце переезжаем", JUNE),
        ("В прошлом году я окончил университет", LAST_YEAR),
        ("В прошлую субботу мы гуляли", _day(13)),
        ("Две недели назад я взял собаку", TWO_WEEKS_AGO),
        ("Три дня назад сломался телефон", _day(12)),
        # Chinese
        ("我昨天去了北京", _day(14)),
        ("前天下雨了", _day(13)),
        ("明天我开始新工作", _day(16)),
        ("上周六我们去爬山", _day(13)),
        ("上周很累", LAST_WEEK),
        ("下个月我们搬家", JUNE),
        ("去年我毕业了", LAST_YEAR),
        ("两个星期前我养了一只狗", TWO_WEEKS_AGO),
        ("三天前我的手机坏了", _day(12)),
        # Japanese
        ("昨日、医者に行った", _day(14)),
        ("おととい雨が降った", _day(13)),
        ("先週の土曜日に映画を見た", _day(13)),
        ("先月、猫を飼い始めた", APRIL),
        ("来年、引っ越す", NEXT_YEAR),
        ("3日前に東京へ行った", _day(12)),
        # Korean
        ("어제 친구를 만났다", _day(14)),
        ("지난주에 바빴다", LAST_WEEK),
        ("다음 달에 이사한다", JUNE),
        ("작년에 졸업했다", LAST_YEAR),
        ("두 달 전에 이사했다", MARCH),
        # Arabic
        ("ذهبت إلى الطبيب أمس", _day(14)),
        ("سأبدأ العمل غداً", _day(16)),
        ("في الأسبوع الماضي كنت مشغولا", LAST_WEEK),
        ("الشهر القادم سننتقل", JUNE),
        ("تخرجت في العام الماضي", LAST_YEAR),
        ("منذ أسبوعين تبنيت كلبا", TWO_WEEKS_AGO),
        ("منذ ثلاثة أيام تعطل هاتفي", _day(12)),
    ],
)
def test_an_entry_tells_of_the_period_its_words_resolve_to(text: str, told: Period) -> None:
    assert told_periods(text, MONDAY) == [told]


@pytest.mark.parametrize(
    "text",
    [
        "I love painting landscapes on Sundays",  # a weekday alone: before or after?
        "We met recently",  # no edges
        "Esta mañana corrí",  # "this morning", not "tomorrow"
        "Por la mañana leo",
        "Guten Morgen! Heute Morgen war es kalt",  # "morning", not "tomorrow"
        "De manhã corro",  # "in the morning" (Portuguese)
        "Завтрак был вкусным",  # breakfast, not "tomorrow"
        "晚上月亮很美",  # 上月 inside 晚上月亮 is not "last month"
        "أمسية جميلة",  # an evening, not "yesterday"
        "موعد الغداء",  # lunch, not "tomorrow"
        "",
    ],
)
def test_words_that_only_look_like_a_relative_date_tell_of_nothing(text: str) -> None:
    assert told_periods(text, MONDAY) == []


def test_a_text_keeps_each_period_once_and_at_most_a_few() -> None:
    text = "yesterday, yesterday, " + ", ".join(f"{n} days ago" for n in range(2, 20))
    told = told_periods(text, MONDAY)
    assert told[0] == _day(14)
    assert len(told) == MAX_TOLD
    assert len(set(told)) == MAX_TOLD


def test_the_stored_form_reads_back_and_anything_else_reads_as_nothing() -> None:
    periods = [_day(14), LAST_YEAR]
    assert decode(encode(periods)) == periods
    assert decode(None) == []
    assert decode(123) == []
    assert decode("2023-13-01/2023-13-02 nonsense") == []


def test_a_query_naming_a_day_an_entry_tells_of_gives_it_full_credit() -> None:
    said = "2023-06-09T10:00:00.000Z"
    query = named_periods("What did I do in March 2023?")
    assert closeness(query, said) == 0.0  # said too long after March to count by its timestamp
    assert closeness(query, said, told_periods("Three months ago I ran a marathon", date(2023, 6, 9))) == 1.0
    assert closeness(query, said, [LAST_YEAR]) == 0.0
    # a month named alone meets what was told of that month in any year
    assert closeness(named_periods("What happened in March?"), said, [MARCH]) == 1.0


def test_chinese_and_japanese_dates_in_a_query_name_their_period() -> None:
    assert named_periods("2021年我跑了什么?") == [Period(date(2021, 1, 1), date(2021, 12, 31))]
    assert named_periods("2023年5月7日に何をした") == [_day(7)]
    assert named_periods("2023年5月") == [Period(date(2023, 5, 1), date(2023, 5, 31))]
    assert named_periods("2023年13月") == []


@pytest.mark.parametrize("said_on", [date(9999, 12, 31), date(1, 1, 1)])
def test_dates_beyond_the_calendar_tell_of_nothing_and_raise_nothing(said_on: date) -> None:
    text = "Tomorrow, next year, last year, 3 days ago, in December, 明天, 去年, غدا"
    for period in told_periods(text, said_on):
        assert period.first <= period.last


def test_any_text_resolves_without_raising() -> None:
    """Random texts built from the expressions' own pieces, digits and other scripts (a fixed seed)."""
    import random

    pieces = [
        *"yesterday last next ago hace il y a vor letzten 3 0 999 two a few de la el 年 月 前 上 下 周 天".split(),
        *"昨天 先週の 土曜 지난 주 전 두 달 منذ أسبوع الماضي غدا امس 2023年5月 May 2023-02-30".split(),
        *"вчера назад недели в прошлую há atrás fa scorso".split(),
        " ",
        "\u0301",
        "\n",
    ]
    rng = random.Random(26)
    for _ in range(2000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        said_on = date(rng.randint(1970, 9999), rng.randint(1, 12), rng.randint(1, 28))
        told = told_periods(text, said_on)
        assert len(told) <= MAX_TOLD
        assert all(p.first <= p.last for p in told)
