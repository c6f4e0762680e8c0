"""The cost of the largest requests the API accepts (docs/search.md, "Caps"): wall time through the API
handler on SQLite and on moto DynamoDB (in-process), and the DynamoDB calls, items and write units a
botocore event hook counts. Run: python bench/bench_request_cost.py

Write units are DynamoDB's on-demand accounting: 1 per started KiB of each item put (deletes and
condition checks 1), doubled inside a transaction. moto's time is an emulator's, not DynamoDB's; the
call count times a real round trip (~5-10 ms in region) is the better estimate of the cloud latency.
On SQLite the same figures are derived from the Table-port calls (batches of 25 writes, 100 reads).
"""

from __future__ import annotations

import json
import math
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import emulated_aws, scaled, vocabulary

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Check, Put, Table, item_size

USERS = "/v1/apps/bench/users"
BODY_LIMIT = 6 * 1024 * 1024
ENTRIES = scaled(500, 5)
"""Entries (or entities) of the largest writes: 500 is the most a request may hold."""
_WRITES = {"PutItem", "DeleteItem", "UpdateItem"}


def _wire_size(value: dict[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind in ("S", "N"):
        return len(str(inner).encode("utf-8"))
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + _wire_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + _wire_size(v) for k, v in inner.items())
    return sum(len(str(v).encode("utf-8")) for v in inner)  # SS, NS, BS


def _units(item: dict[str, Any]) -> int:
    return max(1, math.ceil(sum(len(k.encode()) + _wire_size(v) for k, v in item.items()) / 1024))


class _Counts:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.items_written = 0
        self.write_units = 0
        self.items_read = 0

    def reset(self) -> None:
        self.calls.clear()
        self.items_written = self.write_units = self.items_read = 0

    def summary(self) -> str:
        calls = ", ".join(f"{name} {n}" for name, n in sorted(self.calls.items()))
        return (
            f"{sum(self.calls.values())} calls ({calls}); {self.items_written} items written, "
            f"{self.write_units} WCU (${self.write_units * 1.25e-6:.4f} on demand); {self.items_read} items read"
        )


class DynamoCounter(_Counts):
    """Counts what the table's boto3 client sends, by a ``before-parameter-build`` event hook."""

    def __init__(self, table: DynamoTable) -> None:
        super().__init__()
        table.client.meta.events.register("before-parameter-build.dynamodb", self._on_call)

    def _on_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        self.calls[name] += 1
        if name in _WRITES:
            self.items_written += 1
            self.write_units += _units(params["Item"]) if name == "PutItem" else 1
        elif name == "BatchWriteItem":
            for requests in params["RequestItems"].values():
                for request in requests:
                    self.items_written += 1
                    put = request.get("PutRequest")
                    self.write_units += _units(put["Item"]) if put else 1
        elif name == "TransactWriteItems":
            for op in params["TransactItems"]:
                self.items_written += "ConditionCheck" not in op
                put = op.get("Put")
                self.write_units += 2 * (_units(put["Item"]) if put else 1)
        elif name == "GetItem":
            self.items_read += 1
        elif name == "BatchGetItem":
            self.items_read += sum(len(r["Keys"]) for r in params["RequestItems"].values())


class PortCounter(_Counts):
    """The DynamoDB calls and write units the same Table-port calls would cost (for the SQLite run:
    batches of 25 writes and 100 reads, 2x units in a transaction), by wrapping the adapter's methods."""

    def __init__(self, table: Table) -> None:
        super().__init__()
        names = ("put", "delete", "batch_write", "transact_write", "transact_write_each", "increment", "get")
        for name in (*names, "batch_get", "query"):
            setattr(table, name, self._wrap(name, getattr(table, name)))

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self._count(name, *args, **kwargs)
            return method(*args, **kwargs)

        return counted

    def _count(self, name: str, *args: Any, **kwargs: Any) -> None:
        if name in ("put", "delete", "increment"):
            self.calls[{"put": "PutItem", "delete": "DeleteItem", "increment": "UpdateItem"}[name]] += 1
            self.items_written += 1
            self.write_units += math.ceil(item_size(args[0]) / 1024) if name == "put" else 1
        elif name == "batch_write":
            puts, deletes = kwargs.get("puts", args[0] if args else ()), kwargs.get("deletes", ())
            total = len(puts) + len(deletes)
            self.calls["BatchWriteItem"] += math.ceil(total / 25)
            self.items_written += total
            self.write_units += sum(max(1, math.ceil(item_size(i) / 1024)) for i in puts) + len(deletes)
        elif name in ("transact_write", "transact_write_each"):
            for ops in [args[0]] if name == "transact_write" else args[0]:
                self.calls["TransactWriteItems"] += 1
                self.items_written += sum(not isinstance(op, Check) for op in ops)
                self.write_units += sum(
                    2 * max(1, math.ceil(item_size(op.item) / 1024)) if isinstance(op, Put) else 2 for op in ops
                )
        elif name == "get":
            self.calls["GetItem"] += 1
            self.items_read += 1
        elif name == "batch_get":
            keys = args[0]
            self.calls["BatchGetItem"] += math.ceil(len(keys) / 100)
            self.items_read += len(keys)
        else:
            self.calls["Query"] += 1


def _text_entry(text: str) -> dict[str, Any]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def _words(rng: random.Random, words: list[str], size: int) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(words)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)


def largest_session() -> dict[str, Any]:
    """500 entries filling the 6 MB body with distinct-rich text: the most postings and entry bytes."""
    rng = random.Random(1)
    words = vocabulary(20_000)
    per_entry = (BODY_LIMIT - 10_000) // 500 - 80
    return {"entries": [_text_entry(_words(rng, words, per_entry)) for _ in range(ENTRIES)]}


def largest_entry() -> dict[str, Any]:
    """One entry at both limits: 64 KiB of CJK text (the most tokens) and 256 KiB of content as JSON."""
    text = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(64 * 1024 // 3))
    blob = "A" * (256 * 1024 - len(text.encode("utf-8")) - 200)
    parts = [{"text": text}, {"inline_data": {"mime_type": "image/png", "data": blob}}]
    return {"entry": {"content": {"role": "user", "parts": parts}, "author": "user"}}


def largest_graph_write() -> dict[str, Any]:
    """500 entities, each a name and a type of 32+ distinct tokens, 500 observations of 32+ tokens."""
    rng = random.Random(2)
    words = [w for w in vocabulary(20_000) if len(w) >= 4]
    per_fact = (BODY_LIMIT - 500 * 700) // 500 - 100
    entities = [
        {
            "name": _words(rng, words, 240)[:250],
            "entity_type": _words(rng, words, 240)[:250],
            "observations": [_words(rng, words, per_fact)],
        }
        for _ in range(ENTRIES)
    ]
    return {"entities": entities}


def longest_query() -> dict[str, Any]:
    text = "".join(chr(0x4E00 + (i * 104729) % 20000) for i in range(20_000))
    return {"query": text, "top_k": 100, "mode": "keyword"}


def _measure(counter: _Counts, label: str, call: Callable[[], Any]) -> None:
    counter.reset()
    started = time.perf_counter()
    status = call()
    elapsed = time.perf_counter() - started
    where = "moto" if isinstance(counter, DynamoCounter) else "sqlite"
    print(f"{label:<46} {where:<6} {status}  {elapsed:7.2f} s   {counter.summary()}", flush=True)


def _api(method: str, path: str, body: Any = None, query: str = "") -> int:
    """One request through the API's Lambda handler, as API Gateway sends it."""
    from agentmem.local.events import LocalContext, rest_event
    from functions.api.handler import handler

    raw = json.dumps(body, ensure_ascii=False) if body is not None else None
    response: dict[str, Any] = handler(rest_event(method, path, query=query, body=raw), LocalContext())  # type: ignore[arg-type]
    return int(response["statusCode"])


def _megabytes(body: Any) -> str:
    return f"{len(json.dumps(body)) / 1e6:.0f} MB"


def _run(table: Table, counter: _Counts, *, memory_writes_only: bool = False) -> None:
    from urllib.parse import urlencode

    set_container(Container(Settings(), table=table))
    session = largest_session()
    graph = largest_graph_write()
    q = urlencode({"q": longest_query()["query"]})
    # each write in a user (a partition) of its own; the searches read the session and the graph written
    requests: list[tuple[str, Callable[[], int]]] = [
        (
            f"PUT session: {ENTRIES} entries, {_megabytes(session)}",
            lambda: _api("PUT", f"{USERS}/u1/sessions/s1/memories", session),
        ),
        ("POST memories: 64 KiB CJK, 256 KiB entry", lambda: _api("POST", f"{USERS}/u2/memories", largest_entry())),
        (
            f"POST graph/episodes: {ENTRIES} entries, {_megabytes(session)}",
            lambda: _api("POST", f"{USERS}/u3/graph/episodes", {"session_id": "s1", **session}),
        ),
        (
            f"POST graph/entities: {ENTRIES} entities, {ENTRIES} facts",
            lambda: _api("POST", f"{USERS}/u4/graph/entities", graph),
        ),
        (
            "POST memories/search: 20,000-char CJK query",
            lambda: _api("POST", f"{USERS}/u1/memories/search", longest_query()),
        ),
        ("GET graph/search: 20,000-char CJK q", lambda: _api("GET", f"{USERS}/u4/graph/search", query=q)),
    ]
    for label, call in requests:
        if not memory_writes_only or label.startswith(("PUT", "POST memories:", "POST graph/episodes")):
            _measure(counter, label, call)
    set_container(None)


def main() -> None:
    print(
        f"request bodies: session {len(json.dumps(largest_session())) / 1e6:.2f} MB, "
        f"graph {len(json.dumps(largest_graph_write())) / 1e6:.2f} MB"
    )
    with tempfile.TemporaryDirectory() as tmp:
        table = SqliteTable(Path(tmp) / "bench.db")
        _run(table, PortCounter(table))
        table.close()
    from moto import mock_aws

    from tests.moto_support import serialise_moto_dynamodb

    serialise_moto_dynamodb()  # transactions backed up by their items, not by a copy of the whole table
    with mock_aws():
        dynamo = DynamoTable("bench-request-cost", region_name="us-east-1")
        dynamo.create()
        # moto reads every item of the table for each Query, so the searches (seconds per Query once the
        # table holds the 6 MB writes) take it minutes: they and the graph write are counted on SQLite,
        # whose figures equal the botocore counts for the writes measured here
        _run(dynamo, DynamoCounter(dynamo), memory_writes_only=True)


if __name__ == "__main__":
    import sys

    sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
    emulated_aws()
    main()
