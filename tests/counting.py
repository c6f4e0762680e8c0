"""A Table that counts the items its reads return (what a DynamoDB read is billed on): the bench and the
tests of what one request may cost read it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentmem.stores.table import Item, Key, Page, Table


class CountingTable:
    """The real table, counting the items each read returns (and the reads)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self.items_read = 0
        self.reads = 0

    def get(self, pk: str, sk: str) -> Item | None:
        item = self._table.get(pk, sk)
        self.items_read += item is not None
        self.reads += 1
        return item

    def batch_get(self, keys: Sequence[Key]) -> list[Item]:
        items = self._table.batch_get(keys)
        self.items_read += len(items)
        self.reads += 1
        return items

    def query(self, pk: str, prefix: str = "", **kw: Any) -> Page:
        page = self._table.query(pk, prefix, **kw)
        self.items_read += len(page.items)
        self.reads += 1
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)
