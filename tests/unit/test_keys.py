"""Scope keys: validation and the injectivity of the partition-key encoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem.errors import InvalidInput
from agentmem.keys import Scope, UserRef, escape, unescape, validate_id

# Ids as the API accepts them: 1..256 bytes, no control characters, rich in separator-like characters.
_id_chars = st.one_of(
    st.sampled_from("#%/|\\:23AF%#"),
    st.characters(blacklist_categories=("Cc", "Cs")),
)
ids = st.text(_id_chars, min_size=1, max_size=40)
projects = st.one_of(st.none(), ids)


@given(ids, ids, projects, ids, ids, projects)
def test_scope_partitions_are_injective(
    app1: str, user1: str, p1: str | None, app2: str, user2: str, p2: str | None
) -> None:
    # Two scopes share a partition key only if they are the same scope
    same_key = Scope(app1, user1, p1).partition == Scope(app2, user2, p2).partition
    assert same_key == ((app1, user1, p1) == (app2, user2, p2))


@given(ids, ids, ids, ids)
def test_user_partitions_are_injective_and_distinct_from_scopes(app1: str, user1: str, app2: str, user2: str) -> None:
    assert (UserRef(app1, user1).partition == UserRef(app2, user2).partition) == ((app1, user1) == (app2, user2))
    assert UserRef(app1, user1).partition != Scope(app2, user2, None).partition


@given(ids)
def test_escape_round_trips_and_never_leaves_a_separator(value: str) -> None:
    assert "#" not in escape(value)
    assert unescape(escape(value)) == value


def test_the_global_scope_differs_from_every_project() -> None:
    # A project id is never empty, so the empty project component means global only
    with pytest.raises(InvalidInput):
        UserRef("a", "u").scope("")
    assert Scope("a", "u", None).partition != Scope("a", "u", "%").partition


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "empty"),
        ("x" * 257, "257 bytes"),
        ("é" * 129, "258 bytes of UTF-8"),
        ("a\nb", "control character"),
        ("a\x00b", "NUL"),
        ("\ud800", "lone surrogate"),
        (5, "not a string"),
    ],
)
def test_invalid_ids_are_rejected(value: object, reason: str) -> None:
    with pytest.raises(InvalidInput):
        validate_id(value, "user")


@pytest.mark.parametrize("value", ["a", "x" * 256, "é" * 128, "a/b#c%d", "東京", "user@example.com"])
def test_valid_ids_are_accepted(value: str) -> None:
    assert validate_id(value, "user") == value


def test_a_project_scope_sees_global_then_project() -> None:
    scope = Scope("a", "u", "p")
    assert scope.visible_scopes() == [Scope("a", "u", None), scope]
    assert Scope("a", "u").visible_scopes() == [Scope("a", "u")]
