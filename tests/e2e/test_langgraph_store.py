"""``AgentMemoryStore`` against the real local server, differentially against LangGraph's ``InMemoryStore``.

The same op sequences go to both stores (those of LangGraph's own store tests, in checkpoint-sqlite and
checkpoint-postgres, and hypothesis-generated ones), under the user's namespace prefix the template
gives, and the results must agree, with the differences the contract allows and docs/langgraph.md lists:
- scores, and the order of a search with a query (ours ranks by the service's relevance);
- a search without a query lists items in namespace then key order (InMemoryStore: insertion order),
  so its pages are compared against the reference's matches put in that order;
- InMemoryStore keeps a namespace it once held, or one a get touched, in ``list_namespaces``; ours
  lists the namespaces that hold an item, as LangGraph's SQL stores do: the reference
  (:class:`ReferenceStore`) is InMemoryStore without that quirk.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from agentmem.errors import InvalidInput
from agentmem.langgraph import AgentMemoryStore
from agentmem.store import records
from tests.e2e.conftest import LiveServer, start_server

pytestmark = pytest.mark.xdist_group("langgraph")

APP = "lg-app"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    running = start_server(tmp_path_factory.mktemp("langgraph") / "memory.db", args=("--workers", "1"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def store(server: LiveServer) -> AgentMemoryStore:
    return AgentMemoryStore(server.base_url, app=APP)


class _Untouched(dict[tuple[str, ...], dict[str, Item]]):
    def __missing__(self, namespace: tuple[str, ...]) -> dict[str, Item]:
        return {}


class ReferenceStore(InMemoryStore):
    """InMemoryStore, but a get of a namespace it does not hold leaves it out of ``list_namespaces``
    (its defaultdict adds it), and a namespace emptied by deletes goes (the SQL stores list namespaces
    that hold items)."""

    def __init__(self) -> None:
        super().__init__()
        self._data = _Untouched()

    def _apply_put_ops(self, put_ops: dict[tuple[tuple[str, ...], str], PutOp]) -> None:
        for namespace, _ in put_ops:
            self._data.setdefault(namespace, {})
        super()._apply_put_ops(put_ops)
        for namespace in [ns for ns, items in self._data.items() if not items]:
            del self._data[namespace]


class Pair:
    """Runs each batch on both stores, under ``("memories", <a fresh user>)``, and compares."""

    def __init__(self, store: AgentMemoryStore) -> None:
        self.ours = store
        self.reference = ReferenceStore()
        self.user = "u-" + uuid.uuid4().hex[:12]
        self.root = ("memories", self.user)

    def under(self, path: Sequence[str]) -> tuple[str, ...]:
        return (*self.root, *path)

    def run(self, ops: Sequence[Op]) -> list[Any]:
        # every match of each search, as the batch's reads see the store: before its writes
        matches = [
            self.reference.search(op.namespace_prefix, filter=op.filter, limit=10_000)
            if isinstance(op, SearchOp)
            else []
            for op in ops
        ]
        ours = self.ours.batch(ops)
        expected = self.reference.batch(ops)
        for op, mine, theirs, everything in zip(ops, ours, expected, matches, strict=True):
            self._compare(op, mine, theirs, everything)
        return ours

    def _compare(self, op: Op, mine: Any, theirs: Any, everything: list[Item]) -> None:
        if isinstance(op, GetOp):
            assert _plain(mine) == _plain(theirs), op
        elif isinstance(op, PutOp):
            assert mine is None
            assert theirs is None
        elif isinstance(op, ListNamespacesOp):
            assert mine == theirs, op
        elif isinstance(op, SearchOp) and op.query is None:
            ordered = sorted(everything, key=lambda item: records.key_row_sk(item.namespace[2:], item.key))
            assert [_plain(i) for i in mine] == [_plain(i) for i in ordered[op.offset : op.offset + op.limit]], op
            assert {_plain(i) for i in theirs} <= {_plain(i) for i in everything}
        else:  # a query: the same matches, ranked our way
            found = [_plain(i) for i in mine]
            assert set(found) <= {_plain(i) for i in everything}, op
            assert len(found) == len(set(found)), op
            assert len(found) == max(0, min(op.limit, len(everything) - op.offset)), op
            assert all(isinstance(i.score, float) for i in mine)


def _plain(item: Item | None) -> Any:
    if item is None:
        return None
    return (tuple(item.namespace), item.key, _freeze(item.value))


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


# -- the op sequences of LangGraph's own store tests, under a user --------------------------------


def test_batch_order(store: AgentMemoryStore) -> None:
    pair = Pair(store)
    n = pair.under
    pair.run(
        [PutOp(n(["test", "foo"]), "key1", {"data": "value1"}), PutOp(n(["test", "bar"]), "key2", {"data": "value2"})]
    )
    results = pair.run(
        [
            GetOp(n(["test", "foo"]), "key1"),
            PutOp(n(["test", "bar"]), "key2", {"data": "value2"}),
            SearchOp(n(["test"]), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", pair.root),), limit=10, offset=0),
            GetOp(n(["test"]), "key3"),
        ]
    )
    assert results[0].value == {"data": "value1"}
    assert results[0].namespace == n(["test", "foo"])
    assert [i.key for i in results[2]] == ["key1"]
    assert n(["test", "foo"]) in results[3]
    assert n(["test", "bar"]) in results[3]
    assert results[4] is None
    reordered = pair.run(
        [
            SearchOp(n(["test"]), filter=None, limit=5, offset=0),
            GetOp(n(["test", "bar"]), "key2"),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", pair.root),), limit=5, offset=0),
            PutOp(n(["test"]), "key3", {"data": "value3"}),
            GetOp(n(["test"]), "key3"),  # reads see the batch's state before its writes, as in LangGraph
        ]
    )
    assert len(reordered[0]) == 2
    assert reordered[4] is None
    assert pair.run([GetOp(n(["test"]), "key3")])[0].value == {"data": "value3"}


def test_batch_get_put_and_delete_ops(store: AgentMemoryStore) -> None:
    pair = Pair(store)
    n = pair.under
    pair.run(
        [
            PutOp(n(["test"]), "key1", {"data": "value1"}),
            PutOp(n(["test"]), "key2", {"data": "value2"}),
            PutOp(n(["test"]), "key3", None),
        ]
    )
    got = pair.run([GetOp(n(["test"]), "key1"), GetOp(n(["test"]), "key2"), GetOp(n(["test"]), "key3")])
    assert [g and g.key for g in got] == ["key1", "key2", None]
    pair.run([PutOp(n(["test"]), "key1", None), PutOp(n(["test"]), "key2", {"data": "changed"})])
    pair.run([GetOp(n(["test"]), "key1"), GetOp(n(["test"]), "key2")])


def test_batch_search_ops(store: AgentMemoryStore) -> None:
    pair = Pair(store)
    n = pair.under
    for namespace, key, value in [
        (["test", "foo"], "key1", {"data": "value1", "tag": "a"}),
        (["test", "bar"], "key2", {"data": "value2", "tag": "a"}),
        (["test", "baz"], "key3", {"data": "value3", "tag": "b"}),
    ]:
        pair.run([PutOp(n(namespace), key, value)])
    results = pair.run(
        [
            SearchOp(n(["test"]), filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(n(["test"]), filter=None, limit=2, offset=0),
            SearchOp(n(["test", "foo"]), filter=None, limit=10, offset=0),
            SearchOp(n(["test"]), filter=None, limit=2, offset=2),
        ]
    )
    assert [len(r) for r in results] == [2, 2, 1, 1]


def test_list_namespaces(store: AgentMemoryStore) -> None:
    pair = Pair(store)
    n = pair.under
    spaces = [
        ["test", "documents", "public"],
        ["test", "documents", "private"],
        ["test", "images", "public"],
        ["test", "images", "private"],
        ["prod", "documents", "public"],
        ["prod", "documents", "private"],
    ]
    pair.run([PutOp(n(space), "dummy", {"content": "dummy"}) for space in spaces])
    root = MatchCondition("prefix", pair.root)
    listed = pair.run(
        [
            ListNamespacesOp(match_conditions=(root,), limit=100),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", n(["test"])),), limit=100),
            ListNamespacesOp(match_conditions=(root, MatchCondition("suffix", ("public",))), limit=100),
            ListNamespacesOp(match_conditions=(root,), max_depth=4, limit=100),
            ListNamespacesOp(match_conditions=(root,), limit=3, offset=1),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", (*pair.root, "*", "documents")),), limit=100),
            ListNamespacesOp(match_conditions=(root, MatchCondition("suffix", ("documents", "*"))), limit=100),
        ]
    )
    assert [len(r) for r in listed] == [6, 4, 3, 3, 3, 4, 4]
    pair.run([PutOp(n(space), "dummy", None) for space in spaces[:3]])
    assert len(pair.run([ListNamespacesOp(match_conditions=(root,), limit=100)])[0]) == 3


def test_filters_and_the_search_items_of_the_postgres_store(store: AgentMemoryStore) -> None:
    pair = Pair(store)
    n = pair.under
    pair.run(
        [
            PutOp(n(["test", "docs"]), "doc1", {"title": "First Doc", "author": "Alice", "score": 4.5, "n": 1}),
            PutOp(n(["test", "docs"]), "doc2", {"title": "Second Doc", "author": "Bob", "score": 3.0, "n": 2}),
            PutOp(n(["test", "images"]), "img1", {"title": "Image 1", "author": "Alice", "flag": True, "n": 3}),
            PutOp(n(["test", "images"]), "img-2", {"title": "Image 2", "author-name": "Eve", "my-key-1": 9, "n": 4}),
        ]
    )
    under = n(["test"])
    pair.run(
        [
            SearchOp(under, filter={"author": "Alice"}, limit=10),
            SearchOp(under, filter={"author": {"$ne": "Alice"}}, limit=10),
            # (a range on a field some item lacks raises TypeError in InMemoryStore: ours, like the SQL
            # stores, does not match that item; the comparison stays where every item has the field)
            SearchOp(n(["test", "docs"]), filter={"score": {"$gt": 3.0}}, limit=10),
            SearchOp(n(["test", "docs"]), filter={"score": {"$gte": 3.0, "$lte": 4.5}}, limit=10),
            SearchOp(under, filter={"n": {"$lt": 3}, "author": {"$eq": "Alice"}}, limit=10),
            SearchOp(under, filter={"flag": True}, limit=10),
            SearchOp(under, filter={"author-name": "Eve", "my-key-1": 9}, limit=10),
            SearchOp(under, filter={"author": "' OR 1=1 --"}, limit=10),
            SearchOp(n(["test", "docs"]), filter=None, limit=10),
            SearchOp(n(["tes"]), filter=None, limit=10),  # a prefix matches whole labels only
            SearchOp(under, query="second document", limit=10),
            SearchOp(under, query="image", filter={"author": "Alice"}, limit=10),
            SearchOp(under, query="doc", filter={"n": {"$gte": 2}}, limit=1, offset=1),
        ]
    )


def test_labels_and_keys_with_odd_characters(store: AgentMemoryStore) -> None:
    pair = Pair(store)
    n = pair.under
    odd = ["a/b", "c|d", "100%", "*", "ü 日本", "x#y"]
    pair.run([PutOp(n([label]), key, {"v": key}) for label in odd for key in ("k/1", "k|2", "", "%23")])
    pair.run([GetOp(n([label]), "k|2") for label in odd])
    pair.run([SearchOp(n([label]), limit=10) for label in odd])
    pair.run([ListNamespacesOp(match_conditions=(MatchCondition("prefix", pair.root),), limit=100)])


# -- generated sequences ----------------------------------------------------------------------------

LABELS = st.sampled_from(["a", "b", "c"])
PATHS = st.lists(LABELS, max_size=2)
KEYS = st.sampled_from(["k1", "k2", "k3"])
VALUES = st.fixed_dictionaries(
    {"text": st.sampled_from(["red apples", "green pears", "blue sky"]), "n": st.integers(0, 4)},
    optional={"tag": st.sampled_from(["x", "y"])},
)
FILTERS = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tag": st.sampled_from(["x", "y"])}),
    st.builds(
        lambda op, v: {"n": {op: v}}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), st.integers(0, 4)
    ),
)


def _ops(root: tuple[str, ...]) -> st.SearchStrategy[Op]:
    def under(path: list[str]) -> tuple[str, ...]:
        return (*root, *path)

    return st.one_of(
        st.builds(lambda p, k, v: PutOp(under(p), k, v), PATHS, KEYS, VALUES),
        st.builds(lambda p, k: PutOp(under(p), k, None), PATHS, KEYS),
        st.builds(lambda p, k: GetOp(under(p), k), PATHS, KEYS),
        st.builds(
            lambda p, f, limit, offset: SearchOp(under(p), filter=f, limit=limit, offset=offset),
            PATHS,
            FILTERS,
            st.integers(0, 4),
            st.integers(0, 3),
        ),
        st.builds(
            lambda p, f, limit: SearchOp(under(p), query="apples", filter=f, limit=limit),
            PATHS,
            FILTERS,
            st.integers(1, 4),
        ),
        st.builds(
            lambda p, suffix, depth, limit, offset: ListNamespacesOp(
                match_conditions=(MatchCondition("prefix", under(p)),)
                + ((MatchCondition("suffix", tuple(suffix)),) if suffix else ()),
                max_depth=depth,
                limit=limit,
                offset=offset,
            ),
            PATHS,
            st.lists(st.one_of(LABELS, st.just("*")), max_size=2),
            st.one_of(st.none(), st.integers(2, 4)),
            st.integers(1, 5),
            st.integers(0, 2),
        ),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_op_sequences_agree_with_the_in_memory_store(store: AgentMemoryStore, data: st.DataObject) -> None:
    pair = Pair(store)
    batches = data.draw(st.lists(st.lists(_ops(pair.root), min_size=1, max_size=4), min_size=1, max_size=5))
    for batch in batches:
        pair.run(batch)


# -- the parts of the contract the reference does not hold -------------------------------------------


def test_a_re_put_keeps_created_at_and_moves_updated_at(store: AgentMemoryStore) -> None:
    namespace = ("memories", "u-" + uuid.uuid4().hex[:8])
    store.put(namespace, "k", {"text": "first"})
    first = store.get(namespace, "k")
    store.put(namespace, "k", {"text": "second"})
    second = store.get(namespace, "k")
    assert first is not None
    assert second is not None
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert second.value == {"text": "second"}


def test_the_async_store_is_the_same_store(store: AgentMemoryStore) -> None:
    namespace = ("memories", "u-" + uuid.uuid4().hex[:8], "notes")

    async def scenario() -> tuple[Any, Any, Any, Any]:
        await store.aput(namespace, "k", {"text": "the user likes green tea"})
        got = await store.aget(namespace, "k")
        found = await store.asearch(namespace[:2], query="tea")
        spaces = await store.alist_namespaces(prefix=namespace[:2])
        await store.adelete(namespace, "k")
        return got, found, spaces, await store.aget(namespace, "k")

    got, found, spaces, gone = asyncio.run(scenario())
    assert got.value == {"text": "the user likes green tea"}
    assert [i.key for i in found] == ["k"]
    assert found[0].score is not None
    assert spaces == [namespace]
    assert gone is None


def test_a_namespace_above_the_user_is_refused_never_widened(store: AgentMemoryStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="above the user level"):
        store.search(("memories",))
    with pytest.raises(InvalidNamespaceError, match="above the user level"):
        store.put(("memories",), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError, match="does not match the template"):
        store.get(("other", "u1"), "k")
    with pytest.raises(InvalidNamespaceError, match="names the user"):
        store.list_namespaces()
    with pytest.raises(InvalidNamespaceError, match="periods"):
        store.put(("memories", "u.1"), "k", {"text": "x"})


def test_a_filter_on_a_nested_field_is_refused_clearly(store: AgentMemoryStore) -> None:
    namespace = ("memories", "u-" + uuid.uuid4().hex[:8])
    store.put(namespace, "k", {"profile": {"city": "Lisbon"}})
    for bad in ({"profile": {"city": "Lisbon"}}, {"profile.city": "Lisbon"}, {"n": {"$regex": "x"}}):
        with pytest.raises(InvalidInput) as caught:
            store.search(namespace, filter=bad)
        assert caught.value.http_status == 422
        assert caught.value.code == "invalid_filter"


def test_the_template_maps_a_label_onto_a_project(server: LiveServer) -> None:
    projects = AgentMemoryStore(server.base_url, app=APP, namespace=("memories", "{project}", "{user}"))
    user = "u-" + uuid.uuid4().hex[:8]
    projects.put(("memories", "p1", user), "k", {"text": "in project one"})
    projects.put(("memories", "p2", user), "k", {"text": "in project two"})
    assert projects.get(("memories", "p1", user), "k").value == {"text": "in project one"}
    assert [i.value for i in projects.search(("memories", "p2", user), query="project")] == [{"text": "in project two"}]
    with httpx.Client(base_url=server.base_url) as http:
        listed = http.get(f"/v1/apps/{APP}/users/{user}/memories", params={"project_id": "p1"}).json()["entries"]
        global_only = http.get(f"/v1/apps/{APP}/users/{user}/memories").json()["entries"]
    assert [e["project_id"] for e in listed] == ["p1"]
    assert global_only == []


def test_ttl_expires_an_item_and_a_read_refreshes_it(store: AgentMemoryStore, server: LiveServer) -> None:
    import time

    user = "u-" + uuid.uuid4().hex[:8]
    namespace = ("memories", user)
    store.put(namespace, "short", {"text": "gone soon"}, ttl=1 / 60)  # one second
    store.put(namespace, "kept", {"text": "read often"}, ttl=0.05)  # three seconds

    def unrefreshed() -> dict[str, Any]:
        op = {"op": "get", "user": user, "namespace": [], "key": "kept", "refresh_ttl": False}
        return store.client.store_batch(APP, [op])[0]  # type: ignore[no-any-return]

    raw = unrefreshed()
    time.sleep(1.2)
    assert store.get(namespace, "short") is None
    assert unrefreshed()["expires_at"] == raw["expires_at"]  # a read without refresh_ttl moves nothing
    # LangGraph's reads refresh by default; a tenth of the TTL has passed, so this search does
    assert [i.key for i in store.search(namespace, query="gone soon")] == ["kept"]  # "short" is never served again
    again = unrefreshed()
    assert again["expires_at"] > raw["expires_at"]
    with httpx.Client(base_url=server.base_url) as http:
        entries = http.get(f"/v1/apps/{APP}/users/{user}/memories").json()["entries"]
    assert [e["expires_at"] for e in entries] == [again["expires_at"]]


def test_bad_batches_are_refused_and_change_nothing(server: LiveServer) -> None:
    user = "u-" + uuid.uuid4().hex[:8]
    good = {"op": "put", "user": user, "namespace": ["n"], "key": "k", "value": {"text": "kept out"}}
    cases: list[tuple[dict[str, Any], int, str]] = [
        (
            {"ops": [good, {"op": "put", "user": user, "namespace": ["a.b"], "key": "k", "value": {}}]},
            422,
            "invalid_input",
        ),
        (
            {"ops": [good, {"op": "put", "user": user, "namespace": [], "key": "k" * 1025, "value": {}}]},
            422,
            "invalid_input",
        ),
        (
            {"ops": [good, {"op": "put", "user": user, "namespace": [], "key": "k", "value": {"t": "x" * 70_000}}]},
            413,
            "entry_too_large",
        ),
        (
            {
                "ops": [
                    good,
                    {"op": "search", "user": user, "namespace_prefix": [], "query": "x", "limit": 90, "offset": 20},
                ]
            },
            422,
            "invalid_input",
        ),
        ({"ops": [good, {"op": "drop", "user": user}]}, 422, "invalid_input"),
        ({"ops": []}, 422, "invalid_input"),
        ({"ops": [good] * 101}, 422, "invalid_input"),
    ]
    with httpx.Client(base_url=server.base_url) as http:
        for body, status, code in cases:
            reply = http.post(f"/v1/apps/{APP}/store/batch", json=body)
            assert (reply.status_code, reply.json()["error"]["code"]) == (status, code), body["ops"][-1]
        assert http.get(f"/v1/apps/{APP}/users/{user}/export").json()["store"] == []


def test_store_items_are_memory_searched_exported_metered_and_erased(
    store: AgentMemoryStore, server: LiveServer
) -> None:
    import time

    user = "u-" + uuid.uuid4().hex[:8]
    store.put(("memories", user, "prefs"), "theme", {"content": "The user prefers dark mode"})
    with httpx.Client(base_url=server.base_url) as http:
        scope = f"/v1/apps/{APP}/users/{user}"
        hits = http.post(scope + "/memories/search", json={"query": "dark mode"}).json()["entries"]
        assert [h["metadata"]["store.key"] for h in hits] == ["theme"]
        exported = http.get(scope + "/export").json()
        assert [(i["namespace"], i["key"], i["value"]) for i in exported["store"]] == [
            (["prefs"], "theme", {"content": "The user prefers dark mode"})
        ]
        assert len(exported["entries"]) == 1
        usage = http.get(f"/v1/apps/{APP}/usage").json()["days"][-1]
        assert usage["items_stored"] >= 1
        assert usage["embeddings"] >= 1
        deletion = http.delete(scope).json()
        for _ in range(200):
            status = http.get(f"{scope}/deletions/{deletion['deletion_id']}").json()
            if status["status"] != "RUNNING":
                break
            time.sleep(0.05)
        assert status["status"] == "SUCCEEDED"
        assert http.get(scope + "/export").json()["store"] == []
    assert store.get(("memories", user, "prefs"), "theme") is None
    assert store.search(("memories", user), query="dark mode") == []
    assert store.list_namespaces(prefix=("memories", user)) == []


def test_the_store_route_is_in_the_openapi_document(server: LiveServer) -> None:
    document = httpx.get(server.base_url + "/v1/openapi.json").json()
    operation = document["paths"]["/v1/apps/{app}/store/batch"]["post"]
    assert "StoreBatchRequest" in str(operation["requestBody"])
    assert "StoreBatchResults" in str(operation["responses"])


def test_a_search_over_large_values_completes_within_the_response_budget(store: AgentMemoryStore) -> None:
    """Twelve values of 240 KB (480 KB each on the wire) are more than one 6 MB Lambda answer: the service cuts
    the search at its budget and the store asks for the rest (issue 24, point 3)."""
    namespace = ("memories", "u-" + uuid.uuid4().hex[:8], "blobs")
    for i in range(12):
        store.put(namespace, f"b{i:02}", {"content": "large words", "blob": "\\" * 120_000}, index=False)
    found = store.search(namespace, limit=12)
    assert sorted(item.key for item in found) == [f"b{i:02}" for i in range(12)]
    got = store.batch([GetOp(namespace, f"b{i:02}") for i in range(12)])
    assert [item.key for item in got if item is not None] == [f"b{i:02}" for i in range(12)]


def test_a_batch_that_reads_too_much_for_one_request_is_split(store: AgentMemoryStore) -> None:
    """100 searches of 100 items read 10,000 rows, over one request's budget: the store splits the batch
    and every search gets its items, and the batch's writes land after its reads (issue 24, point 4)."""
    namespace = ("memories", "u-" + uuid.uuid4().hex[:8])
    store.batch([PutOp(namespace, f"k{i:03}", {"n": i}) for i in range(100)])
    searches: list[Op] = [SearchOp(namespace, limit=100) for _ in range(99)]
    results = store.batch([*searches, PutOp(namespace, "late", {"n": -1})])
    assert all(len(found) == 100 for found in results[:99])  # type: ignore[arg-type]
    assert store.get(namespace, "late") is not None
