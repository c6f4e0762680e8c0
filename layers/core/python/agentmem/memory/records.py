"""How memory entries are laid out in the table (sort-key prefixes of a scope partition)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from agentmem.clock import format_timestamp
from agentmem.keys import Scope, escape
from agentmem.memory import filters
from agentmem.models.content import Content
from agentmem.models.memory import StoredEntry
from agentmem.search import context
from agentmem.search.inverted_index import index_terms
from agentmem.search.stemming import stemmed_terms
from agentmem.search.tokenize import tokenize
from agentmem.stores.table import TTL_ATTRIBUTE, Condition, Item

ENTRY = "E#"
EVENT = "EV#"
"""An event kept as an event only, never a memory entry (AgentCore's blob payloads: a framework's state): its
session row (:data:`EVENT_ROW`) lists it with the session's entries; search, lists, counts and extraction,
which read ``E#`` items, never see it; export and erasure do (agentmem/agentcore/state_events.py)."""
EVENT_ROW = "event"
"""Set on the session row of an :data:`EVENT` item (the row names an ``EV#`` item, not an ``E#`` one)."""
SESSION_INDEX = "SX#"
SESSION_HEAD = "SESSION#"
INDEX_NAMESPACE = "M"
ENTRY_POINTER = "ID#"
VERSION = "EH#"
"""A superseded version of an entry (``EH#<id>#<revision>``, :func:`version_item`): what ``history`` lists
beside the entry, never searched."""
REVISION = "revision"
"""The entry's revision: absent on an entry never corrected (revision 1), ``n`` after ``n - 1`` PATCHes."""
UPDATED_AT = "updated_at"
"""When the current version was written, on an entry corrected at least once (else its timestamp)."""
METADATA = "metadata"
CONTEXT = "context"
CONTEXT_LENGTH = "context_length"
TERMS = "terms"
"""An entry's own words with their counts (``word:count`` pairs): what keyword search ranks it by."""
CONTEXT_TERMS = "context_terms"
"""The words of the entries before it that it is also found by (agentmem/search/context.py)."""
LEGACY_TOKENS = "tokens"
"""The words of an entry written while entries had postings in the table (``MT#<word>#<id>``): a delete
removes those postings too."""
EXPIRES_AT = filters.EXPIRES_AT
BOUND_ROW = "bound_row"
"""The sort key of a row in the entry's partition that exists for this entry only (a store item's key
row): deleting the entry deletes it, if its :data:`BOUND_ENTRY` still names the entry."""
BOUND_VALUE_ROW = "bound_value_row"
"""The sort key of a second such row (a store item's value row, for a large value), deleted with the first."""
BOUND_ENTRY = "entry_id"
TOLD = "told"
"""The periods an entry tells of, resolved against the day it was said (``first/last`` ISO dates,
space-separated: :mod:`agentmem.search.told`); ranking reads them with its timestamp."""
CONTINUES = "continues"
"""The id of the entry an entry continues: its author's own entry just before the other author's entry it
answers, in its session (:func:`agentmem.search.context.continued`). A hybrid search's first hits bring it."""


def encoded_terms(counts: Mapping[str, int]) -> str:
    """``word:count`` pairs, space-separated (words are alphanumeric, or ``~`` and hex: no ``:``, no space)."""
    return " ".join(f"{word}:{count}" for word, count in counts.items())


def decoded_terms(text: str) -> dict[str, int]:
    """The inverse of the encoding of :data:`TERMS` and :data:`CONTEXT_TERMS`."""
    pairs = (pair.rpartition(":") for pair in text.split(" ") if pair)
    return {word: int(count) for word, _, count in pairs}


def entry_terms(item: Item) -> tuple[dict[str, int], dict[str, int]]:
    """(own words, context words) of an entry item with their counts: as stored, or, for an entry written
    before they were stored, counted again from its text and context by the functions a write uses."""
    own = item.get(TERMS)
    if isinstance(own, str):
        around = item.get(CONTEXT_TERMS)
        return decoded_terms(own), decoded_terms(around) if isinstance(around, str) else {}
    counted = index_terms(tokenize(entry_text(item)))
    return counted, context.context_terms(tokenize("\n".join(item.get(CONTEXT) or [])), set(counted))


def entry_stems(item: Item) -> tuple[dict[str, int], dict[str, int]]:
    """(own, context) stems of an entry item with their counts: what a search index holds it under
    (:func:`entry_terms`, stemmed by :func:`~agentmem.search.stemming.stemmed_terms`)."""
    return stemmed_terms(*entry_terms(item))


def entry_sk(entry_id: str) -> str:
    return ENTRY + entry_id


def session_prefix(session_id: str) -> str:
    return f"{SESSION_INDEX}{escape(session_id)}#"


WRITTEN = "w"
"""When a session row was written (epoch milliseconds): the order entries came in, which their ids (ordered
by the time they say they were said) need not follow. Rows written before it was kept have none."""


def session_index_item(
    scope: Scope, session_id: str, entry_id: str, generation: str, written_ms: int | None = None
) -> Item:
    """One row per entry of a session, tagged with the ingest (generation) that wrote it and when."""
    row: Item = {"pk": scope.partition, "sk": session_prefix(session_id) + entry_id, "generation": generation}
    if written_ms is not None:
        row[WRITTEN] = written_ms
    return row


def session_head_sk(session_id: str) -> str:
    """The item naming the session's current generation: the latest completed ``add_session``."""
    return f"SESSION#{escape(session_id)}"


def unchanged(item: Item) -> Condition:
    """That the entry item is still stored as ``item`` was read: present (not expired), with the same content,
    timestamp, metadata and revision (what a rewrite or a correction changes, and what the BM25 counts it
    logs are computed from). A write of a version computed from ``item`` holds on it: a delete, a rewrite
    or a correction that landed meanwhile is never undone."""
    kept = ("id", "content", "timestamp", METADATA, REVISION)
    return Condition(equals={k: item[k] for k in kept if k in item}, absent=() if REVISION in item else (REVISION,))


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
        metadata=entry_metadata(item),
        expires_at=item.get(EXPIRES_AT),
        score=score,
        revision=revision_of(item),
        updated_at=item.get(UPDATED_AT) or item["timestamp"],
    )


def revision_of(item: Item) -> int:
    """The entry item's revision (1 when never corrected)."""
    return int(item.get(REVISION, 1))


def version_sk(entry_id: str, revision: int) -> str:
    return f"{VERSION}{entry_id}#{revision:010d}"


def version_prefix(entry_id: str) -> str:
    return f"{VERSION}{entry_id}#"


def version_keys(item: Item) -> list[tuple[str, str]]:
    """The keys of the superseded versions of the entry item ``item`` (none for an entry never corrected)."""
    return [(item["pk"], version_sk(item["id"], r)) for r in range(1, revision_of(item))]


def version_item(entry: Item, superseded_at: str) -> Item:
    """The entry item ``entry`` as a superseded version, closed at ``superseded_at``: its content and metadata,
    when it became current (valid and recorded: when it was written; the first version: the entry's timestamp)
    and when it stopped being; it expires with the entry (DynamoDB TTL and the local sweep remove it too)."""
    began = entry.get(UPDATED_AT) or entry["timestamp"]
    item: Item = {
        "pk": entry["pk"],
        "sk": version_sk(entry["id"], revision_of(entry)),
        "id": entry["id"],
        "project_id": entry.get("project_id"),
        REVISION: revision_of(entry),
        "content": entry["content"],
        "valid_from": began,
        "valid_to": superseded_at,
        "recorded_at": began,
    }
    for name in (METADATA, EXPIRES_AT, TTL_ATTRIBUTE):
        if name in entry:
            item[name] = entry[name]
    return item


def version_json(item: Item, *, current: bool = False) -> dict[str, Any]:
    """A version as ``history`` returns it; ``current``: the entry item itself (still valid)."""
    began = (item.get(UPDATED_AT) or item["timestamp"]) if current else item["valid_from"]
    return {
        "revision": revision_of(item),
        "content": json.loads(item["content"]),
        "metadata": entry_metadata(item),
        "valid_from": began,
        "valid_to": None if current else item["valid_to"],
        "recorded_at": began if current else item["recorded_at"],
    }


def entry_text(item: Item) -> str:
    """The text of an entry item (its text parts)."""
    return Content.model_validate(json.loads(item["content"])).text()


def embedding_text(item: Item) -> str:
    """What is embedded for an entry item: its text after the entry before it (:func:`context.embedding_text`)."""
    return context.embedding_text(entry_text(item), item.get(CONTEXT) or [])


def encoded_metadata(metadata: Mapping[str, Any]) -> str:
    """An entry's metadata as its item keeps it (:func:`entry_metadata` reads it back)."""
    return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))


def entry_metadata(item: Item) -> dict[str, Any]:
    """The entry's metadata (kept as JSON text: numbers may be floats, which the table cannot hold)."""
    raw = item.get(METADATA)
    return json.loads(raw) if isinstance(raw, str) else {}


def entry_builtins(item: Item) -> dict[str, Any]:
    """The built-in fields a filter reads (see :mod:`agentmem.memory.filters`), and the periods the entry
    tells of (:data:`TOLD`), which ranking reads beside its author and timestamp."""
    return {
        "author": item.get("author"),
        "session_id": item.get("session_id"),
        "timestamp": item.get("timestamp"),
        EXPIRES_AT: item.get(EXPIRES_AT),
        TOLD: item.get(TOLD),
    }


def is_live(item: Item, now: str) -> bool:
    """Not expired at ``now`` (a stored-form timestamp, which compares as a string)."""
    expires = item.get(EXPIRES_AT)
    return not isinstance(expires, str) or expires > now


def matches(item: Item, where: filters.Node | None, now: str) -> bool:
    """Live at ``now`` and matching the filter: the evaluation of SQLite and DynamoDB (over the items)."""
    return is_live(item, now) and filters.matches(where, entry_builtins(item), entry_metadata(item))


def entry_item(
    scope: Scope,
    entry_id: str,
    *,
    session_id: str | None,
    content: dict[str, Any],
    author: str | None,
    timestamp: str,
    terms: Mapping[str, int],
    length: int,
    metadata: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    context: Sequence[str] = (),
    context_length: int = 0,
    context_terms: Mapping[str, int] | None = None,
    continues: str | None = None,
    told: str = "",
) -> Item:
    """``terms``: the entry's own words with their counts, ``context_terms`` the context words it is found
    by (agentmem/search/partition.py reads both); ``context`` is what it keeps of the entries before it in
    its session (:mod:`agentmem.search.context`), ``continues`` the id of the entry it continues, ``told``
    the periods it tells of (:data:`TOLD`)."""
    item: Item = {
        "pk": scope.partition,
        "sk": entry_sk(entry_id),
        "id": entry_id,
        "session_id": session_id,
        "project_id": scope.project_id,
        "content": json.dumps(content, ensure_ascii=False, separators=(",", ":")),
        "author": author,
        "timestamp": timestamp,
        TERMS: encoded_terms(terms),
        "length": length,
    }
    if context_terms:
        item[CONTEXT_TERMS] = encoded_terms(context_terms)
    if context:
        item[CONTEXT] = list(context)
        item[CONTEXT_LENGTH] = context_length
    if continues is not None:
        item[CONTINUES] = continues
    if told:
        item[TOLD] = told
    if metadata:
        item[METADATA] = encoded_metadata(metadata)
    if expires_at is not None:
        item[EXPIRES_AT] = format_timestamp(expires_at)
        # DynamoDB TTL (and the local sweep) remove the entry from the second after it expired; reads
        # stop returning it at expires_at itself (is_live).
        item[TTL_ATTRIBUTE] = math.ceil(expires_at.timestamp())
    return item
