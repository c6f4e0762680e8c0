"""What extraction reads of a session: its generation (a session written again from the start begins a new
one), the messages past the cursor, and the few before a batch shown as context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from agentmem.extraction import prompts, work
from agentmem.keys import Scope
from agentmem.memory import records as memory_records
from agentmem.stores.table import Table, query_all

EARLIER_MESSAGES = 2
"""Messages before the batch shown as context (never extracted from twice)."""


class SessionMessages:
    def __init__(self, table: Table, clock: Callable[[], datetime]) -> None:
        self._raw = table
        self._clock = clock

    def generation(self, scope: Scope, session: str) -> str:
        head = self._raw.get(scope.partition, memory_records.session_head_sk(session))
        return str(head.get("generation") or "") if head else ""

    def messages_after(self, scope: Scope, session: str, cursor: work.Cursor, generation: str) -> list[prompts.Message]:
        """The session's messages past the cursor, in the order they were written (then by id): a turn written
        after extraction read past it, with an earlier time than those read, is read all the same."""
        prefix = memory_records.session_prefix(session)
        position = (cursor.written, cursor.last)
        rows = [
            (int(r.get(memory_records.WRITTEN) or 0), r["sk"][len(prefix) :])
            for r in query_all(self._raw, scope.partition, prefix)
            if (r.get("generation") or "") in ("", generation)
        ]
        pending = sorted(row for row in rows if row > position)
        found = {
            i["id"]: i for i in self._raw.batch_get([(scope.partition, memory_records.entry_sk(i)) for _, i in pending])
        }
        written = {i: w for w, i in pending}
        return [
            replace(m, written=written[m.entry_id])
            for m in prompts.messages_of([found[i] for _, i in pending if i in found], self._clock())
        ]

    def earlier(self, scope: Scope, session: str, first: str) -> list[prompts.Message]:
        prefix = memory_records.session_prefix(session)
        rows = self._raw.query(
            scope.partition, prefix, limit=EARLIER_MESSAGES, descending=True, start_after=prefix + first
        ).items
        ids = [r["sk"][len(prefix) :] for r in rows]
        found = self._raw.batch_get([(scope.partition, memory_records.entry_sk(i)) for i in ids])
        return prompts.messages_of(sorted(found, key=lambda i: i["id"]), self._clock())
