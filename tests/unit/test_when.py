"""Time expressions in queries (agentmem/search/when.py)."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from agentmem.search.when import AFTER_DAYS, FADE_DAYS, Period, closeness, named_periods


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("What book did Ines read on 1 May, 2022?", date(2022, 5, 1), date(2022, 5, 1)),
        ("the week before August 3, 2023", date(2023, 8, 3), date(2023, 8, 3)),
        ("on the 14th of March, 2024", date(2024, 3, 14), date(2024, 3, 14)),
        ("notes of 2023-05-07", date(2023, 5, 7), date(2023, 5, 7)),
        ("el 7 de mayo de 2023", date(2023, 5, 7), date(2023, 5, 7)),
        ("le 3 août 2023", date(2023, 8, 3), date(2023, 8, 3)),
        ("What happened in December 2023?", date(2023, 12, 1), date(2023, 12, 31)),
        ("what did we do in 2021", date(2021, 1, 1), date(2021, 12, 31)),
    ],
)
def test_dated_queries_name_their_period(query: str, first: date, last: date) -> None:
    assert named_periods(query) == [Period(first, last)]


def test_a_month_alone_is_that_month_of_any_year_but_may_the_verb_is_not() -> None:
    assert [p.every_year for p in named_periods("When did Tomas go sailing in June?")] == [True]
    assert [p.first.month for p in named_periods("Which harbour did Ines visit in May?")] == [5]
    assert named_periods("you may go now") == []
    assert named_periods("31 February, 2023 never was") == []


def test_closeness_is_full_from_the_day_before_to_a_week_after_then_fades() -> None:
    periods = named_periods("on 1 May, 2022")
    assert closeness(periods, "2022-04-30T10:00:00.000Z") == 1.0
    assert closeness(periods, f"2022-05-{1 + AFTER_DAYS:02d}T10:00:00.000Z") == 1.0
    halfway = closeness(periods, datetime(2022, 5, 1 + AFTER_DAYS + FADE_DAYS // 2))
    assert 0.4 < halfway < 0.6
    assert closeness(periods, "2022-09-01T00:00:00.000Z") == 0.0
    assert closeness([], "2022-05-01T00:00:00.000Z") == 0.0
    assert closeness(periods, None) == 0.0


def test_a_december_of_any_year_reaches_into_the_next_january() -> None:
    periods = named_periods("what did we do in December?")
    assert closeness(periods, "2024-12-15T00:00:00.000Z") == 1.0
    assert closeness(periods, "2025-01-03T00:00:00.000Z") == 1.0
    assert closeness(periods, "2025-06-03T00:00:00.000Z") == 0.0
