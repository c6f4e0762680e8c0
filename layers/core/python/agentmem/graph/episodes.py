"""Episodes: the raw turns of a session kept beside the graph (SPEC's ``add_session`` on the graph),
found again newest first or by keyword (BM25 over the ``GP`` inverted index)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from agentmem import users
from agentmem.budget import Budget
from agentmem.clock import format_timestamp, new_id
from agentmem.errors import PayloadTooLarge
from agentmem.graph import records
from agentmem.keys import Scope, validate_id
from agentmem.models.memory import MAX_TEXT_BYTES, MemoryEntry
from agentmem.search.inverted_index import InvertedIndex, index_terms, terms_per_document
from agentmem.search.tokenize import tokenize
from agentmem.stores.table import TTL_ATTRIBUTE, Item, Key, Table, check_items, query_all
from agentmem.tenancy import metering

EXPIRES_AT = "expires_at"


class Episodes:
    """The episodes of every scope, on a (guarded) table."""

    def __init__(self, table: Table, clock: Callable[[], datetime]) -> None:
        self._table = table
        self._clock = clock
        self._index = InvertedIndex(table, records.EPISODE_INDEX_NAMESPACE)

    def add(self, scope: Scope, session_id: str, entries: Sequence[MemoryEntry]) -> int:
        """Store the turns of a session as episodes (replacing that session's episodes in this scope)."""
        validate_id(session_id, "session_id")
        partition = scope.partition
        session_prefix = records.episode_session_prefix(session_id)
        old_ids = [i["sk"][len(session_prefix) :] for i in query_all(self._table, partition, session_prefix)]
        items: list[Item] = []
        side: list[Item] = []
        now = self._clock()
        max_terms = terms_per_document(len(entries))
        for entry in entries:
            text = entry.content.text()
            if not text.strip():
                continue
            size = len(text.encode("utf-8"))
            if size > MAX_TEXT_BYTES:
                raise PayloadTooLarge(
                    f"an entry holds {size} bytes of text; the limit is {MAX_TEXT_BYTES}", code="entry_too_large"
                )
            moment = entry.timestamp or now
            episode_id = new_id(int(moment.timestamp() * 1000))
            tokens = tokenize(text)
            terms = index_terms(tokens, max_terms)
            episode: Item = {
                "pk": partition,
                "sk": records.episode_sk(episode_id),
                "id": episode_id,
                "session_id": session_id,
                "project_id": scope.project_id,
                "author": entry.author,
                "text": text,
                "timestamp": format_timestamp(moment),
                "tokens": sorted(terms),
                "length": len(tokens),
            }
            own = [{"pk": partition, "sk": session_prefix + episode_id}]
            own += self._index.postings(partition, episode_id, terms, len(tokens))
            if entry.expires_at is not None:  # it expires as an entry does, with what points at it
                episode[EXPIRES_AT] = format_timestamp(entry.expires_at)
                episode[TTL_ATTRIBUTE] = math.ceil(entry.expires_at.timestamp())
                own = [{**item, TTL_ATTRIBUTE: episode[TTL_ATTRIBUTE]} for item in own]
            items.append(episode)
            side += own
        check_items([*side, *items])  # a rejected write must leave nothing behind
        self._table.put(users.registry_item(scope))
        self._table.batch_write(puts=side)
        self._index.record(partition, docs=len(items), length=sum(int(i["length"]) for i in items))
        self._table.batch_write(puts=items)
        self._delete_episodes(partition, session_prefix, old_ids)
        metering.count(items_stored=len(items))
        return len(items)

    def _delete_episodes(self, partition: str, session_prefix: str, episode_ids: Sequence[str]) -> None:
        if not episode_ids:
            return
        old = self._table.batch_get([(partition, records.episode_sk(i)) for i in episode_ids])
        keys: list[Key] = [(partition, i["sk"]) for i in old]
        for item in old:
            keys += self._index.posting_keys(partition, item["id"], item.get("tokens", []))
        keys += [(partition, session_prefix + i) for i in episode_ids]
        self._table.batch_write(deletes=keys)
        self._index.forget(partition, docs=len(old), length=sum(int(i.get("length", 0)) for i in old))

    def find(
        self, scope: Scope, *, session_id: str | None = None, query: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        """``episodes`` newest first; with ``query``, by token overlap (BM25, best first, with a score);
        within the response byte budget (``truncated`` when cut)."""
        episodes = self._find(scope, session_id=session_id, query=query, limit=limit)
        budget = Budget()
        fitted = []
        for episode in episodes:
            if not budget.take(episode):
                break
            fitted.append(episode)
        return {"episodes": fitted, "truncated": budget.truncated}

    def _find(self, scope: Scope, *, session_id: str | None, query: str | None, limit: int) -> list[dict[str, Any]]:
        if session_id is not None:
            validate_id(session_id, "session_id")
        partitions = [s.partition for s in scope.visible_scopes()]
        if query is not None and query.strip():
            ranking = self._index.search(partitions, tokenize(query))
            hits = ranking.hits
            found = {
                (i["pk"], i["id"]): i
                for i in self._table.batch_get([(h.partition, records.episode_sk(h.doc_id)) for h in hits])
            }
            out = []
            for hit in hits:
                item = found.get((hit.partition, hit.doc_id))
                if item is None or (session_id is not None and item.get("session_id") != session_id):
                    continue
                if not self._live(item):
                    continue
                out.append({**records.episode_out(item), "score": ranking.normalised(hit.score)})
                if len(out) >= limit:
                    break
            return out
        items: list[Item] = []
        for partition in partitions:
            if session_id is not None:
                prefix = records.episode_session_prefix(session_id)
                ids = [i["sk"][len(prefix) :] for i in query_all(self._table, partition, prefix)]
                items += self._table.batch_get([(partition, records.episode_sk(i)) for i in ids])
            else:
                items += self._table.query(partition, records.EPISODE, limit=limit, descending=True).items
        items = [i for i in items if self._live(i)]
        items.sort(key=lambda i: (i["timestamp"], i["id"]), reverse=True)
        return [records.episode_out(i) for i in items[:limit]]

    def _live(self, item: Item) -> bool:
        """Not past its ``expires_at`` (the table hides it from the next second on; this is to the ms)."""
        expires = item.get(EXPIRES_AT)
        return not isinstance(expires, str) or expires > format_timestamp(self._clock())
