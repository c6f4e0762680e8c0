"""Helpers for the erasure tests: seeding a user's data, a vector-index test double, and the moto
Step Functions harness that executes the real ASL file with its Lambda tasks routed in-process."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from unittest import mock

from agentmem import users
from agentmem.graph import records as graph_records
from agentmem.keys import Scope, UserRef
from agentmem.memory import records
from agentmem.search.inverted_index import Ranking
from agentmem.search.partition import PartitionIndex, bm25
from agentmem.settings import Settings
from agentmem.stores.table import Add, Delete, Put
from agentmem.vectors.port import VectorHit, VectorRecord
from tests.conftest import REPO_ROOT
from tests.support import ApiClient, scope_path, text_entry

if TYPE_CHECKING:
    from agentmem.stores.dynamo_table import DynamoTable

WORKFLOW = REPO_ROOT / "infra" / "workflows" / "delete_user.asl.json"
STEPS_FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:deletion-steps"
ROLE_ARN = "arn:aws:iam::123456789012:role/deletion-workflow"
PROJECTS = ("alpha", "beta", "gamma")


class InMemoryVectorIndex:
    """TEST DOUBLE of the VectorIndex port, an external index (``derived``) as OpenSearch is: enough to
    prove the workflow's parallel branch empties the index for one user and nobody else."""

    name = "in-memory-test-double"
    derived = True
    visibility_seconds = 0
    filters_keyword = False
    max_entries: int | None = None

    def __init__(self) -> None:
        self._records: dict[tuple[Scope, str], VectorRecord] = {}
        self._lock = threading.Lock()

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        with self._lock:
            for record in records:
                self._records[(record.scope, record.entry_id)] = record

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None:
        with self._lock:
            for entry_id in entry_ids:
                self._records.pop((scope, entry_id), None)

    def search(self, scopes: Sequence[Scope], vector: Sequence[float], top_k: int, model_id: str) -> list[VectorHit]:
        return []

    def _held(self, scope: Scope) -> PartitionIndex:
        with self._lock:
            held = [r for (s, _), r in self._records.items() if s == scope]
        items = [
            {
                "pk": scope.partition,
                "sk": records.entry_sk(r.entry_id),
                "id": r.entry_id,
                "author": r.author,
                "timestamp": r.timestamp,
                records.EXPIRES_AT: r.expires_at,
                records.TERMS: records.encoded_terms(r.terms),
                records.CONTEXT_TERMS: records.encoded_terms(r.context_terms),
                "length": r.length,
                records.CONTEXT_LENGTH: r.context_length,
            }
            for r in held
        ]
        return PartitionIndex.of(None, 0, items)

    def keyword(
        self, scopes: Sequence[Scope], words: Sequence[str], now: str, *, contextual: bool = False, where: Any = None
    ) -> Ranking:
        return bm25([(s.partition, self._held(s)) for s in scopes], words, now, contextual=contextual)

    def documents_with_all(self, scope: Scope, words: Sequence[str], now: str) -> set[str]:
        return self._held(scope).with_all(words, now)

    def other_models(self, scopes: Sequence[Scope], model_id: str) -> list[str]:
        with self._lock:
            held = {r.model_id for (scope, _), r in self._records.items() if scope in scopes and r.model_id}
            return sorted(held - {model_id})

    def delete_user(self, user: UserRef) -> int:
        with self._lock:
            doomed = [key for key in self._records if key[0].user_ref == user]
            for key in doomed:
                del self._records[key]
            return len(doomed)

    def count_user(self, user: UserRef) -> int:
        with self._lock:
            return sum(1 for scope, _ in self._records if scope.user_ref == user)

    def health(self) -> str:
        return "ok"


def graph_like_items(scope: Scope, tag: str) -> list[dict[str, Any]]:
    """The graph's items as its writes make them (graph/records.py): an entity, an observation, a relation,
    an index posting and statistics (internal: not exported), two episodes."""
    pk, project, at = scope.partition, scope.project_id, "2026-01-01T00:00:00.000Z"
    name = f"Entity {tag}"

    def episode(number: int, author: str) -> dict[str, Any]:
        sk = graph_records.episode_sk(f"{tag}-{number}")
        text = f"episode {tag} {'one' if number == 1 else 'two'}"
        return {
            "pk": pk,
            "sk": sk,
            "id": f"{tag}-{number}",
            "session_id": "s1",
            "project_id": project,
            "author": author,
            "text": text,
            "timestamp": at,
            "tokens": text.split(),
            "length": 3,
        }

    return [
        users.registry_item(scope),
        graph_records.entity_item(
            pk, project, name, "person", created_at=at, updated_at=at, version=1, facts={"d1": f"{tag}-o1"}
        ),
        graph_records.observation_item(
            pk, project, name, f"{tag}-o1", f"likes {tag}", valid_from=at, recorded_at=at, tokens=["likes", tag]
        ),
        graph_records.relation_item(pk, project, f"{tag}-r1", name, "knows", "Bob", at),
        {"pk": pk, "sk": f"GT#entity#{tag}", "tf": 1, "dl": 2},
        {"pk": pk, "sk": "GSTATS", "docs": 1, "length": 2, "version": 1},
        episode(1, "user"),
        episode(2, "model"),
    ]


@dataclass
class SeededUser:
    user: UserRef
    entries: int = 0
    graph_items: int = 0
    episodes: int = 0
    vectors: int = 0
    entry_ids: list[tuple[Scope, str]] = field(default_factory=list)

    @property
    def path(self) -> str:
        return scope_path(self.user.app, self.user.user)


def seed_user(api: ApiClient, table: Any, user: UserRef, vectors: InMemoryVectorIndex | None = None) -> SeededUser:
    """Entries (through the real API) in the global scope and three projects, graph-like items and
    episodes in each scope, and one vector per entry in the test-double index."""
    seeded = SeededUser(user)
    path = scope_path(user.app, user.user)
    for project in (None, *PROJECTS):
        body: dict[str, Any] = {"entries": [text_entry(f"{user.user} fact {i} in {project}") for i in range(3)]}
        if project:
            body["project_id"] = project
        reply = api.put(f"{path}/sessions/s-{project}/memories", body)
        assert reply.status == 200, reply.body
        seeded.entries += 3
        scope = user.scope(project)
        table.batch_write(puts=graph_like_items(scope, project or "global"))
        seeded.graph_items += 3
        seeded.episodes += 2
        listed = api.get(f"{path}/memories", query={"project_id": project} if project else None).body["entries"]
        for entry in listed:
            if entry["project_id"] == project:
                seeded.entry_ids.append((scope, entry["id"]))
    if vectors is not None:
        vectors.upsert(
            [VectorRecord(scope, entry_id, [0.1, 0.2], "test-model") for scope, entry_id in seeded.entry_ids]
        )
        seeded.vectors = len(seeded.entry_ids)
    return seeded


def export_all(api: ApiClient, path: str) -> dict[str, list[Any]]:
    """Follow the export's cursor to the end; flatten the pages."""
    sections = ("entries", "entities", "relations", "observations", "episodes")
    collected: dict[str, list[Any]] = {name: [] for name in sections}
    cursor = None
    for _ in range(10_000):
        reply = api.get(f"{path}/export", query={"cursor": cursor} if cursor else None)
        assert reply.status == 200, reply.body
        collected["entries"] += reply.body["entries"]
        collected["episodes"] += reply.body["episodes"]
        for kind in ("entities", "relations", "observations"):
            collected[kind] += reply.body["graph"][kind]
        cursor = reply.body["next_cursor"]
        if cursor is None:
            return collected
    raise AssertionError("the export never ended")


def wait_for_status(api: ApiClient, path: str, deletion_id: str, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        reply = api.get(f"{path}/deletions/{deletion_id}")
        assert reply.status == 200, reply.body
        if reply.body["status"] != "RUNNING" or time.monotonic() > deadline:
            return reply.body  # type: ignore[no-any-return]
        time.sleep(0.05)


StepHook = Callable[[dict[str, Any]], None]


class StepRouter:
    """Replaces moto's Lambda invoke (which, without Docker, echoes the payload) with a call of the
    real steps handler, functions/deletion/handler.py, answering exactly as Lambda does: the result as
    JSON, or an ``x-amz-function-error`` header and ``{"errorType", "errorMessage"}`` when it raises."""

    def __init__(self) -> None:
        self.before_step: StepHook | None = None
        self.calls: list[tuple[str, str | None]] = []
        """(step, project_id) of every invoke, in order."""

    def invoke(
        self, backend: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        from functions.deletion.handler import handler

        event = json.loads(body)
        self.calls.append((event.get("step"), event.get("project_id")))
        try:
            if self.before_step is not None:
                self.before_step(event)
            result = handler(event, None)
        except Exception as exc:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}).encode()
        return json.dumps(result).encode()


@contextmanager
def moto_workflow() -> Iterator[tuple[str, StepRouter]]:
    """Inside mock_aws with moto's ASL interpreter on: deploy the ASL file that CDK deploys (same
    substitution) and route its Lambda tasks to the in-process handler. Yields the state machine ARN."""
    import boto3
    from moto import mock_aws

    router = StepRouter()

    def routed(self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any) -> bytes:
        return router.invoke(self, function_name, qualifier, body, headers, response_headers)

    config = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    with (
        mock_aws(config=config),  # type: ignore[arg-type]
        mock.patch("moto.awslambda_simple.models.LambdaSimpleBackend.invoke", routed),
    ):
        definition = WORKFLOW.read_text().replace("${DeletionStepsFunctionArn}", STEPS_FUNCTION_ARN)
        client = boto3.client("stepfunctions", region_name="us-east-1")
        arn = client.create_state_machine(name="delete-user", definition=definition, roleArn=ROLE_ARN)[
            "stateMachineArn"
        ]
        yield arn, router


@contextmanager
def moto_deployment(table_name: str, **settings: Any) -> Iterator[tuple[Settings, DynamoTable, StepRouter]]:
    """:func:`moto_workflow` with a DynamoDB table created in it, and the settings of a deployment that
    stores in that table and erases through that state machine (``settings`` adds or overrides)."""
    from agentmem.stores.dynamo_table import DynamoTable

    with moto_workflow() as (arn, router):
        table = DynamoTable(table_name, region_name="us-east-1")
        table.create()
        configured = Settings(
            **{
                "store": "dynamodb",
                "table_name": table_name,
                "deletion_runner": "stepfunctions",
                "deletion_state_machine_arn": arn,
                "receipt_key": "test-receipt-key",
                **settings,
            }
        )
        yield configured, table, router


def execution(arn: str, deletion_id: str) -> dict[str, Any]:
    import boto3

    client = boto3.client("stepfunctions", region_name="us-east-1")
    execution_arn = arn.replace(":stateMachine:", ":execution:") + ":" + deletion_id
    deadline = time.monotonic() + 120
    while True:
        described = client.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING" or time.monotonic() > deadline:
            return described  # type: ignore[no-any-return]
        time.sleep(0.05)


WriteMatcher = Callable[[list[Any]], bool]


class HeldTable:
    """The real adapter with one write held: the first write whose operations match ``hold_when`` waits
    (before reaching the store) until ``release`` is set. Everything else goes straight through."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self.hold_when: WriteMatcher | None = None
        self.reached = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def _maybe_hold(self, ops: list[Any]) -> None:
        matches = self.hold_when
        if matches is not None and matches(ops):
            self.hold_when = None
            self.reached.set()
            assert self.release.wait(60), "the held write was never released"

    def put(self, item: dict[str, Any], condition: Any = None) -> None:
        self._maybe_hold([Put(item, condition)])
        self._table.put(item, condition)

    def delete(self, pk: str, sk: str, condition: Any = None) -> None:
        self._maybe_hold([Delete(pk, sk, condition)])
        self._table.delete(pk, sk, condition)

    def batch_write(self, puts: Sequence[dict[str, Any]] = (), deletes: Sequence[tuple[str, str]] = ()) -> None:
        self._maybe_hold([*(Put(item) for item in puts), *(Delete(pk, sk) for pk, sk in deletes)])
        self._table.batch_write(puts=puts, deletes=deletes)

    def transact_write(self, ops: Sequence[Any]) -> None:
        self._maybe_hold(list(ops))
        self._table.transact_write(ops)

    def transact_write_each(self, batches: Sequence[Sequence[Any]]) -> list[Any]:
        self._maybe_hold([op for ops in batches for op in ops])
        return self._table.transact_write_each(batches)  # type: ignore[no-any-return]

    def increment(self, pk: str, sk: str, deltas: Any, condition: Any = None, **options: Any) -> dict[str, Any]:
        self._maybe_hold([Add(pk, sk, deltas, condition)])
        return self._table.increment(pk, sk, deltas, condition, **options)  # type: ignore[no-any-return]


def puts_sort_key(ops: list[Any], prefix: str) -> bool:
    """Whether the write creates or replaces an item whose sort key starts with ``prefix``."""
    return any(isinstance(op, Put) and str(op.item["sk"]).startswith(prefix) for op in ops)


def keys_of_user(table: Any, user: UserRef) -> list[tuple[str, str]]:
    """Every (pk, sk) of the whole store that belongs to the user, in any partition (orphans included)."""
    from agentmem.keys import scope_of_partition, user_of_partition
    from agentmem.stores.dynamo_table import DynamoTable
    from agentmem.stores.sqlite_table import SqliteTable

    raw = getattr(table, "_table", table)
    if isinstance(raw, SqliteTable):
        rows = [(str(pk), str(sk)) for pk, sk in raw._connection().execute("SELECT pk, sk FROM items").fetchall()]
    elif isinstance(raw, DynamoTable):
        rows = []
        args: dict[str, Any] = {"TableName": raw.table_name, "ProjectionExpression": "pk, sk"}
        while True:
            page = raw.client.scan(**args)
            rows += [(item["pk"]["S"], item["sk"]["S"]) for item in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            args["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    else:
        raise TypeError(f"unknown table {type(raw).__name__}")
    mine = []
    for pk, sk in rows:
        scope = scope_of_partition(pk)
        if (scope.user_ref if scope is not None else user_of_partition(pk)) == user:
            mine.append((pk, sk))
    return sorted(mine)


class Writer(threading.Thread):
    """Runs one request in its own thread and keeps its answer (or what it raised)."""

    def __init__(self, call: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self._call = call
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._call()
        except BaseException as exc:  # the test asserts on it
            self.error = exc

    def answer(self, timeout: float = 60) -> Any:
        self.join(timeout)
        assert not self.is_alive(), "the writer never finished"
        if self.error is not None:
            raise self.error
        return self.result
