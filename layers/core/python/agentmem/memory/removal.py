"""Removing memory entries with everything that points at them: id pointers, session rows, their
superseded versions (agentmem/memory/revisions.py), the store row bound to an entry, postings of entries
written when entries had postings, and their place in every process's search index (the change log) and in a
derived one.

An entry is deleted first, so a crash leaves only rows that point at nothing, which reads skip.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from agentmem.errors import ConditionFailed
from agentmem.keys import Scope, scope_of_partition
from agentmem.memory import filters, records
from agentmem.memory.search import MemorySearch
from agentmem.observability import logger
from agentmem.search import changes
from agentmem.search.inverted_index import InvertedIndex
from agentmem.stores.table import Condition, Delete, Item, Key, Table

DELETE_PAGE = 200
"""Entries read and deleted per round."""


class EntryRemoval:
    """Deletes entries and what points at them (``search``'s vector index is read at each delete: the
    service may swap it)."""

    def __init__(self, table: Table, search: MemorySearch) -> None:
        self._table = table
        self._search = search
        self._legacy_postings = InvertedIndex(table, records.INDEX_NAMESPACE)

    def delete_ids(
        self,
        scope: Scope,
        entry_ids: Sequence[str],
        now: str,
        *,
        session_id: str | None = None,
        where: filters.Node | None = None,
        words: Sequence[str] = (),
    ) -> int:
        """Delete the live entries among ``entry_ids`` that match ``where`` and hold ``words`` among their
        own as written; with ``session_id``, also the session rows of ids whose entry is gone. Expired
        entries are neither deleted nor counted here: their expiry removes them."""
        deleted = 0
        required = set(words)
        for start in range(0, len(entry_ids), DELETE_PAGE):
            chunk = entry_ids[start : start + DELETE_PAGE]
            found = self._table.batch_get([(scope.partition, records.entry_sk(i)) for i in chunk])
            items = [
                item
                for item in found
                if records.matches(item, where, now)
                and (not required or required <= records.entry_terms(item)[0].keys())
            ]
            deleted += self.delete_items(scope, items)
            present = {item["id"] for item in found}
            if session_id is not None:  # a row naming no entry, or an event kept as an event only (records.EVENT)
                prefix = records.session_prefix(session_id)
                gone = [i for i in chunk if i not in present]
                self._table.batch_write(
                    deletes=[(scope.partition, key + i) for i in gone for key in (prefix, records.EVENT)]
                )
        return deleted

    def delete_items(self, scope: Scope, items: Sequence[Item]) -> int:
        """Delete entries (entry first), then what points at them."""
        if not items:
            return 0
        self._table.batch_write(deletes=[(item["pk"], item["sk"]) for item in items])
        self._forget_items(scope, items)
        return len(items)

    def delete_project(self, scope: Scope) -> int:
        """Delete every item of the project's partition, page by page; the number of entries deleted."""
        deleted = 0
        while True:
            page = self._table.query(scope.partition, limit=DELETE_PAGE)
            if not page.items:
                return deleted
            entry_ids = [item["id"] for item in page.items if item["sk"].startswith(records.ENTRY)]
            deleted += len(entry_ids)
            keys: list[Key] = [(item["pk"], item["sk"]) for item in page.items]
            keys += [(scope.user_ref.partition, records.ENTRY_POINTER + i) for i in entry_ids]
            self._table.batch_write(deletes=keys)
            self._forget_vectors(scope, entry_ids)

    def purge_expired(self, items: Sequence[Item], *, already_deleted: bool = False) -> int:
        """Remove expired entries and everything that points at them. Safe to repeat."""
        by_scope: dict[str, list[Item]] = {}
        for item in items:
            if str(item.get("sk", "")).startswith(records.ENTRY) and scope_of_partition(str(item.get("pk"))):
                by_scope.setdefault(item["pk"], []).append(item)
        for partition, expired in by_scope.items():
            scope = scope_of_partition(partition)
            assert scope is not None
            if not already_deleted:
                self._table.batch_write(deletes=[(item["pk"], item["sk"]) for item in expired])
            self._forget_items(scope, expired)
        return sum(len(v) for v in by_scope.values())

    def removed(self, scope: Scope, items: Sequence[Item]) -> None:
        """After entries were deleted (with what points at them): log the deletes for every process's
        search index, and remove them from a derived one."""
        changes.MEMORY.record(
            self._table,
            scope.partition,
            [item["id"] for item in items],
            docs=-len(items),
            length=-sum(int(item.get("length", 0)) for item in items),
            context_length=-sum(int(item.get("context_length", 0)) for item in items),
            create=False,
        )
        self._forget_vectors(scope, [item["id"] for item in items])

    def _forget_items(self, scope: Scope, items: Sequence[Item]) -> None:
        """Remove what points at deleted entries (id pointers, session rows, the row bound to an entry, and
        the postings of entries written when entries had postings), and log the deletes."""
        side: list[Key] = []
        for item in items:
            legacy = item.get(records.LEGACY_TOKENS) or []
            side += self._legacy_postings.posting_keys(scope.partition, item["id"], legacy)
            side.append((scope.user_ref.partition, records.ENTRY_POINTER + item["id"]))
            side += records.version_keys(item)
            if item.get("session_id") is not None:
                side.append((scope.partition, records.session_prefix(item["session_id"]) + item["id"]))
        self._table.batch_write(deletes=side)
        for item in items:
            self._delete_bound_row(item)
        self.removed(scope, items)

    def _delete_bound_row(self, item: Item) -> None:
        """The row an entry is bound to (a store item's key row) goes with it, unless it has moved on to
        another entry meanwhile."""
        still_bound = Condition(equals={records.BOUND_ENTRY: item["id"]})
        rows = [row for row in (item.get(records.BOUND_ROW), item.get(records.BOUND_VALUE_ROW)) if isinstance(row, str)]
        if rows:
            with contextlib.suppress(ConditionFailed):
                self._table.transact_write([Delete(item["pk"], row, still_bound) for row in rows])

    def _forget_vectors(self, scope: Scope, entry_ids: Sequence[str]) -> None:
        """Remove deleted entries from the vector index; a failure is harmless (hits of gone entries are skipped)."""
        if not entry_ids:
            return
        try:
            self._search.vector_index.delete(scope, entry_ids)
        except Exception as error:  # the stream indexer deletes them too; `reindex` rebuilds
            logger.warning("vector index delete failed", extra={"error": type(error).__name__})
