"""DynamoDB calls and items per operation, counted by a botocore event hook on moto (in-process
``mock_aws``), for the memory and graph writes and reads of W1 and W2: the deterministic cost figure of
the write path (moto's wall time is an emulator's and is printed only beside it; a real round trip is
~5-10 ms in region, so calls x that is the better estimate of cloud latency).

Items written: PutItem, UpdateItem, DeleteItem 1 each, BatchWriteItem its requests, TransactWriteItems
its Put/Update/Delete (ConditionChecks apart). Items read: GetItem 1 when found, BatchGetItem and
TransactGetItems their responses, Query and Scan their Count. Run: ``python bench/run.py dynamo``.

moto 5.2 backs up the whole table once per item of every TransactWriteItems (a deep copy each, kept
for a rollback): a transaction of 100 items on a table of a few thousand copied it 100 times, and one
graph write ran for many minutes and gigabytes. Here it is copied once per transaction (the rollback
is the same); the counts come from the client and do not depend on it.
"""

from __future__ import annotations

import random
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from benchlib import emulated_aws, scaled, sentence, vocabulary

REGION = "us-east-1"
SEED_SESSIONS = 2


class CallCounter:
    """Counts every DynamoDB call a client makes, by operation, with the items it writes and reads."""

    def __init__(self, client: Any) -> None:
        self._lock = threading.Lock()
        self.reset()
        client.meta.events.register("provide-client-params.dynamodb.*", self._request)
        client.meta.events.register("after-call.dynamodb.*", self._response)

    def reset(self) -> None:
        with self._lock:
            self.calls: Counter[str] = Counter()
            self.written = 0
            self.checks = 0
            self.read = 0

    def _request(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        written = checks = 0
        if name in ("PutItem", "UpdateItem", "DeleteItem"):
            written = 1
        elif name == "BatchWriteItem":
            written = sum(len(requests) for requests in params.get("RequestItems", {}).values())
        elif name == "TransactWriteItems":
            for op in params.get("TransactItems", []):
                if "ConditionCheck" in op:
                    checks += 1
                else:
                    written += 1
        with self._lock:
            self.calls[name] += 1
            self.written += written
            self.checks += checks

    def _response(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        read = 0
        if name == "GetItem":
            read = int("Item" in parsed)
        elif name == "BatchGetItem":
            read = sum(len(items) for items in parsed.get("Responses", {}).values())
        elif name == "TransactGetItems":
            read = len(parsed.get("Responses", []))
        elif name in ("Query", "Scan"):
            read = int(parsed.get("Count", 0))
        with self._lock:
            self.read += read


def _measure(
    counter: CallCounter, label: str, calls: list[Callable[[], object]], per: tuple[str, int] | None = None
) -> None:
    counter.reset()
    seconds = []
    for call in calls:
        started = time.perf_counter()
        call()
        seconds.append((time.perf_counter() - started) * 1000)
    n = len(calls)
    total = sum(counter.calls.values())
    breakdown = ", ".join(f"{op} {count / n:.1f}" for op, count in counter.calls.most_common())
    line = (
        f"{label:<44} calls {total / n:7.1f}  written {counter.written / n:7.1f}  read {counter.read / n:7.1f}  "
        f"checks {counter.checks / n:5.1f}"
    )
    if per is not None:
        unit, count = per
        line += f"  | written per {unit} {counter.written / n / count:5.2f}"
    print(f"{line}  (moto p50 {statistics.median(seconds):.0f} ms, n={n})", flush=True)
    print(f"{'':<46}{breakdown}", flush=True)


def main() -> None:
    emulated_aws(REGION)
    import boto3
    from moto import mock_aws

    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores.dynamo_table import DynamoTable

    rng = random.Random(5)
    words = vocabulary()

    def entry(length: tuple[int, int] = (25, 25)) -> MemoryEntry:
        text = sentence(rng, words, length)
        return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"})

    from tests.moto_support import serialise_moto_dynamodb

    serialise_moto_dynamodb()  # one request at a time, transactions backed up by their items
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        table = DynamoTable("bench", client=client)
        table.create()
        counter = CallCounter(client)
        print("per operation (mean): DynamoDB calls, items written, items read, condition checks", flush=True)

        memory = MemoryService(table)  # no embedder: the item cost of the table alone
        scope = Scope("bench", "w1")
        # moto copies its whole table for every transaction: seeding stays small (the counts barely move)
        print(f"  memory: seeding {SEED_SESSIONS} sessions of 10 turns", file=sys.stderr, flush=True)
        for index in range(SEED_SESSIONS):
            memory.add_session(scope, f"seed{index}", [entry((8, 20)) for _ in range(10)])
        _measure(
            counter,
            f"memory add_entry (25 words), {SEED_SESSIONS * 10} in scope",
            [lambda: memory.add_entry(scope, entry())] * 5,
        )
        sessions = [[entry((8, 20)) for _ in range(10)] for _ in range(2)]
        _measure(
            counter,
            "memory add_session (10 turns of 8-20 words)",
            [lambda s=s, i=i: memory.add_session(scope, f"new{i}", s) for i, s in enumerate(sessions)],
            per=("memory", 10),
        )
        queries = [" ".join(rng.sample(sentence(rng, words, (8, 12)).split(), 3)) for _ in range(10)]
        _measure(
            counter,
            "memory keyword search (3 words, top 10)",
            [lambda q=q: memory.search(scope, q, top_k=10, mode="keyword") for q in queries],
        )

        graph = GraphMemoryService(table)
        gscope = Scope("bench", "w2")
        names = [f"Entity{i:05d}" for i in range(100)]

        def batch(start: int) -> list[dict[str, Any]]:
            return [
                {"name": n, "entity_type": "person", "observations": [sentence(rng, words, (6, 12)) for _ in range(5)]}
                for n in names[start : start + 100]
            ]

        print("  graph: create_entities", file=sys.stderr, flush=True)
        _measure(
            counter,
            "graph create_entities 100x5 (new entities)",
            [lambda: graph.create_entities(gscope, batch(0))],
            per=("observation", 500),
        )
        calls = sum(counter.calls.values())
        print(
            f"{'':<46}W2 create_entities 100x5: {calls} DynamoDB calls, {counter.written / 500:.2f} items written "
            f"per observation (targets <= 30 calls, <= 3 items)",
            flush=True,
        )
        relations = [
            {"source": rng.choice(names), "relation_type": "knows", "target": rng.choice(names)} for _ in range(100)
        ]
        _measure(counter, "graph create_relations 100", [lambda: graph.create_relations(gscope, relations)])
        _measure(
            counter,
            "graph add_observations 5 to a known entity",
            [
                lambda n=n: graph.add_observations(gscope, n, [sentence(rng, words, (6, 12)) for _ in range(5)])
                for n in rng.sample(names, 5)
            ],
            per=("observation", 5),
        )
        _measure(
            counter,
            "graph search_nodes (one word, limit 10)",
            [lambda w=w: graph.search_nodes(gscope, w, limit=10) for w in rng.sample(words[:300], scaled(20, 2))],
        )
        _measure(
            counter,
            "graph open_nodes (3 names)",
            [lambda: graph.open_nodes(gscope, rng.sample(names, 3))] * scaled(20, 2),
        )
        _measure(counter, "graph read_graph (first page, 100 entities)", [lambda: graph.read_graph(gscope)])
    in_process_create(scaled(10, 2))


def in_process_create(calls: int = 10) -> None:
    """create_entities 100x5 in-process on a SQLite file (W2's batches), as the graph grows to 100 x calls."""
    import tempfile
    from pathlib import Path

    from benchlib import report

    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope
    from agentmem.stores.sqlite_table import SqliteTable

    rng = random.Random(11)
    words = vocabulary()
    batches = [
        [
            {
                "name": f"Entity{i:05d}",
                "entity_type": "person",
                "observations": [sentence(rng, words, (6, 12)) for _ in range(5)],
            }
            for i in range(start, start + 100)
        ]
        for start in range(0, 100 * calls, 100)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        table = SqliteTable(Path(tmp) / "graph.db")
        graph = GraphMemoryService(table)
        scope = Scope("bench", "w2")
        seconds = []
        for entities in batches:
            started = time.perf_counter()
            graph.create_entities(scope, entities)
            seconds.append((time.perf_counter() - started) * 1000)
        table.close()
    report(f"graph create_entities 100x5 in-process (SQLite, to E={100 * calls:,})", seconds)


if __name__ == "__main__":
    main()
