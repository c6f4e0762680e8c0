"""OpenSearch k-NN adapter (opensearch-py imported lazily; the client is built on first use).

One index holds every tenant's vectors; the mapping, the documents and the queries are built in
agentmem/vectors/opensearch_queries.py. Every search puts the tenant, user, visible projects and model into
the k-NN query's ``filter`` (efficient filtering, lucene or faiss HNSW), so the filter is applied while the
graph is searched and one tenant's query never ranks another tenant's vectors. This module holds what talks
to the collection: administration, bulk writes, searches, and the overlay of the writes a Serverless
collection has not shown yet.

Works with OpenSearch Service (SigV4 service ``es``), OpenSearch Serverless (``aoss``, faiss only) and
the local node of ``make opensearch`` (lucene only); index creation is explicit (``agentmem
create-index``, engine from MEMORY_OPENSEARCH_ENGINE), never at import or per request. Tested on a real
OpenSearch 2.19.1 node with the k-NN plugin (tests/integration/test_opensearch_index.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentmem.errors import InvalidInput, Unavailable
from agentmem.keys import Scope, UserRef
from agentmem.memory import records
from agentmem.memory.filters import (
    Node,
    live,
)
from agentmem.observability import logger
from agentmem.search import changes
from agentmem.search.inverted_index import Ranking
from agentmem.search.partition import Collection, PartitionIndex, bm25
from agentmem.search.stemming import written_forms
from agentmem.stores.table import Item, Table
from agentmem.vectors.opensearch_queries import (
    DOCUMENT_KEY,
    ENGINES,
    FILTER_FIELDS,
    GLOBAL_PROJECT,
    RANKING_FIELDS,
    WORD_FIELDS,
    cosine_from_score,
    document_id,
    entry_of,
    filter_fields,
    filter_query,
    index_body,
    keyword_queries,
    knn_query_body,
    nearest_of,
    scope_filter,
    user_filter,
    word_fields,
)
from agentmem.vectors.port import VectorHit, VectorRecord

_BULK_CHUNK = 500


class _ToldUnmapped(Exception):
    """Documents rejected only because the index's strict mapping has no ``told`` field."""


def _refused(result: Mapping[str, Any]) -> bool:
    """A bulk action that did not take effect for a reason other than a delete finding nothing."""
    return bool(result.get("status", 200) >= 300 and result.get("status") != 404)


def _unmapped_told(result: Mapping[str, Any]) -> bool:
    error = result.get("error")
    return (
        isinstance(error, dict)
        and error.get("type") == "strict_dynamic_mapping_exception"
        and "[told]" in str(error.get("reason", ""))
    )


SERVERLESS_REFRESH_SECONDS = 60
"""OpenSearch Serverless makes writes and deletes searchable on its own schedule, about once a minute."""


class OpenSearchVectorIndex:
    name = "opensearch"
    derived = True
    """A copy of the table's vectors: a rebuild may drop and rewrite it."""
    filters_keyword = False
    max_entries: int | None = None

    def __init__(
        self,
        endpoint: str,
        *,
        index: str = "agent-memory-vectors",
        region_name: str | None = None,
        service: str = "es",
        engine: str = "lucene",
        client: Any = None,
        refresh: bool | str | None = None,
        timeout: float = 5.0,
        table: Table | None = None,
    ) -> None:
        """``table``: where writes are logged (agentmem/search/changes.py): on a collection that shows
        writes only after its refresh (Serverless), searches add the entries written or deleted since."""
        if service not in ("es", "aoss"):
            raise ValueError("service must be es (OpenSearch Service) or aoss (Serverless)")
        if engine not in ENGINES:
            raise ValueError("engine must be lucene or faiss (both support efficient k-NN filtering)")
        if service == "aoss" and engine == "lucene":
            raise ValueError("OpenSearch Serverless has no lucene engine: use faiss")
        self.endpoint = endpoint
        self.index = index
        self.service = service
        self.engine = engine
        self._region = region_name
        self._client = client
        self._timeout = timeout
        # Read-your-writes: writes wait for the refresh that makes them searchable (OpenSearch Service, the
        # local node). Serverless rejects the refresh parameter and refreshes on its own (~60 s): no wait.
        self._refresh: bool | str = (False if service == "aoss" else "wait_for") if refresh is None else refresh
        self.visibility_seconds = 0 if self._refresh else SERVERLESS_REFRESH_SECONDS
        self._told_mapped = True
        """False once the index refused a ``told`` field (created before it): documents go without it."""
        self._table = table

    @property
    def client(self) -> Any:
        if self._client is None:
            from opensearchpy import OpenSearch, RequestsHttpConnection

            kwargs: dict[str, Any] = {"hosts": [self.endpoint], "timeout": self._timeout, "max_retries": 2}
            if self.endpoint.startswith("https://"):
                import boto3
                from opensearchpy import AWSV4SignerAuth

                credentials = boto3.Session().get_credentials()
                region = self._region or boto3.Session().region_name or "us-east-1"
                kwargs.update(
                    http_auth=AWSV4SignerAuth(credentials, region, self.service),
                    use_ssl=True,
                    verify_certs=True,
                    connection_class=RequestsHttpConnection,
                    pool_maxsize=20,
                )
            self._client = OpenSearch(**kwargs)
        return self._client

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as error:  # transport, auth, HTTP errors: all mean "the index is not usable now"
            raise Unavailable(
                f"OpenSearch {what} failed: {type(error).__name__}", code="vector_index_unavailable"
            ) from error

    # -- administration ------------------------------------------------------------------------------

    def create_index(self, dimension: int) -> bool:
        """Create the index (with this adapter's engine) if it is missing; return True when it was created.
        An index of vectors of another size is refused (a mapping's dimension never changes): the message
        says how to move to the new size."""
        if self._call("exists", self.client.indices.exists, index=self.index):
            held = self.dimension()
            if held is not None and held != dimension:
                raise InvalidInput(
                    f"the index {self.index} holds {held}-dimension vectors, not {dimension}: create another index "
                    "(MEMORY_OPENSEARCH_INDEX) with `agentmem create-index` and fill it with `agentmem reindex "
                    "--re-embed`, or keep the embedder's size at the index's",
                    code="vector_dimension_mismatch",
                )
            # An index created before the filter or word fields: add them (mappings only grow; idempotent).
            added = {"properties": {**FILTER_FIELDS, **WORD_FIELDS, **RANKING_FIELDS}}
            self._call("mapping", self.client.indices.put_mapping, index=self.index, body=added)
            return False
        body = index_body(dimension, engine=self.engine)
        self._call("create", self.client.indices.create, index=self.index, body=body)
        return True

    def dimension(self) -> int | None:
        """The size of the vectors the index's mapping takes (None when the mapping names none)."""
        got: dict[str, Any] = self._call("mapping", self.client.indices.get_mapping, index=self.index)
        held = None
        for index in got.values():  # one: this index's
            held = index.get("mappings", {}).get("properties", {}).get("vector", {}).get("dimension")
        return int(held) if held is not None else None

    def health(self) -> str:
        try:
            return "ok" if self.client.indices.exists(index=self.index) else "failing"
        except Exception:
            return "failing"

    # -- writes --------------------------------------------------------------------------------------

    def _send(self, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send the actions (one bulk request per :data:`_BULK_CHUNK` documents); each one's result, in order."""
        results: list[dict[str, Any]] = []
        for start in range(0, len(lines), _BULK_CHUNK * 2):
            kwargs: dict[str, Any] = {"body": lines[start : start + _BULK_CHUNK * 2]}
            if self._refresh:
                kwargs["refresh"] = self._refresh
            response = self._call("bulk", self.client.bulk, **kwargs)
            results += [next(iter(item.values())) for item in response.get("items", [])]
        return results

    def _bulk(self, lines: list[dict[str, Any]]) -> int:
        """Send the actions; return how many took effect (a delete of a missing document did not)."""
        results = self._send(lines)
        failed = [r for r in results if _refused(r)]
        if failed and all(_unmapped_told(r) for r in failed):
            raise _ToldUnmapped(f"OpenSearch rejected {len(failed)} documents: no told field in the mapping")
        if failed:
            raise Unavailable(f"OpenSearch rejected {len(failed)} bulk actions", code="vector_index_unavailable")
        return sum(1 for r in results if r.get("status", 200) < 300)

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        try:
            self._bulk(self._upsert_lines(records, told=self._told_mapped))
        except _ToldUnmapped:
            self._without_told()
            self._bulk(self._upsert_lines(records, told=False))

    def _without_told(self) -> None:
        # An index created before the told field: until `agentmem create-index` adds it to the mapping,
        # documents go without it (ranked by their timestamp alone), as the whole index did before.
        logger.warning("the index has no told field; run `agentmem create-index` to add it")
        self._told_mapped = False

    def _upsert_lines(self, records: Sequence[VectorRecord], *, told: bool) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        for r in records:
            lines.append({"index": {"_index": self.index, "_id": document_id(r.scope, r.entry_id)}})
            document: dict[str, Any] = {
                "app": r.scope.app,
                "user": r.scope.user,
                "project": r.scope.project_id or GLOBAL_PROJECT,
                "session": r.session_id,
                "entry_id": r.entry_id,
                **filter_fields(r),
                **word_fields(r),
            }
            if r.told and told:
                document["told"] = r.told
            if r.vector is not None and r.model_id is not None:  # until then it is found by its words only
                document.update(model=r.model_id, vector=[float(v) for v in r.vector])
            lines.append(document)
        return lines

    def _delete_lines(self, documents: Sequence[tuple[Scope, str]]) -> list[dict[str, Any]]:
        return [{"delete": {"_index": self.index, "_id": document_id(scope, i)}} for scope, i in documents]

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None:
        lines = self._delete_lines([(scope, i) for i in entry_ids])
        if lines:
            self._bulk(lines)

    def write(self, upserts: Sequence[VectorRecord], deletes: Sequence[tuple[Scope, str]]) -> set[tuple[Scope, str]]:
        """Upsert and delete in one bulk request (the stream indexer's batch: distinct documents); return
        the documents the index refused, for their changes to be retried. A failed request raises."""
        documents = [(r.scope, r.entry_id) for r in upserts] + list(deletes)
        # upserts first: each is two lines, so a chunk's boundary (an even line) never parts one from its document
        results = self._send(self._upsert_lines(upserts, told=self._told_mapped) + self._delete_lines(deletes))
        refused = {documents[n] for n, r in enumerate(results) if _refused(r)}
        unmapped = [r for r in upserts if (r.scope, r.entry_id) in refused]
        if unmapped and all(_unmapped_told(r) for r in results if _refused(r)):
            self._without_told()
            again = self._send(self._upsert_lines(unmapped, told=False))
            refused = {(r.scope, r.entry_id) for r, result in zip(unmapped, again, strict=True) if _refused(result)}
        return refused

    # -- reads ---------------------------------------------------------------------------------------

    def search(
        self,
        scopes: Sequence[Scope],
        vector: Sequence[float],
        top_k: int,
        model_id: str,
        where: Node | None = None,
    ) -> list[VectorHit]:
        if not scopes:
            return []
        fresh, gone = self._recent(scopes)
        body = knn_query_body(scopes, vector, top_k, model_id, where)
        response = self._call("search", self.client.search, index=self.index, body=body)
        by_project = {s.project_id or GLOBAL_PROJECT: s for s in scopes}
        hits: list[VectorHit] = nearest_of(fresh, vector, top_k, model_id, where)
        shown = {(h.scope.partition, h.entry_id) for h in hits} | gone
        for hit in response.get("hits", {}).get("hits", []):
            source = hit.get("_source", {})
            scope = by_project.get(source.get("project", GLOBAL_PROJECT))
            # Defence in depth: the filter already restricts to this user; never trust a stray hit.
            if scope is None or source.get("app") != scope.app or source.get("user") != scope.user:
                continue
            if (scope.partition, str(source["entry_id"])) in shown:  # written or deleted since the refresh
                continue
            cosine = cosine_from_score(float(hit.get("_score", 0.0)))
            hits.append(
                VectorHit(
                    scope,
                    str(source["entry_id"]),
                    cosine,
                    source.get("author"),
                    source.get("timestamp"),
                    source.get("told"),
                )
            )
        hits.sort(key=lambda h: (h.score, h.entry_id), reverse=True)
        return hits[:top_k]

    def _recent(self, scopes: Sequence[Scope]) -> tuple[dict[Scope, list[Item]], set[tuple[str, str]]]:
        """The scopes' entries written within the collection's refresh interval (which it may not show
        yet), and the (partition, id) of those deleted within it (which it may still show)."""
        if self._table is None or not self.visibility_seconds:
            return {}, set()
        fresh: dict[Scope, list[Item]] = {}
        gone: set[tuple[str, str]] = set()
        for scope in scopes:
            ids = changes.MEMORY.recent(self._table, scope.partition, self.visibility_seconds)
            if not ids:
                continue
            present = self._table.batch_get([(scope.partition, records.entry_sk(i)) for i in sorted(ids)])
            fresh[scope] = present
            gone |= {(scope.partition, i) for i in ids - {str(item["id"]) for item in present}}
        return fresh, gone

    def keyword(
        self,
        scopes: Sequence[Scope],
        words: Sequence[str],
        now: str,
        *,
        contextual: bool = False,
        where: Node | None = None,
    ) -> Ranking:
        """BM25 over the scopes' live entries (``where`` is not applied here: :attr:`filters_keyword`): one
        ``_msearch`` reads, per query word, the entries holding it (the best ``KEYWORD_DEPTH`` by that word,
        agentmem/vectors/opensearch_queries.py) and how many hold it, and the scopes' live entries counted
        with their total length; the ranking is computed here as the table's own index computes it."""
        forms = written_forms(words)
        query = list(forms)
        if not scopes or not query:
            return Ranking([])
        lines = keyword_queries(scopes, forms, now, contextual=contextual)
        response = self._call("msearch", self.client.msearch, index=self.index, body=lines)
        answers = response.get("responses", [])
        if len(answers) != len(query) + 1 or any("error" in answer for answer in answers):
            raise Unavailable("OpenSearch could not answer a keyword search", code="vector_index_unavailable")
        fresh, gone = self._recent(scopes)
        by_project = {s.project_id or GLOBAL_PROJECT: s for s in scopes}
        held: dict[str, dict[str, dict[str, Any]]] = {s.partition: {} for s in scopes}
        frequencies: dict[str, int] = {}
        for word, answer in zip(query, answers, strict=False):
            frequencies[word] = int(answer["hits"]["total"]["value"])
            for hit in answer["hits"]["hits"]:
                scope = by_project.get(hit["_source"].get("project", GLOBAL_PROJECT))
                if scope is not None:
                    entry = entry_of(scope, hit["_source"])
                    held[scope.partition][entry["id"]] = entry
        totals = answers[-1]
        docs = int(totals["hits"]["total"]["value"])
        for scope, items in fresh.items():  # not shown yet (or shown as they were): as the table has them
            for item in items:
                unseen = item["id"] not in held[scope.partition]
                held[scope.partition][item["id"]] = item
                docs += unseen
                own, around = records.entry_stems(item)
                for word in query:
                    frequencies[word] += unseen and (word in own or (contextual and word in around))
        for partition, entry_id in gone:
            held.get(partition, {}).pop(entry_id, None)
        collection = Collection(
            docs, float(totals.get("aggregations", {}).get("length", {}).get("value") or 0.0), frequencies
        )
        indexes = [(p, PartitionIndex.of(None, 0, entries.values())) for p, entries in held.items()]
        return bm25(indexes, query, now, contextual=contextual, collection=collection)

    def documents_with_all(self, scope: Scope, words: Sequence[str], now: str) -> set[str]:
        """Ids of the scope's live entries holding every word among their own, by its stem (every page of
        them; a document indexed before stemming by the word as written)."""
        forms = written_forms(words)
        restrict = scope_filter([scope])
        restrict["bool"]["filter"] += [
            filter_query(live(now)),
            *({"match": {"own_words": " ".join(alternatives)}} for alternatives in forms.values()),
        ]
        found: set[str] = set()
        search_after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": 1000,
                "_source": ["entry_id"],
                "query": restrict,
                "sort": [{field: "asc"} for field in DOCUMENT_KEY],
            }
            if search_after is not None:
                body["search_after"] = search_after
            response = self._call("search", self.client.search, index=self.index, body=body)
            page = response.get("hits", {}).get("hits", [])
            found.update(str(hit["_source"]["entry_id"]) for hit in page)
            if len(page) < 1000:
                break
            search_after = page[-1].get("sort")
        fresh, gone = self._recent([scope])
        for item in fresh.get(scope, []):
            own, _ = records.entry_stems(item)
            if all(word in own for word in forms) and records.is_live(item, now):
                found.add(str(item["id"]))
            else:  # rewritten since the refresh: the table has the truth
                found.discard(str(item["id"]))
        return found - {entry_id for _, entry_id in gone}

    def other_models(self, scopes: Sequence[Scope], model_id: str) -> list[str]:
        """Model ids other than ``model_id`` among the scopes' vectors: a terms aggregation, no documents."""
        if not scopes:
            return []
        query = scope_filter(scopes)
        query["bool"]["must_not"] = [{"term": {"model": model_id}}]
        body = {"size": 0, "query": query, "aggs": {"models": {"terms": {"field": "model", "size": 20}}}}
        response = self._call("search", self.client.search, index=self.index, body=body)
        buckets = response.get("aggregations", {}).get("models", {}).get("buckets", [])
        return sorted(str(bucket["key"]) for bucket in buckets)

    # -- per user ------------------------------------------------------------------------------------

    def _ids_matching(self, query: dict[str, Any]) -> list[str]:
        ids: list[str] = []
        search_after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": 1000,
                "_source": False,
                "query": query,
                # A unique sort key: with entry_id alone, ids shared by two projects at a page boundary
                # were skipped by search_after (and survived an erasure).
                "sort": [{field: "asc"} for field in DOCUMENT_KEY],
            }
            if search_after is not None:
                body["search_after"] = search_after
            response = self._call("search", self.client.search, index=self.index, body=body)
            page = response.get("hits", {}).get("hits", [])
            ids.extend(hit["_id"] for hit in page)
            if len(page) < 1000:
                return ids
            search_after = page[-1].get("sort")

    def delete_user(self, user: UserRef) -> int:
        """Delete every vector of the user: listed by a filtered search, deleted in bulk (works on Serverless too)."""
        return self._delete_ids(self._ids_matching(user_filter(user)))

    def delete_scope(self, scope: Scope) -> int:
        """Delete every vector of one scope (a project, or the global scope alone)."""
        return self._delete_ids(self._ids_matching(scope_filter([scope])))

    def _delete_ids(self, ids: Sequence[str]) -> int:
        """Delete by id; count only the documents that were there (a sweep that runs again before a
        Serverless collection refreshes lists deleted documents once more: they are not counted twice)."""
        return self._bulk([{"delete": {"_index": self.index, "_id": i}} for i in ids]) if ids else 0

    def count_user(self, user: UserRef) -> int:
        response = self._call("count", self.client.count, index=self.index, body={"query": user_filter(user)})
        return int(response.get("count", 0))
