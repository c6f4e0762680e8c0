"""Correcting a memory entry in place, and its history (``PATCH`` and ``GET .../memories/{id}/history``).

A correction keeps the entry's id, session, author, timestamp and expiry, replaces its content, its
metadata or both, and adds one to its revision. In the same transaction as the new version, the version
it replaces is kept as an item of its own (``EH#<id>#<revision>``, :func:`records.version_item`), closed at
the moment of the correction: the history is bitemporal as the graph's facts are (``valid_from`` /
``valid_to``: while it was the entry's current version; ``recorded_at``: when this service recorded it).
The transaction holds only if the entry is still at the revision it was read at, so of two concurrent
corrections of one revision exactly one lands; the other reads again (and, when the caller named the
revision, answers 409 ``revision_conflict``).

Only the current version is searched, listed or read: the superseded versions carry no words and no
vector; a content correction is embedded again, and the change log (and a derived index's upsert) makes
every search index forget the old words. The versions go with the entry: its deletes remove them (the
entry's revision says which exist), they expire with it, and an erasure or a project delete empties the
whole partition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, cast

from agentmem.budget import Budget
from agentmem.clock import format_timestamp, parse_timestamp
from agentmem.errors import Conflict, NotFound
from agentmem.keys import UserRef
from agentmem.memory import records
from agentmem.memory.writes import EntryWriter, PreparedEntry
from agentmem.models.content import Content
from agentmem.models.memory import RESERVED_METADATA_PREFIXES, MemoryEntry, StoredEntry
from agentmem.search.inverted_index import MAX_TERMS_PER_DOCUMENT
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import Item, Table, query_all

REVISION_CONFLICT = "revision_conflict"
KEEP = object()
"""``metadata`` of :meth:`EntryRevisions.update` when the correction leaves the metadata as it is."""


class EntryRevisions:
    """Corrects entries and reads their history. ``find(user, id)``: the live entry item of the user's
    ``id`` wherever it is (NotFound otherwise)."""

    def __init__(
        self,
        table: Table,
        clock: Callable[[], datetime],
        writer: EntryWriter,
        find: Callable[[UserRef, str], Item],
    ) -> None:
        self._table = table
        self._clock = clock
        self._writer = writer
        self._find = find

    def update(
        self,
        user: UserRef,
        entry_id: str,
        *,
        content: Content | None = None,
        metadata: Mapping[str, Any] | object | None = KEEP,
        revision: int | None = None,
        project_id: str | None = None,
    ) -> StoredEntry:
        """Replace the content and/or the metadata (None: none) of the entry ``entry_id``; with ``revision``,
        only if the entry is at that revision (Conflict ``revision_conflict`` otherwise, nothing written);
        with ``project_id``, only an entry of that project (NotFound otherwise). The entry as stored."""

        def attempt() -> tuple[Item, str | None]:
            old = self._entry(user, entry_id, project_id)
            current = records.revision_of(old)
            if revision is not None and revision != current:
                raise Conflict(
                    f"the memory is at revision {current}, not {revision}; read it again and retry",
                    code=REVISION_CONFLICT,
                    details={"revision": current},
                )
            kept = records.entry_metadata(old)
            if records.BOUND_ROW in old or any(key.startswith(RESERVED_METADATA_PREFIXES) for key in kept):
                raise Conflict(
                    "this memory is kept by the store or AgentCore's records; change it there",
                    code="managed_entry",
                )
            # The version replaced ends when the new one begins, never before it began (an entry's timestamp,
            # when its first version begins, may be later than the clock: a time told by the caller).
            now = max(format_timestamp(self._clock()), old.get(records.UPDATED_AT) or old["timestamp"])
            new_metadata = kept if metadata is KEEP else dict(cast("Mapping[str, Any] | None", metadata) or {})
            prepared = self._prepared(user, old, content, new_metadata)
            prepared.item[records.REVISION] = current + 1
            prepared.item[records.UPDATED_AT] = now
            # Held on the entry as read, its revision included: of two corrections of one revision, one lands.
            indexing = self._writer.replace(
                old, prepared, extra=[records.version_item(old, now)], embed=content is not None
            )
            return prepared.item, indexing

        item, indexing = retry_on_conflict(attempt, what="the memory")
        stored = records.entry_from_item(item)
        return stored.model_copy(update={"indexing": indexing}) if indexing else stored

    def _prepared(self, user: UserRef, old: Item, content: Content | None, metadata: dict[str, Any]) -> PreparedEntry:
        """The new version of ``old``: checked, its words counted again when its content changes."""
        scope = user.scope(old.get("project_id"))
        if content is None:  # the same words and vector: only the metadata changes
            item = {k: v for k, v in old.items() if k not in (records.METADATA, records.UPDATED_AT)}
            if metadata:
                item[records.METADATA] = records.encoded_metadata(metadata)
            return PreparedEntry(
                item,
                {},
                int(old.get("length", 0)),
                scope,
                has_text=True,
                context_length=int(old.get(records.CONTEXT_LENGTH, 0)),
            )
        expires = old.get(records.EXPIRES_AT)
        entry = MemoryEntry(
            content=content,
            author=old.get("author"),
            timestamp=parse_timestamp(old["timestamp"]),
            metadata=metadata or None,
            expires_at=parse_timestamp(expires) if isinstance(expires, str) else None,
        )
        prepared = self._writer.prepare(
            scope,
            entry,
            old.get("session_id"),
            MAX_TERMS_PER_DOCUMENT,
            context=old.get(records.CONTEXT) or [],
            continues=old.get(records.CONTINUES),
        )
        if records.LEGACY_TOKENS in old:  # its old postings still name it: a delete removes them
            prepared.item[records.LEGACY_TOKENS] = old[records.LEGACY_TOKENS]
        return prepared

    def history(self, user: UserRef, entry_id: str, project_id: str | None = None) -> dict[str, Any]:
        """``{"memory_id", "versions"}``: the entry's versions oldest first, the current one last (its
        ``valid_to`` null). When they are more than one answer holds, the oldest are left out and
        ``truncated`` is true."""
        item = self._entry(user, entry_id, project_id, reading=True)
        current = records.revision_of(item)
        past = [
            row
            for row in query_all(self._table, item["pk"], records.version_prefix(entry_id))
            if records.revision_of(row) < current
        ]
        newest_first = [records.version_json(item, current=True)]
        newest_first += [records.version_json(row) for row in sorted(past, key=records.revision_of, reverse=True)]
        budget = Budget()
        kept: list[dict[str, Any]] = []
        for version in newest_first:
            if not budget.take(version):
                break
            kept.append(version)
        answer: dict[str, Any] = {"memory_id": entry_id, "versions": kept[::-1]}
        if len(kept) < len(newest_first):
            answer["truncated"] = True
        return answer

    def _entry(self, user: UserRef, entry_id: str, project_id: str | None, *, reading: bool = False) -> Item:
        """The live entry; with ``project_id``, one of that project (or, ``reading``, one a read in the project
        sees: the project's or a global one), as a write touches exactly its scope and a read sees both."""
        item = self._find(user, entry_id)
        visible = (project_id, None) if reading else (project_id,)
        if project_id is not None and item.get("project_id") not in visible:
            raise NotFound(f"no memory {entry_id!r} in project {project_id!r} for this user")
        return item
