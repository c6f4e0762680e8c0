"""What the OpenSearch adapter (agentmem/vectors/opensearch.py) sends: the index's mapping, the documents it
writes for a record, and the filters and queries of its searches. Pure functions over the port's records and
the filter language: no client, nothing on the network, so each is tested on its own and the adapter holds
only what talks to the collection.

One index holds every tenant's vectors. Each document carries keyword fields ``app``, ``user``, ``project``
(``""`` for the global scope), ``session`` and ``model``; every search puts the tenant, user, visible projects
and model into the k-NN query's ``filter``, so one tenant's query never ranks another tenant's vectors.
Document ids are a hash of (partition, entry id): stable, so an upsert replaces.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from agentmem.keys import Scope, UserRef
from agentmem.memory import records
from agentmem.memory.filters import (
    EXPIRES_AT,
    And,
    Exists,
    Field,
    In,
    Node,
    Not,
    Or,
    Scalar,
    live,
)
from agentmem.search.context import OWN_WEIGHT
from agentmem.search.partition import PartitionIndex
from agentmem.search.stemming import stemmed_terms
from agentmem.stores.table import Item
from agentmem.vectors.exact import nearest_hits
from agentmem.vectors.port import VectorHit, VectorRecord

GLOBAL_PROJECT = ""
DOCUMENT_KEY = ("app", "user", "project", "entry_id")
"""The fields that identify one document (its id is their hash): the listing's sort key."""


def document_id(scope: Scope, entry_id: str) -> str:
    return hashlib.sha256(f"{scope.partition}\x00{entry_id}".encode()).hexdigest()


ENGINES = ("lucene", "faiss")


def index_body(dimension: int, *, engine: str, m: int = 16, ef_construction: int = 128) -> dict[str, Any]:
    """Settings and mappings of the vector index: HNSW, cosine similarity, keyword filter fields.

    The engine is always named: OpenSearch's default (faiss in 2.19, nmslib on some Serverless
    collections) would otherwise decide, and filters fail on nmslib, faiss fails where no native library
    is loaded (the local node)."""
    if engine not in ENGINES:
        raise ValueError("engine must be lucene or faiss (both support efficient k-NN filtering)")
    keyword = {"type": "keyword"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "app": keyword,
                "user": keyword,
                "project": keyword,
                "session": keyword,
                "entry_id": keyword,
                "model": keyword,
                **FILTER_FIELDS,
                **WORD_FIELDS,
                **RANKING_FIELDS,
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "space_type": "cosinesimil",
                    "method": {
                        "name": "hnsw",
                        "engine": engine,
                        "parameters": {"m": m, "ef_construction": ef_construction},
                    },
                },
            },
        },
    }


FILTER_FIELDS: dict[str, Any] = {
    name: {"type": "keyword"}
    for name in ("author", "timestamp", "expires_at", "meta_keys", "meta_s", "meta_l", "meta_n", "meta_b")
}
"""What a filter reads, beside the vector. Metadata is flattened into a fixed set of keyword fields (no
mapping per key, however many keys the tenants use): ``meta_keys`` holds the keys, and ``meta_s``
(strings), ``meta_l`` (elements of lists), ``meta_n`` (numbers) and ``meta_b`` (booleans) hold
``key=value`` terms, so each type compares only with its own. Keyword order is UTF-8 byte order, which is
code point order; numbers are written in an order-preserving hex form of their double (:func:`sortable`).
A key never holds ``=`` or ``>``, so the terms of one key are exactly those in ``["key=", "key>")``."""
WORD_FIELDS: dict[str, Any] = {
    "own_words": {"type": "text", "analyzer": "whitespace"},
    "context_words": {"type": "text", "analyzer": "whitespace"},
    "terms": {"type": "keyword", "index": False, "doc_values": False},
    "context_terms": {"type": "keyword", "index": False, "doc_values": False},
    "length": {"type": "integer"},
    "contextual_length": {"type": "integer"},
}
"""What keyword search reads: each word of the entry as often as it occurs (``own_words``, and the words of
the entries before it in ``context_words``: agentmem/search/context.py), by its stem
(agentmem/search/stemming.py), to find the entries that hold a word, best first by that word; its counts
as stored on the entry (``terms``, ``context_terms``) and its lengths, from which our BM25 is computed
(the same as the table's own index: agentmem/search/partition.py)."""
RANKING_FIELDS: dict[str, Any] = {"told": {"type": "keyword", "index": False, "doc_values": False}}
"""What ranking reads of a hit beside its author and timestamp: the periods it tells of
(:data:`agentmem.memory.records.TOLD`), returned with the hit, never searched."""
_BUILTIN_FIELDS = {"author": "author", "session_id": "session", "timestamp": "timestamp", EXPIRES_AT: "expires_at"}
_NOTHING: dict[str, Any] = {"bool": {"must_not": [{"match_all": {}}]}}


def sortable(number: float) -> str:
    """A double as 16 hex digits that sort like the numbers (sign bit flipped; negatives inverted)."""
    bits = int.from_bytes(struct.pack(">d", float(number) + 0.0), "big")  # + 0.0: -0.0 becomes 0.0
    return f"{bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | 1 << 63:016x}"


def filter_fields(record: VectorRecord) -> dict[str, Any]:
    """The filter fields of one entry's document."""
    terms: dict[str, list[str]] = {"meta_s": [], "meta_l": [], "meta_n": [], "meta_b": []}
    for key, value in record.metadata.items():
        if isinstance(value, bool):
            terms["meta_b"].append(f"{key}={'true' if value else 'false'}")
        elif isinstance(value, int | float):
            terms["meta_n"].append(f"{key}={sortable(value)}")
        elif isinstance(value, str):
            terms["meta_s"].append(f"{key}={value}")
        elif isinstance(value, list):
            terms["meta_l"].extend(f"{key}={v}" for v in value)
    return {
        "author": record.author,
        "timestamp": record.timestamp,
        "expires_at": record.expires_at,
        "meta_keys": sorted(record.metadata),
        **terms,
    }


def _term(field: str, value: str) -> dict[str, Any]:
    return {"term": {field: value}}


def _metadata_term(key: str, value: Scalar) -> tuple[str, str]:
    if isinstance(value, bool):
        return "meta_b", f"{key}={'true' if value else 'false'}"
    if isinstance(value, int | float):
        return "meta_n", f"{key}={sortable(value)}"
    return "meta_s", f"{key}={value}"


def _equals(field: Field, value: Scalar) -> dict[str, Any]:
    if field.builtin:
        return _term(_BUILTIN_FIELDS[field.name], value) if isinstance(value, str) else _NOTHING
    kind, term = _metadata_term(field.name, value)
    if kind != "meta_s":
        return _term(kind, term)
    return {"bool": {"should": [_term("meta_s", term), _term("meta_l", term)], "minimum_should_match": 1}}


_RANGE = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def _ordered(field: Field, op: str, value: Scalar) -> dict[str, Any]:
    if isinstance(value, bool) or (field.builtin and not isinstance(value, str)):
        return _NOTHING
    if field.builtin:
        return {"range": {_BUILTIN_FIELDS[field.name]: {_RANGE[op]: value}}}
    kind, term = _metadata_term(field.name, value)
    bounds = {_RANGE[op]: term}
    if op in ("$gt", "$gte"):
        bounds["lt"] = f"{field.name}>"
    else:
        bounds["gte"] = f"{field.name}="
    return {"range": {kind: bounds}}


def filter_query(node: Node) -> dict[str, Any]:
    """The OpenSearch query of a filter tree (:mod:`agentmem.memory.filters`), for the k-NN ``filter``."""
    if isinstance(node, And):
        return {"bool": {"filter": [filter_query(p) for p in node.parts]}}
    if isinstance(node, Or):
        return {"bool": {"should": [filter_query(p) for p in node.parts], "minimum_should_match": 1}}
    if isinstance(node, Not):
        return {"bool": {"must_not": [filter_query(node.part)]}}
    if isinstance(node, Exists):
        field = _BUILTIN_FIELDS[node.field.name] if node.field.builtin else None
        present = {"exists": {"field": field}} if field else _term("meta_keys", node.field.name)
        return present if node.present else {"bool": {"must_not": [present]}}
    if isinstance(node, In):
        either = {"bool": {"should": [_equals(node.field, v) for v in node.values], "minimum_should_match": 1}}
        return {"bool": {"must_not": [either]}} if node.negate else either
    if node.op in ("$eq", "$ne"):
        equal = _equals(node.field, node.value)
        return equal if node.op == "$eq" else {"bool": {"must_not": [equal]}}
    return _ordered(node.field, node.op, node.value)


def scope_filter(scopes: Sequence[Scope], model_id: str | None = None) -> dict[str, Any]:
    """The bool filter of one user's scopes (all scopes of one search share app and user)."""
    first = scopes[0]
    if any(s.app != first.app or s.user != first.user for s in scopes):
        raise ValueError("one search covers exactly one user")
    clauses: list[dict[str, Any]] = [
        {"term": {"app": first.app}},
        {"term": {"user": first.user}},
        {"terms": {"project": sorted({s.project_id or GLOBAL_PROJECT for s in scopes})}},
    ]
    if model_id is not None:
        clauses.append({"term": {"model": model_id}})
    return {"bool": {"filter": clauses}}


def user_filter(user: UserRef) -> dict[str, Any]:
    return {"bool": {"filter": [{"term": {"app": user.app}}, {"term": {"user": user.user}}]}}


KEYWORD_DEPTH = 500
"""The entries read per query word, best first by that word (OpenSearch's own BM25 of it): an entry
beyond them is not scored for that word. Their count (the word's document frequency) is exact."""
_KEYWORD_SOURCE = ["project", "entry_id", "author", "timestamp", "expires_at", *WORD_FIELDS, *RANKING_FIELDS]


def word_fields(record: VectorRecord) -> dict[str, Any]:
    """The keyword fields of one entry's document: its words by their stems to find it by, its words as
    written to rank it by."""
    own, around = stemmed_terms(record.terms, record.context_terms)
    return {
        "own_words": " ".join(word for word, count in own.items() for _ in range(count)),
        "context_words": " ".join(word for word, count in around.items() for _ in range(count)),
        "terms": records.encoded_terms(record.terms),
        "context_terms": records.encoded_terms(record.context_terms),
        "length": record.length,
        "contextual_length": OWN_WEIGHT * record.length + record.context_length,
    }


def keyword_queries(
    scopes: Sequence[Scope], forms: Mapping[str, Sequence[str]], now: str, *, contextual: bool
) -> list[dict[str, Any]]:
    """The ``_msearch`` lines of a keyword search: per query stem, the best :data:`KEYWORD_DEPTH` live
    entries holding it (and how many hold it); then the scopes' live entries counted, with their total
    length. A stem is asked for with the query's words that gave it (``forms``:
    :func:`~agentmem.search.stemming.written_forms`), so documents indexed before stemming, which hold
    words as written, are still found by those words until ``agentmem reindex`` rewrites them."""
    restrict = scope_filter(scopes)
    restrict["bool"]["filter"].append(filter_query(live(now)))
    lines: list[dict[str, Any]] = []
    for alternatives in forms.values():
        word = " ".join(alternatives)
        own = {"match": {"own_words": {"query": word, "boost": OWN_WEIGHT}}}
        found = (
            {"bool": {"should": [own, {"match": {"context_words": word}}], "minimum_should_match": 1}}
            if contextual
            else own
        )
        query = {"bool": {"filter": restrict["bool"]["filter"], "must": [found]}}
        lines += [{}, {"size": KEYWORD_DEPTH, "track_total_hits": True, "_source": _KEYWORD_SOURCE, "query": query}]
    field = "contextual_length" if contextual else "length"
    totals = {"size": 0, "track_total_hits": True, "query": restrict, "aggs": {"length": {"sum": {"field": field}}}}
    return [*lines, {}, totals]


def entry_of(scope: Scope, source: dict[str, Any]) -> dict[str, Any]:
    """A document's keyword fields as the entry item they came from (what PartitionIndex reads)."""
    length = int(source.get("length") or 0)
    return {
        "pk": scope.partition,
        "sk": records.entry_sk(str(source["entry_id"])),
        "id": str(source["entry_id"]),
        "author": source.get("author"),
        "timestamp": source.get("timestamp"),
        records.EXPIRES_AT: source.get("expires_at"),
        records.TOLD: source.get("told"),
        records.TERMS: source.get("terms") or "",
        records.CONTEXT_TERMS: source.get("context_terms") or "",
        "length": length,
        records.CONTEXT_LENGTH: int(source.get("contextual_length") or 0) - OWN_WEIGHT * length,
    }


KNN_CANDIDATES = 100
"""The graph search collects at least this many candidates (``k``); the response keeps the best ``top_k``
(``size``). On the bench's 10,000 random vectors filtered to one user, recall@10 against exact search
is 0.93 with k = 10 and 1.000 with k = 100 (`make bench ONLY=ann`). ``k`` is the one knob lucene, faiss
and Serverless all accept in the query; lucene searches its graph with a queue of k (its ef_search)."""


def knn_query_body(
    scopes: Sequence[Scope], vector: Sequence[float], top_k: int, model_id: str, where: Node | None = None
) -> dict[str, Any]:
    """A k-NN query with efficient filtering, as documented for the lucene and faiss engines: the scopes,
    the model and the caller's filter, all applied while the graph is searched."""
    restrict = scope_filter(scopes, model_id)
    if where is not None:
        restrict["bool"]["filter"].append(filter_query(where))
    return {
        "size": top_k,
        "_source": ["app", "user", "project", "entry_id", "author", "timestamp", *RANKING_FIELDS],
        "query": {
            "knn": {
                "vector": {
                    "vector": [float(v) for v in vector],
                    "k": max(top_k, KNN_CANDIDATES),
                    "filter": restrict,
                }
            }
        },
    }


def nearest_of(
    fresh: dict[Scope, list[Item]], vector: Sequence[float], top_k: int, model_id: str, where: Node | None
) -> list[VectorHit]:
    """The ``top_k`` of ``fresh`` entries (read from the table) nearest ``vector``, matching ``where``."""
    if not fresh:
        return []
    indexes = ((scope, PartitionIndex.of(None, 0, items)) for scope, items in fresh.items())
    return nearest_hits(indexes, vector, top_k, model_id, where)


def cosine_from_score(score: float) -> float:
    """For ``cosinesimil`` OpenSearch scores ``(1 + cos) / 2``; the port speaks cosine clipped to [0, 1]."""
    return max(0.0, min(1.0, 2.0 * score - 1.0))
