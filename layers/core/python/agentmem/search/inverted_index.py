"""An inverted index kept in the Table, so keyword search reads only what matches.

For every document (a memory entry, a graph entity, an episode) the index holds one posting item per
distinct token, ``<ns>T#<token>#<doc id>`` with the token's frequency and the document's length, in
the document's own partition. A per-partition statistics item holds the document count and total
length that BM25 needs. A search reads one posting range per query token: its cost grows with the
number of matches, never with the size of the partition.

A memory entry may also be indexed under the words of the entries said just before it
(:mod:`agentmem.search.context`): such a posting holds ``cf`` (the word's frequency in the context) beside
``tf`` (in the entry itself, 0 for a context-only word), and ``dc``, the entry's contextual length. Plain
BM25 (keyword search, delete-by-query) reads ``tf`` only; contextual BM25 (hybrid search) counts an own
word :data:`~agentmem.search.context.OWN_WEIGHT` times a context word.

Costs are capped (docs/search.md): a document is indexed under at most :data:`MAX_TERMS_PER_DOCUMENT`
distinct tokens (its most frequent ones), a write request indexes at most :data:`TERMS_PER_REQUEST`
postings in all (:func:`terms_per_document` shares them among its documents), and a query reads the
postings of at most :data:`MAX_QUERY_TERMS` distinct tokens.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agentmem.errors import ConditionFailed
from agentmem.keys import escape
from agentmem.search.context import OWN_WEIGHT
from agentmem.stores.table import Condition, Item, Key, Table, query_all

K1 = 1.2
B = 0.75
MAX_TERMS_PER_DOCUMENT = 1000
"""Distinct tokens one document is indexed under (64 KiB of CJK text holds ~42,000)."""
TERMS_PER_REQUEST = 20_000
"""Posting items one write request may create: 500 entries get 40 distinct tokens each."""
MAX_QUERY_TERMS = 32
"""Distinct query tokens whose postings a search reads (the first ones); later ones are ignored."""


def terms_per_document(documents: int) -> int:
    """The per-document cap of a write of ``documents`` documents: ``TERMS_PER_REQUEST`` shared out."""
    return max(1, min(MAX_TERMS_PER_DOCUMENT, TERMS_PER_REQUEST // max(documents, 1)))


def index_terms(tokens: Sequence[str], limit: int = MAX_TERMS_PER_DOCUMENT) -> dict[str, int]:
    """The (token, frequency) pairs a document is indexed under: its ``limit`` most frequent distinct
    tokens, ties in order of first appearance."""
    counts = Counter(tokens)
    if len(counts) <= limit:
        return dict(counts)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:limit])


def query_terms(tokens: Iterable[str]) -> list[str]:
    """The distinct tokens of a query that are looked up: the first ``MAX_QUERY_TERMS``."""
    return list(dict.fromkeys(tokens))[:MAX_QUERY_TERMS]


@dataclass(frozen=True, slots=True)
class Hit:
    partition: str
    doc_id: str
    score: float
    """The BM25 score, uncapped."""
    author: str | None = None
    timestamp: str | None = None
    described: bool = False
    """True when the index knew the entry's author, timestamp and told periods (a search need not read the
    entry for them)."""
    told: str | None = None


@dataclass(frozen=True, slots=True)
class Ranking:
    """BM25 hits of one query, best first (ties: newer ids first), with what puts their scores in scale."""

    hits: list[Hit]
    idf_total: float = 0.0
    """The sum of the query tokens' IDFs: a hit holding every query token once at average length scores about it."""
    spread: float = 0.0
    """The standard deviation of the score over every document of the partitions (those that match nothing
    score 0): how far a score stands out in this collection, for this query."""

    def normalised(self, score: float) -> float:
        """A score in [0, 1]: 1 for a hit holding every query token once (capped there)."""
        return min(1.0, round(score / self.idf_total, 6)) if self.idf_total > 0 else 0.0


class InvertedIndex:
    def __init__(self, table: Table, namespace: str) -> None:
        self._table = table
        self._ns = namespace

    @property
    def stats_sk(self) -> str:
        return f"{self._ns}STATS"

    def _token_prefix(self, token: str) -> str:
        return f"{self._ns}T#{escape(token)}#"

    def postings(
        self,
        partition: str,
        doc_id: str,
        terms: Mapping[str, int],
        length: int,
        context: Mapping[str, int] | None = None,
        context_length: int = 0,
    ) -> list[Item]:
        """The posting items for one document of ``length`` tokens (write them with the document); with
        ``context``, also for the context words it is found by (``context_length`` tokens)."""
        if not context and not context_length:
            return [
                {"pk": partition, "sk": self._token_prefix(token) + doc_id, "tf": tf, "dl": length}
                for token, tf in terms.items()
            ]
        contextual = OWN_WEIGHT * length + context_length
        items = [
            {"pk": partition, "sk": self._token_prefix(token) + doc_id, "tf": tf, "dl": length, "dc": contextual}
            for token, tf in terms.items()
        ]
        items += [
            {
                "pk": partition,
                "sk": self._token_prefix(token) + doc_id,
                "tf": 0,
                "cf": cf,
                "dl": length,
                "dc": contextual,
            }
            for token, cf in (context or {}).items()
            if token not in terms
        ]
        return items

    def posting_keys(self, partition: str, doc_id: str, tokens: Iterable[str]) -> list[Key]:
        return [(partition, self._token_prefix(token) + doc_id) for token in set(tokens)]

    def record(self, partition: str, *, docs: int, length: int, context_length: int = 0) -> None:
        """Add to the statistics of a partition after adding documents."""
        if docs or length:
            deltas = {"docs": docs, "length": length, "version": 1}
            if context_length:
                deltas["context_length"] = context_length
            self._table.increment(partition, self.stats_sk, deltas)

    def forget(self, partition: str, *, docs: int, length: int, context_length: int = 0) -> None:
        """Take from the statistics after removing documents. Never creates them: statistics that are gone
        (an erasure swept the partition meanwhile) stay gone."""
        if not (docs or length):
            return
        deltas = {"docs": -docs, "length": -length, "version": 1}
        if context_length:
            deltas["context_length"] = -context_length
        with contextlib.suppress(ConditionFailed):
            self._table.increment(partition, self.stats_sk, deltas, Condition(exists=True))

    def version(self, partition: str) -> int:
        item = self._table.get(partition, self.stats_sk)
        return int(item.get("version", 0)) if item else 0

    def documents_with_all(self, partition: str, tokens: Iterable[str]) -> set[str]:
        """Ids of the documents of one partition that hold every token (in their own words)."""
        result: set[str] | None = None
        for token in dict.fromkeys(tokens):
            ids = {
                item["sk"].rsplit("#", 1)[1]
                for item in query_all(self._table, partition, self._token_prefix(token))
                if int(item.get("tf", 0)) > 0
            }
            result = ids if result is None else result & ids
            if not result:
                return set()
        return result or set()

    def search(self, partitions: Sequence[str], tokens: Sequence[str], *, contextual: bool = False) -> Ranking:
        """Documents of ``partitions`` matching any token, by BM25 (uncapped), best first.

        ``contextual`` counts the words of a memory entry's context too (at a lower weight than its own);
        otherwise only a document's own words match.
        """
        query = query_terms(tokens)
        if not query:
            return Ranking([])
        docs = 0
        length = 0
        context_length = 0
        for item in self._table.batch_get([(p, self.stats_sk) for p in partitions]):
            docs += max(0, int(item.get("docs", 0)))
            length += max(0, int(item.get("length", 0)))
            context_length += max(0, int(item.get("context_length", 0)))
        postings: dict[str, list[Item]] = {}
        for token in query:
            found = [item for p in partitions for item in query_all(self._table, p, self._token_prefix(token))]
            postings[token] = found if contextual else [item for item in found if int(item.get("tf", 0)) > 0]
        docs = max(docs, max((len(v) for v in postings.values()), default=0), 1)
        if contextual:
            average_length = max((OWN_WEIGHT * length + context_length) / docs, 1.0)
        else:
            average_length = max(length / docs, 1.0)
        scores: dict[tuple[str, str], float] = {}
        idf_total = 0.0
        for token in query:
            matches = postings[token]
            df = len(matches)
            idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
            idf_total += idf
            for item in matches:
                if contextual:
                    tf = OWN_WEIGHT * int(item["tf"]) + int(item.get("cf", 0))
                    dl = int(item.get("dc", OWN_WEIGHT * int(item["dl"])))
                else:
                    tf = int(item["tf"])
                    dl = int(item["dl"])
                norm = 1 - B + B * dl / average_length
                key = (item["pk"], item["sk"].rsplit("#", 1)[1])
                scores[key] = scores.get(key, 0.0) + idf * tf * (K1 + 1) / (tf + K1 * norm)
        if idf_total <= 0:
            return Ranking([])
        hits = [Hit(p, d, s) for (p, d), s in scores.items()]
        hits.sort(key=lambda h: (h.score, h.doc_id), reverse=True)  # ties: newer (larger) ids first
        mean = sum(scores.values()) / docs
        variance = max(0.0, sum(s * s for s in scores.values()) / docs - mean * mean)
        return Ranking(hits, idf_total, math.sqrt(variance))
