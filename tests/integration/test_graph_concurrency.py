"""Concurrent writers on one entity, with real threads, against SQLite and DynamoDB (moto).

moto's in-process DynamoDB is not thread-safe inside one request (it copies its tables during a
transaction), while real DynamoDB applies each request atomically. So on the moto table each Table
call runs under a lock: requests of different threads still interleave freely between calls, which is
exactly the race a real table sees (read, then a conditional write that may lose).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentmem.errors import ConditionFailed
from agentmem.graph.service import GraphMemoryService
from agentmem.keys import Scope
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.stores.table import Table

SCOPE = Scope("demo", "alice")
THREADS = 6


class _RacyTable:
    """The real table, arranged so that threads really race: once armed, each thread's first call
    waits until every thread has arrived (they start together), and every read is followed by a pause
    (their read-then-write windows overlap; without it the GIL lets one finish before the next starts).
    On moto each call also runs under a lock: one request at a time, as a real DynamoDB applies them."""

    READ_PAUSE = 0.004

    def __init__(self, table: Table) -> None:
        self._table = table
        self._lock = threading.Lock() if isinstance(table, DynamoTable) else None
        self._barrier: threading.Barrier | None = None
        self._started = threading.local()
        self.conflicts = 0

    def arm(self, parties: int) -> None:
        self._barrier = threading.Barrier(parties)

    def disarm(self) -> None:
        self._barrier = None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._table, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._barrier is not None and not getattr(self._started, "done", False):
                self._started.done = True
                self._barrier.wait(timeout=30)
            try:
                if self._lock is None:
                    result = method(*args, **kwargs)
                else:
                    with self._lock:
                        result = method(*args, **kwargs)
            except ConditionFailed:
                self.conflicts += 1
                raise
            if name in ("get", "batch_get", "query"):
                time.sleep(self.READ_PAUSE)
            return result

        return call


def _service(table: Table) -> tuple[GraphMemoryService, _RacyTable]:
    racy = _RacyTable(table)
    return GraphMemoryService(racy), racy  # type: ignore[arg-type]


def _run_together(racy: _RacyTable, jobs: list[Callable[[], Any]]) -> list[Any]:
    racy.arm(len(jobs))
    try:
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            return [f.result() for f in [pool.submit(job) for job in jobs]]
    finally:
        racy.disarm()


def _current_facts(graph: GraphMemoryService) -> list[str]:
    entities = graph.read_graph(SCOPE)["entities"]
    return sorted(o["content"] for e in entities for o in e["observations"])


def test_concurrent_creates_of_one_entity_keep_every_observation_and_one_entity(table: Table) -> None:
    # Given a graph service and a first write (so the store client exists before threads start)
    graph, racy = _service(table)
    graph.create_entities(SCOPE, [{"name": "Warmup"}])
    # When several threads create the same new entity at once, each with its own facts
    jobs = [
        (lambda i=i: graph.create_entities(SCOPE, [{"name": "Alice", "observations": [f"fact {i}a", f"fact {i}b"]}]))
        for i in range(THREADS)
    ]
    _run_together(racy, jobs)
    # Then the writers did collide (some conditional writes lost), yet there is exactly one Alice
    assert racy.conflicts > 0
    entities = graph.read_graph(SCOPE)["entities"]
    assert [e["name"] for e in entities] == ["Alice", "Warmup"]
    assert _current_facts(graph) == sorted(f"fact {i}{s}" for i in range(THREADS) for s in "ab")
    # And search counts each of them once
    [hit] = graph.search_nodes(SCOPE, "fact")["results"]
    assert hit["score"] == 2 * THREADS


def test_concurrent_identical_observations_are_stored_once(table: Table) -> None:
    graph, racy = _service(table)
    graph.create_entities(SCOPE, [{"name": "Alice"}])
    jobs = [(lambda: graph.add_observations(SCOPE, "Alice", ["likes tea"])) for _ in range(THREADS)]
    added = _run_together(racy, jobs)
    assert racy.conflicts > 0
    assert sum(len(a) for a in added) == 1
    assert _current_facts(graph) == ["likes tea"]
    assert graph.search_nodes(SCOPE, "tea")["results"][0]["score"] == 1


def test_concurrent_remember_and_type_change_lose_nothing(table: Table) -> None:
    graph, racy = _service(table)
    graph.create_entities(SCOPE, [{"name": "Alice", "entity_type": "person"}])
    jobs: list[Callable[[], Any]] = [
        (lambda i=i: graph.remember(SCOPE, "Alice", [f"note {i}"])) for i in range(THREADS - 1)
    ]
    jobs.append(lambda: graph.create_entities(SCOPE, [{"name": "Alice", "entity_type": "friend"}]))
    _run_together(racy, jobs)
    [alice] = graph.read_graph(SCOPE)["entities"]
    assert racy.conflicts > 0
    assert alice["entity_type"] == "friend"
    assert sorted(o["content"] for o in alice["observations"]) == sorted(f"note {i}" for i in range(THREADS - 1))
    assert graph.search_nodes(SCOPE, "friend")["results"][0]["score"] == 2
    assert graph.search_nodes(SCOPE, "person")["results"] == []
    # And the profile card lists Alice once
    assert graph.profile_card(SCOPE)["text"].count("• Alice") == 1


def test_concurrent_supersedes_of_one_fact_leave_one_replacement(table: Table) -> None:
    graph, racy = _service(table)
    [alice] = graph.create_entities(SCOPE, [{"name": "Alice", "observations": ["lives in Paris"]}])
    obs_id = alice["observations"][0]["id"]

    def supersede(city: str) -> str:
        try:
            graph.supersede_observation(SCOPE, obs_id, f"lives in {city}")
        except Exception as exc:  # the losers get a conflict
            return type(exc).__name__
        return "ok"

    outcomes = _run_together(racy, [(lambda c=c: supersede(c)) for c in ("Berlin", "Rome", "Oslo", "Lima")])
    assert outcomes.count("ok") == 1
    assert racy.conflicts > 0
    assert set(outcomes) - {"ok"} <= {"Conflict"}
    assert len(_current_facts(graph)) == 1
    assert len(graph.history(SCOPE, "Alice")["observations"]) == 2
