"""How memory entries are laid out in the table (sort-key prefixes of a scope partition)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agentmem.keys import Scope, escape
from agentmem.models.memory import StoredEntry
from agentmem.stores.table import Item

ENTRY = "E#"
SESSION_INDEX = "SX#"
SESSION_HEAD = "SESSION#"
INDEX_NAMESPACE = "M"
ENTRY_POINTER = "ID#"


def entry_sk(entry_id: str) -> str:
    return ENTRY + entry_id


def session_prefix(session_id: str) -> str:
    return f"{SESSION_INDEX}{escape(session_id)}#"


def session_index_item(scope: Scope, session_id: str, entry_id: str, generation: str) -> Item:
    """One row per entry of a session, tagged with the ingest (generation) that wrote it."""
    return {"pk": scope.partition, "sk": session_prefix(session_id) + entry_id, "generation": generation}


def session_head_sk(session_id: str) -> str:
    """The item naming the session's current generation: the latest completed ``add_session``."""
    return f"SESSION#{escape(session_id)}"


def pointer_item(scope: Scope, entry_id: str) -> Item:
    """Lets an entry be found by id alone, whichever project holds it."""
    return {"pk": scope.user_ref.partition, "sk": ENTRY_POINTER + entry_id, "project_id": scope.project_id}


def entry_from_item(item: Item, score: float | None = None) -> StoredEntry:
    return StoredEntry(
        id=item["id"],
        session_id=item.get("session_id"),
        project_id=item.get("project_id"),
        content=json.loads(item["content"]),
        author=item.get("author"),
        timestamp=item["timestamp"],
        score=score,
    )


def entry_item(
    scope: Scope,
    entry_id: str,
    *,
    session_id: str | None,
    content: dict[str, Any],
    author: str | None,
    timestamp: str,
    terms: Iterable[str],
    length: int,
) -> Item:
    """``tokens`` lists the distinct tokens the entry is indexed under (to find its postings again)."""
    return {
        "pk": scope.partition,
        "sk": entry_sk(entry_id),
        "id": entry_id,
        "session_id": session_id,
        "project_id": scope.project_id,
        "content": json.dumps(content, ensure_ascii=False, separators=(",", ":")),
        "author": author,
        "timestamp": timestamp,
        "tokens": sorted(terms),
        "length": length,
    }
