"""Search matches English words by their stems; delete-by-query deletes by the words as written.

Over the REST handler on SQLite and DynamoDB (the table's own index) and on the real OpenSearch node
(its keyword search), in keyword and hybrid mode; and an OpenSearch document written before stemming
(its words as written) is still found by those words, and by every form once `agentmem reindex` rewrote it.
"""

from __future__ import annotations

from agentmem.container import get_container
from agentmem.keys import UserRef
from agentmem.vectors.indexing import reindex
from agentmem.vectors.opensearch import OpenSearchVectorIndex
from tests.support import ApiClient, scope_path, text_entry

PATH = scope_path("app", "alice")
TEXTS = {
    "painting": "I love painting landscapes on Sundays",
    "painted": "Grandma painted the fence blue",
    "cities": "We toured three cities in Portugal",
    "other": "The dentist moved to Tuesday",
}


def _store(api: ApiClient) -> dict[str, str]:
    ids = {}
    for name, text in TEXTS.items():
        reply = api.post(f"{PATH}/memories", {"entry": text_entry(text)})
        assert reply.status == 201, reply.body
        ids[name] = reply.body["id"]
    return ids


def _found(api: ApiClient, query: str, mode: str) -> set[str]:
    reply = api.post(f"{PATH}/memories/search", {"query": query, "mode": mode, "top_k": 10})
    assert reply.status == 200, reply.body
    assert "degraded" not in reply.body
    return {e["id"] for e in reply.body["entries"]}


def _matches_stems_and_deletes_words(api: ApiClient) -> None:
    ids = _store(api)
    # When the query's words are other forms of the stored ones, Then keyword search finds both forms
    for mode in ("keyword", "hybrid"):
        assert {ids["painting"], ids["painted"]} <= _found(api, "paints", mode), mode
        assert ids["cities"] in _found(api, "city", mode), mode
    assert ids["other"] not in _found(api, "paints", "keyword")
    # When deleting by a word, Then only the entries holding that word as written are deleted
    reply = api.post(f"{PATH}/memories/delete", {"query": "painting"})
    assert reply.body == {"deleted": 1}
    remaining = {e["id"] for e in api.get(f"{PATH}/memories").body["entries"]}
    assert remaining == {ids["painted"], ids["cities"], ids["other"]}
    assert _found(api, "paints", "keyword") == {ids["painted"]}


def test_search_matches_stems_and_delete_matches_words_on_the_table(api_on_table: ApiClient) -> None:
    _matches_stems_and_deletes_words(api_on_table)


def test_search_matches_stems_and_delete_matches_words_on_opensearch(api_on_opensearch: ApiClient) -> None:
    api = api_on_opensearch
    assert api.get("/v1/capabilities").body["vector_backend"] == "opensearch"
    _matches_stems_and_deletes_words(api)


def test_a_document_indexed_before_stemming_is_found_by_its_words_until_reindexed(
    api_on_opensearch: ApiClient, index: OpenSearchVectorIndex
) -> None:
    api, container = api_on_opensearch, get_container()
    ids = _store(api)
    # Given the documents as an index written before stemming holds them: words as written
    for name, entry_id in ids.items():
        written = " ".join(TEXTS[name].lower().split())
        found = index.client.search(index=index.index, body={"query": {"term": {"entry_id": entry_id}}})
        (document,) = found["hits"]["hits"]
        source = {**document["_source"], "own_words": written}
        index.client.index(index=index.index, id=document["_id"], body=source, refresh=True)
    # Then a search still finds each by the word it holds, not yet by the other forms
    assert _found(api, "painted", "keyword") == {ids["painted"]}
    assert ids["painting"] not in _found(api, "painted", "keyword")
    # When the user is reindexed, Then every form finds both
    reindex(container.table, container.vector_index, container.embedder, user=UserRef("app", "alice"))
    index.client.indices.refresh(index=index.index)
    assert {ids["painting"], ids["painted"]} <= _found(api, "painted", "keyword")


def test_the_index_holds_stems_and_the_entry_keeps_its_words(api_on_table: ApiClient) -> None:
    ids = _store(api_on_table)
    # The entry is returned as written
    entry = api_on_table.get(f"{PATH}/memories/{ids['cities']}").body
    assert entry["content"]["parts"][0]["text"] == TEXTS["cities"]
    # And a word in another script, or with digits, is matched as written only
    reply = api_on_table.post(f"{PATH}/memories", {"entry": text_entry("東京 room 4711b")})
    assert {reply.body["id"]} == _found(api_on_table, "4711b", "keyword")
    assert _found(api_on_table, "4711", "keyword") == set()
