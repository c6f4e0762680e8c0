"""check_items, the guarded batches and the graph's transaction grouping use size_bound, and the SQLite
table row_bound (from the row it stores), fast upper bounds of the size DynamoDB counts: neither may ever
be below the exact count."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentmem.stores.sqlite_table import _dumps, row_bound
from agentmem.stores.table import item_size, size_bound

text = st.text(alphabet=st.characters(exclude_categories=()))  # lone surrogates too
scalars = st.one_of(text, st.binary(), st.integers(), st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.lists(inner) | st.dictionaries(text, inner), max_leaves=20)
items = st.fixed_dictionaries({"pk": text, "sk": text}).flatmap(
    lambda keys: st.dictionaries(text, values).map(lambda rest: {**rest, **keys})
)


@given(items)
def test_the_size_bound_is_never_below_what_dynamodb_counts(item: dict[str, Any]) -> None:
    assert item_size(item) <= size_bound(item)


@given(items)
def test_the_row_bound_is_never_below_what_dynamodb_counts(item: dict[str, Any]) -> None:
    assert item_size(item) <= row_bound(item["pk"], item["sk"], _dumps(item))
