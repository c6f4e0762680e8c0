"""Memory search: keyword, semantic and hybrid, each returning the ``top_k`` live entries that match.

Keyword search ranks by BM25 over the entries' own words. Semantic and hybrid search read both rankings'
candidates (:data:`CANDIDATES` deep, at least ``top_k``), rank them together (:mod:`agentmem.search.fusion`;
semantic: without the keyword evidence), score each hit's relevance (:mod:`agentmem.search.relevance`) and
read entries down that ranking until ``top_k`` are live and match the filter, widening the semantic
ranking when its hits are of gone or expired entries. An embedder or index failure answers with keyword
results, said so (``degraded``).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentmem.budget import Budget
from agentmem.clock import format_timestamp
from agentmem.embeddings.port import Embedder, EmbedderMisconfigured, embed_query
from agentmem.errors import InvalidInput, ModelShareUsed
from agentmem.keys import Scope
from agentmem.memory import filters, records
from agentmem.models.memory import SearchMode, StoredEntry
from agentmem.observability import logger
from agentmem.search import calibration, fusion, relevance
from agentmem.search.inverted_index import Hit, Ranking
from agentmem.search.tokenize import tokenize
from agentmem.stores.table import Item, Table
from agentmem.tenancy import metering
from agentmem.vectors.exact import ExactVectorIndex
from agentmem.vectors.port import VectorHit, VectorIndex

CANDIDATES = 50
"""How deep each ranking is read before they are combined (at least ``top_k``)."""
MAX_CANDIDATES = 10_000
"""How deep a semantic ranking is widened at most when its hits are of gone or expired entries."""
MAX_READ = 1_000
"""Entries one search reads at most to find ``top_k`` that match its filter (a filter that matches few
of many keyword hits answers with the matches among the first 1,000)."""
BRINGING = 4
"""A hybrid search's first hits that each bring the entry they continue right after them
(:func:`agentmem.search.context.continued`). Chosen on the LoCoMo dev conversations leaving each one out;
`make bench ONLY=locomo` (docs/search.md): hybrid recall@10 78.1 -> 80.4, temporal 90.4 -> 95.4."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    entries: list[StoredEntry]
    mode: SearchMode
    degraded: bool = False
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False
    """The best hits were cut at the response byte budget (see :mod:`agentmem.budget`)."""

    def to_json(self) -> dict[str, Any]:
        """The hits and the mode, and, for a degraded search, why (the REST route and the MCP tool answer this)."""
        payload: dict[str, Any] = {"entries": [e.to_json() for e in self.entries], "mode": self.mode}
        if self.degraded:
            payload["degraded"] = True
            payload["warnings"] = self.warnings
        return payload


class MemorySearch:
    def __init__(
        self, table: Table, clock: Callable[[], datetime], embedder: Embedder | None, vector_index: VectorIndex
    ) -> None:
        self._table = table
        self._clock = clock
        self._table_index = ExactVectorIndex(table)
        """The table's own index: keyword results when a derived index cannot answer."""
        self.embedder = embedder
        self.vector_index = vector_index

    @property
    def search_modes(self) -> list[SearchMode]:
        return ["keyword", "semantic", "hybrid"] if self.embedder is not None else ["keyword"]

    @property
    def default_mode(self) -> SearchMode:
        return "hybrid" if self.embedder is not None else "keyword"

    def search(
        self,
        scope: Scope,
        query: str,
        *,
        top_k: int = 10,
        min_score: float | None = None,
        mode: SearchMode | None = None,
        where: filters.Node | None = None,
    ) -> SearchResult:
        """The ``top_k`` best entries matching ``where``: the filter applies before ranking, so a search
        returns ``top_k`` entries whenever that many match (the semantic candidates are widened until
        they are enough or the scope is exhausted)."""
        mode = mode or self.default_mode
        if mode not in self.search_modes:
            raise InvalidInput(
                f"search mode {mode!r} is not available here; available: {', '.join(self.search_modes)}",
                code="search_mode_unavailable",
            )
        now = format_timestamp(self._clock())
        known: dict[str, Item] = {}
        warnings: list[str] = []
        selected: list[tuple[tuple[str, str, float], Item]] | None = None
        if mode != "keyword":
            try:
                selected = self._ranked(scope, query, mode, top_k, min_score, where, now, known, warnings)
            except (InvalidInput, ModelShareUsed):  # the request's own (a read budget, its tenant's share of the
                raise  # model this minute): no fallback answers it
            except Exception as error:  # embedder or index down: keyword matching still answers
                logger.warning("semantic search failed; keyword fallback", extra={"error": type(error).__name__})
                why = "is unavailable right now"
                if isinstance(error, EmbedderMisconfigured):  # the operator's to fix: say what
                    why = f"failed: {error.message}"
                warnings = [f"{mode} search {why}; these are keyword results"]
                mode = "keyword"
        if selected is None:
            hits = self._keyword(scope, query, now, warnings, where)
            selected = self._select(_at_least(hits, min_score), top_k, where, now, known)
        budget = Budget()
        entries = within(budget, [records.entry_from_item(item, hit[2]) for hit, item in selected])
        return SearchResult(
            entries=entries, mode=mode, degraded=bool(warnings), warnings=warnings, truncated=budget.truncated
        )

    def _keyword(
        self, scope: Scope, query: str, now: str, warnings: list[str], where: filters.Node | None
    ) -> list[tuple[str, str, float]]:
        """Keyword mode: BM25 over the entries' own words, each hit scored by its keyword coverage (an index
        that filters ranks only the entries matching ``where``). When a derived index (OpenSearch) cannot
        answer, the table's own index does (reading the scope, once per process), and the answer says it
        is degraded."""
        words = tokenize(query)
        try:
            ranking = self.vector_index.keyword(scope.visible_scopes(), words, now, where=where)
        except Exception as error:
            if not self.vector_index.derived:
                raise
            logger.warning(
                "keyword search failed; the table's own index answers", extra={"error": type(error).__name__}
            )
            if not warnings:
                warnings.append("the search index is unavailable right now; these results come from the table")
            ranking = self._table_index.keyword(scope.visible_scopes(), words, now, where=where)
        scores = relevance.keyword_scores([h.score / ranking.idf_total for h in ranking.hits])
        return [(h.partition, h.doc_id, score) for h, score in zip(ranking.hits, scores, strict=True)]

    def _ranked(
        self,
        scope: Scope,
        query: str,
        mode: SearchMode,
        top_k: int,
        min_score: float | None,
        where: filters.Node | None,
        now: str,
        known: dict[str, Item],
        warnings: list[str],
    ) -> list[tuple[tuple[str, str, float], Item]]:
        """Semantic or hybrid search: the candidates of both rankings fused (:mod:`agentmem.search.fusion`),
        scored (:mod:`agentmem.search.relevance`) and read down to ``top_k`` live matching entries."""
        assert self.embedder is not None
        self._foreign_models(scope, warnings)
        depth = max(CANDIDATES, top_k)
        hybrid = mode == "hybrid"
        # The query is embedded on another thread while the keyword index is read (the engine releases
        # the GIL): the two take about as long, and a search's latency is the longer of them.
        # (in this request's context: the tenant it is for pays the call from its share, and the meter counts it)
        vector_soon = _embedding_pool().submit(contextvars.copy_context().run, embed_query, self.embedder, query)
        metering.count_embedded([query])
        keyword = Ranking([])
        if hybrid:
            keyword = self.vector_index.keyword(
                scope.visible_scopes(), tokenize(query), now, contextual=True, where=where
            )
        keyword_hits = keyword.hits
        if where is not None and hybrid and not self.vector_index.filters_keyword:  # matching entries' evidence only
            ranked_keys = [(h.partition, h.doc_id, h.score) for h in keyword_hits]
            matching = {hit[1] for hit, _ in self._select(ranked_keys, depth, where, now, known)}
            keyword_hits = [h for h in keyword_hits if h.doc_id in matching]
        vector = vector_soon.result()
        standing = calibration.QueryStanding(self.embedder, vector)
        cues = fusion.QueryCues.of(query)
        live = filters.both(where, filters.live(now))
        while True:
            semantic = self.vector_index.search(scope.visible_scopes(), vector, depth, self.embedder.model_id, live)
            candidates = self._candidates(semantic, keyword_hits[:depth], known)
            ranked = fusion.rank(
                candidates,
                cues,
                keyword_spread=keyword.spread,
                cosine_spread=fusion.cosine_spread(self.embedder.model_id, [h.score for h in semantic]),
                keyword=hybrid,
            )
            order = [(r.candidate.partition, r.candidate.entry_id, r.rank_score) for r in ranked]
            brought: dict[str, str] = {}
            if hybrid:
                order, brought = self._bring_continued(order, where, now, known)
            chosen = self._select(order, top_k, where, now, known)
            evidence = {
                r.candidate.entry_id: (
                    r.candidate.cosine,
                    r.candidate.bm25 / keyword.idf_total if keyword.idf_total > 0 else 0.0,
                )
                for r in ranked
            }
            # Each hit's relevance from its own evidence, the query stood toward the script it is written in
            # and against its own level over the user's memories; an entry a hit brought, from that hit's (it
            # is there for that hit: just below it).
            own = relevance.OwnLevel.of(h.score for h in semantic)
            scores = relevance.in_ranking_order(
                relevance.hit_logit(
                    self.embedder.model_id,
                    standing.toward(_script(item)),
                    *evidence[brought.get(hit[1], hit[1])],
                    own,
                )
                for hit, item in chosen
            )
            selected = [
                ((partition, entry_id, score), item)
                for ((partition, entry_id, _), item), score in zip(chosen, scores, strict=True)
                if min_score is None or score >= min_score
            ]
            gone = any(h.entry_id not in known for h in semantic)  # read by _select, or not there any more
            below = bool(scores) and min_score is not None and scores[-1] < min_score
            if len(chosen) >= top_k or len(semantic) < depth or depth >= MAX_CANDIDATES or below or not gone:
                return selected
            depth = min(depth * 4, MAX_CANDIDATES)  # hits of gone entries (an index lagging the table): deeper

    def _bring_continued(
        self,
        order: Sequence[tuple[str, str, float]],
        where: filters.Node | None,
        now: str,
        known: dict[str, Item],
    ) -> tuple[list[tuple[str, str, float]], dict[str, str]]:
        """The ranking with the entry each of its first :data:`BRINGING` live matching hits continues put
        right after that hit (unless it ranks above it already), and which hit brought which. The first hits
        are read here (into ``known``, so selecting them reads nothing again)."""
        first = [(partition, records.entry_sk(i)) for partition, i, _ in order[:BRINGING] if i not in known]
        known.update((item["id"], item) for item in self._table.batch_get(first))
        placed: list[tuple[str, str, float]] = []
        brought: dict[str, str] = {}
        seen: set[str] = set()
        for position, (partition, entry_id, rank_score) in enumerate(order):
            if entry_id in seen:
                continue
            placed.append((partition, entry_id, rank_score))
            seen.add(entry_id)
            item = known.get(entry_id) if position < BRINGING else None
            if item is None or not records.matches(item, where, now):
                continue
            continued = item.get(records.CONTINUES)
            if isinstance(continued, str) and continued not in seen:
                placed.append((partition, continued, rank_score))
                seen.add(continued)
                brought[continued] = entry_id
        return placed, brought

    def _candidates(
        self, semantic: Sequence[VectorHit], keyword: Sequence[Hit], known: dict[str, Item]
    ) -> list[fusion.Candidate]:
        """Every entry either ranking found, with its evidence; the entries only keyword search found whose
        author and timestamp the index did not give are read (into ``known``) for them."""
        bm25 = {h.doc_id: h.score for h in keyword}
        candidates = {
            h.entry_id: fusion.Candidate(
                h.scope.partition, h.entry_id, h.score, bm25.get(h.entry_id, 0.0), h.author, h.timestamp, h.told
            )
            for h in semantic
        }
        unread = [
            (h.partition, records.entry_sk(h.doc_id))
            for h in keyword
            if not h.described and h.doc_id not in candidates and h.doc_id not in known
        ]
        known.update((item["id"], item) for item in self._table.batch_get(unread))
        for h in keyword:
            if h.doc_id in candidates:
                continue
            if h.described:
                candidates[h.doc_id] = fusion.Candidate(
                    h.partition, h.doc_id, None, h.score, h.author, h.timestamp, h.told
                )
            elif (item := known.get(h.doc_id)) is not None:
                candidates[h.doc_id] = fusion.Candidate(
                    h.partition,
                    h.doc_id,
                    None,
                    h.score,
                    item.get("author"),
                    item.get("timestamp"),
                    item.get(records.TOLD),
                )
        return list(candidates.values())

    def _foreign_models(self, scope: Scope, warnings: list[str]) -> None:
        assert self.embedder is not None
        foreign = self.vector_index.other_models(scope.visible_scopes(), self.embedder.model_id)
        if foreign:
            warnings.append(
                f"entries embedded by another model ({', '.join(foreign)}) are left out of semantic ranking; "
                "run `agentmem reindex --re-embed` to embed them with the current model"
            )

    def _select(
        self,
        ranked: Sequence[tuple[str, str, float]],
        limit: int,
        where: filters.Node | None,
        now: str,
        known: dict[str, Item],
    ) -> list[tuple[tuple[str, str, float], Item]]:
        """The first ``limit`` ranked hits whose entry exists, is live and matches ``where``, with the entry.

        Entries are read in growing windows (``known`` keeps those read already), so a selective filter
        reads as far down the ranking as it must, and never more than :data:`MAX_READ` entries."""
        found: list[tuple[tuple[str, str, float], Item]] = []
        position = 0
        window = max(limit, 10)
        end = min(len(ranked), MAX_READ)
        while len(found) < limit and position < end:
            chunk = ranked[position : min(position + window, end)]
            position += len(chunk)
            missing = [(p, records.entry_sk(i)) for p, i, _ in chunk if i not in known]
            known.update((item["id"], item) for item in self._table.batch_get(missing))
            for hit in chunk:
                item = known.get(hit[1])
                if item is not None and len(found) < limit and records.matches(item, where, now):
                    found.append((hit, item))
            window = min(window * 2, 100)
        return found


@functools.cache
def _embedding_pool() -> ThreadPoolExecutor:
    """One thread per process that embeds search queries (built on the first semantic search)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-query")


def _script(item: Item) -> str:
    """The script an entry is written in (:func:`calibration.script_of`); an ASCII entry is Latin, known
    without parsing it."""
    content = item.get("content")
    if isinstance(content, str) and content.isascii():
        return "latin"
    return calibration.script_of(records.entry_text(item))


def _at_least(scored: Sequence[tuple[str, str, float]], min_score: float | None) -> Sequence[tuple[str, str, float]]:
    return scored if min_score is None else [h for h in scored if h[2] >= min_score]


def within(budget: Budget, entries: Sequence[StoredEntry]) -> list[StoredEntry]:
    """The leading entries that fit the response budget."""
    kept: list[StoredEntry] = []
    for entry in entries:
        if not budget.take(entry.to_json()):
            break
        kept.append(entry)
    return kept
