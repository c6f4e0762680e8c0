"""check_items skips the exact size count for items whose repr() is short: that shortcut must never let
through an item the exact count would refuse."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentmem.stores.table import _size, item_size

text = st.text(alphabet=st.characters(exclude_categories=()))  # lone surrogates too
scalars = st.one_of(text, st.binary(), st.integers(), st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.lists(inner) | st.dictionaries(text, inner), max_leaves=20)
items = st.fixed_dictionaries({"pk": text, "sk": text}).flatmap(
    lambda keys: st.dictionaries(text, values).map(lambda rest: {**rest, **keys})
)


@given(items)
def test_four_bytes_per_repr_character_bounds_what_dynamodb_counts(item: dict[str, Any]) -> None:
    bound = 4 * len(repr(item))
    assert item_size(item) <= bound
    assert _size(item["pk"]) <= bound
    assert _size(item["sk"]) <= bound
