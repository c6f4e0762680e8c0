"""An inverted index kept in the Table, so keyword search reads only what matches.

For every document (a memory entry, a graph entity, an episode) the index holds one posting item per
distinct token, ``<ns>T#<token>#<doc id>`` with the token's frequency and the document's length, in
the document's own partition. A per-partition statistics item holds the document count and total
length that BM25 needs. A search reads one posting range per query token: its cost grows with the
number of matches, never with the size of the partition.

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


class InvertedIndex:
    def __init__(self, table: Table, namespace: str) -> None:
        self._table = table
        self._ns = namespace

    @property
    def stats_sk(self) -> str:
        return f"{self._ns}STATS"

    def _token_prefix(self, token: str) -> str:
        return f"{self._ns}T#{escape(token)}#"

    def postings(self, partition: str, doc_id: str, terms: Mapping[str, int], length: int) -> list[Item]:
        """The posting items for one document of ``length`` tokens (write them with the document)."""
        return [
            {"pk": partition, "sk": self._token_prefix(token) + doc_id, "tf": tf, "dl": length}
            for token, tf in terms.items()
        ]

    def posting_keys(self, partition: str, doc_id: str, tokens: Iterable[str]) -> list[Key]:
        return [(partition, self._token_prefix(token) + doc_id) for token in set(tokens)]

    def record(self, partition: str, *, docs: int, length: int) -> None:
        """Add to the statistics of a partition after adding documents."""
        if docs or length:
            self._table.increment(partition, self.stats_sk, {"docs": docs, "length": length, "version": 1})

    def forget(self, partition: str, *, docs: int, length: int) -> None:
        """Take from the statistics after removing documents. Never creates them: statistics that are gone
        (an erasure swept the partition meanwhile) stay gone."""
        if not (docs or length):
            return
        deltas = {"docs": -docs, "length": -length, "version": 1}
        with contextlib.suppress(ConditionFailed):
            self._table.increment(partition, self.stats_sk, deltas, Condition(exists=True))

    def version(self, partition: str) -> int:
        item = self._table.get(partition, self.stats_sk)
        return int(item.get("version", 0)) if item else 0

    def documents_with_all(self, partition: str, tokens: Iterable[str]) -> set[str]:
        """Ids of the documents of one partition that hold every token."""
        result: set[str] | None = None
        for token in dict.fromkeys(tokens):
            ids = {
                item["sk"].rsplit("#", 1)[1] for item in query_all(self._table, partition, self._token_prefix(token))
            }
            result = ids if result is None else result & ids
            if not result:
                return set()
        return result or set()

    def search(self, partitions: Sequence[str], tokens: Sequence[str]) -> list[Hit]:
        """Documents of ``partitions`` matching any token, BM25-ranked, scores normalised to [0, 1].

        The score divides the BM25 sum by the sum of the query tokens' IDFs, so a document that holds
        every query token once, at average length, scores 1; the score is capped at 1.
        """
        query = query_terms(tokens)
        if not query:
            return []
        docs = 0
        length = 0
        for item in self._table.batch_get([(p, self.stats_sk) for p in partitions]):
            docs += max(0, int(item.get("docs", 0)))
            length += max(0, int(item.get("length", 0)))
        postings: dict[str, list[Item]] = {}
        for token in query:
            postings[token] = [
                item for p in partitions for item in query_all(self._table, p, self._token_prefix(token))
            ]
        docs = max(docs, max((len(v) for v in postings.values()), default=0), 1)
        average_length = max(length / docs, 1.0)
        scores: dict[tuple[str, str], float] = {}
        idf_total = 0.0
        for token in query:
            matches = postings[token]
            df = len(matches)
            idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
            idf_total += idf
            for item in matches:
                tf = int(item["tf"])
                norm = 1 - B + B * int(item["dl"]) / average_length
                key = (item["pk"], item["sk"].rsplit("#", 1)[1])
                scores[key] = scores.get(key, 0.0) + idf * tf * (K1 + 1) / (tf + K1 * norm)
        if idf_total <= 0:
            return []
        hits = [Hit(p, d, min(1.0, round(s / idf_total, 6))) for (p, d), s in scores.items()]
        hits.sort(key=lambda h: (h.score, h.doc_id), reverse=True)  # ties: newer (larger) ids first
        return hits
