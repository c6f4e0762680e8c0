"""Ids: the ULID spelling (stored keys and cursors depend on it) and its order."""

from hypothesis import given
from hypothesis import strategies as st

from agentmem.clock import _CROCKFORD, crockford, new_id


def _spelled_digit_by_digit(value: int) -> str:
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


@given(st.integers(min_value=0, max_value=(1 << 130) - 1))
def test_crockford_spells_the_26_base32_digits_of_a_value(value: int) -> None:
    assert crockford(value) == _spelled_digit_by_digit(value)


def test_ids_of_one_millisecond_grow_and_begin_with_their_time() -> None:
    ids = [new_id(1_700_000_000_000) for _ in range(50)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 50
    assert all(i[:10] == _spelled_digit_by_digit(1_700_000_000_000 << 80)[:10] for i in ids)
    assert new_id(1_700_000_000_001) > ids[-1]


def test_one_parser_reads_every_rfc_3339_form_and_refuses_a_time_without_its_zone() -> None:
    import pytest

    from agentmem.clock import format_timestamp, parse_timestamp

    stored = "2026-06-01T09:30:00.123Z"
    assert format_timestamp(parse_timestamp(stored)) == stored  # what this service stores reads back
    for same in ("2026-06-01t09:30:00.123z", "2026-06-01 11:30:00.123+02:00", "2026-06-01T09:30:00.123+00:00"):
        assert parse_timestamp(same) == parse_timestamp(stored)
    for refused in ("2026-06-01T09:30:00", "yesterday", "2026-13-01T00:00:00Z", ""):
        with pytest.raises(ValueError):
            parse_timestamp(refused)
