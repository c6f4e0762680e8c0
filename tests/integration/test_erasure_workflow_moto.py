"""GDPR erasure end to end in the cloud shape: the API starts the ASL file (the one CDK deploys) on moto's
Step Functions interpreter, whose Lambda tasks run the real steps handler in-process, against moto
DynamoDB. The vector index here is a test double (see InMemoryVectorIndex)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from agentmem import users
from agentmem.container import Container, get_container, set_container
from agentmem.deletion import records, steps
from agentmem.deletion.runners import LocalRunner, StepFunctionsRunner
from agentmem.deletion.service import DeletionService
from agentmem.errors import RateLimited
from agentmem.keys import UserRef
from agentmem.stores.dynamo_table import DynamoTable
from tests.erasure_support import (
    HeldTable,
    InMemoryVectorIndex,
    StepRouter,
    Writer,
    execution,
    export_all,
    graph_like_items,
    keys_of_user,
    moto_deployment,
    puts_sort_key,
    seed_user,
    wait_for_status,
)
from tests.support import ApiClient, text_entry

pytestmark = pytest.mark.xdist_group("erasure-moto")


@dataclass
class Cloud:
    api: ApiClient
    table: DynamoTable
    vectors: InMemoryVectorIndex
    arn: str
    router: StepRouter


@pytest.fixture
def cloud() -> Iterator[Cloud]:
    with moto_deployment("agent-memory-erasure", deletion_batch_size=200, deletion_drain_seconds=0) as (
        settings,
        table,
        router,
    ):
        vectors = InMemoryVectorIndex()
        set_container(Container(settings, table=table, vector_index=vectors))
        try:
            yield Cloud(ApiClient(), table, vectors, str(settings.deletion_state_machine_arn), router)
        finally:
            set_container(None)


def _strings(value: Any) -> Iterator[str]:
    """Every string inside ``value``, inside the JSON documents it holds as strings too."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value
        if value[:1] in "{[":
            with contextlib.suppress(ValueError):
                yield from _strings(json.loads(value))


def reinstall(cloud: Cloud, **parts: Any) -> None:
    """Install a container of the same settings, table and vector index with some parts replaced."""
    set_container(Container(get_container().settings, table=cloud.table, vector_index=cloud.vectors, **parts))


def test_user_in_three_projects_is_erased_and_nobody_else_is_touched(cloud: Cloud) -> None:
    # Given a user with entries, graph items and episodes in the global scope and three projects,
    # another user of the same app, and the same user id in another app
    target = seed_user(cloud.api, cloud.table, UserRef("shop", "ana"), cloud.vectors)
    neighbour = seed_user(cloud.api, cloud.table, UserRef("shop", "bob"), cloud.vectors)
    namesake = seed_user(cloud.api, cloud.table, UserRef("clinic", "ana"), cloud.vectors)
    neighbour_before = export_all(cloud.api, neighbour.path)
    namesake_before = export_all(cloud.api, namesake.path)
    assert len(export_all(cloud.api, target.path)["entries"]) == 12

    # When the user is deleted through the API
    started = cloud.api.delete(target.path)
    assert started.status == 202, started.body
    assert started.body["status"] == "RUNNING"
    described = execution(cloud.arn, started.body["deletion_id"])

    # Then the execution succeeded, the status route reports the counts per store
    assert described["status"] == "SUCCEEDED", described
    status = wait_for_status(cloud.api, target.path, started.body["deletion_id"])
    assert status["status"] == "SUCCEEDED"
    assert status["deleted"] == {"entries": 12, "vectors": 12, "graph_items": 12, "episodes": 8}
    assert status["started_at"] <= status["finished_at"]
    # and nothing is left for the user: export empty, no vector, no item in any partition of theirs
    assert export_all(cloud.api, target.path) == {
        "entries": [],
        "entities": [],
        "relations": [],
        "observations": [],
        "episodes": [],
    }
    assert cloud.vectors.count_user(target.user) == 0
    for project in (None, "alpha", "beta", "gamma"):
        assert cloud.table.query(target.user.scope(project).partition).items == []
    assert cloud.table.query(target.user.partition).items == []
    # while the other user and the namesake in the other app keep everything
    assert export_all(cloud.api, neighbour.path) == neighbour_before
    assert export_all(cloud.api, namesake.path) == namesake_before
    assert cloud.vectors.count_user(neighbour.user) == 12
    assert cloud.vectors.count_user(namesake.user) == 12
    # and the receipt names nobody: a keyed hash, no raw user id, no content
    receipt = cloud.table.get(*records.request_key("shop", started.body["deletion_id"]))
    assert receipt is not None
    assert "ana" not in {str(v) for v in receipt.values()}
    assert receipt["user_hash"] == records.user_hash(b"test-receipt-key", target.user)
    # and the execution's input and history (Step Functions keeps them 90 days) name nobody either
    assert json.loads(described["input"]) == {
        "deletion_id": started.body["deletion_id"],
        "app": "shop",
        "attempt": 0,
        "redrive": 0,
        "delay_seconds": 0,
    }
    client = boto3.client("stepfunctions", region_name="us-east-1")
    history = client.get_execution_history(executionArn=described["executionArn"])["events"]
    assert len(history) > 10
    assert "ana" not in set(_strings(history))
    # and the user may write again once the erasure is over
    assert cloud.api.post(f"{target.path}/memories", {"entry": text_entry("fresh start")}).status == 201


def test_writes_during_deletion_get_409_and_reads_still_work(cloud: Cloud) -> None:
    # Given a user with data, and a workflow held at its verification step
    target = seed_user(cloud.api, cloud.table, UserRef("shop", "ana"))
    reached, release = threading.Event(), threading.Event()

    def hold_at_verify(event: dict[str, object]) -> None:
        if event["step"] == "verify":
            reached.set()
            release.wait(60)

    cloud.router.before_step = hold_at_verify
    started = cloud.api.delete(target.path)
    assert started.status == 202
    assert reached.wait(60)

    # When the user writes while the deletion runs
    write = cloud.api.post(f"{target.path}/memories", {"entry": text_entry("sneaking in"), "project_id": "alpha"})
    session = cloud.api.put(f"{target.path}/sessions/s9/memories", {"entries": [text_entry("also sneaking")]})

    # Then every write is refused with 409 and the error body, and reads still answer
    assert write.status == 409
    assert write.error_code == "user_deletion_in_progress"
    assert session.status == 409
    assert cloud.api.get(f"{target.path}/export").status == 200
    assert cloud.api.get(f"{target.path}/deletions/{started.body['deletion_id']}").body["status"] == "RUNNING"
    # and a second DELETE while it runs returns the same deletion
    again = cloud.api.delete(target.path)
    assert again.status == 202
    assert again.body["deletion_id"] == started.body["deletion_id"]

    release.set()
    assert execution(cloud.arn, started.body["deletion_id"])["status"] == "SUCCEEDED"
    assert export_all(cloud.api, target.path)["entries"] == []


@pytest.mark.slow
def test_user_with_5000_items_is_erased_in_bounded_batches(cloud: Cloud) -> None:
    # Given a user holding 5,000 entries across two scopes (seeded with batch writes)
    user = UserRef("shop", "hoarder")
    items = []
    for project, count in ((None, 2500), ("big", 2500)):
        scope = user.scope(project)
        items.append(users.registry_item(scope))
        items += [
            {
                "pk": scope.partition,
                "sk": f"E#{i:06d}",
                "id": f"{i:06d}",
                "project_id": project,
                "content": '{"role":"user","parts":[{"text":"x"}]}',
                "timestamp": "2026-01-01T00:00:00.000Z",
            }
            for i in range(count)
        ]
    cloud.table.batch_write(puts=items)

    # When the user is deleted
    started = cloud.api.delete("/v1/apps/shop/users/hoarder")
    described = execution(cloud.arn, started.body["deletion_id"])

    # Then the execution finished, in many bounded steps, and every item is gone
    assert described["status"] == "SUCCEEDED", described
    assert [step for step, _ in cloud.router.calls].count("delete_scope_batch") >= 5000 // 200
    status = wait_for_status(cloud.api, "/v1/apps/shop/users/hoarder", started.body["deletion_id"])
    assert status["deleted"]["entries"] == 5000
    assert cloud.table.query(user.scope(None).partition, limit=1).items == []
    assert cloud.table.query(user.scope("big").partition, limit=1).items == []


def test_failing_step_fails_the_execution_and_a_rerun_completes_it(cloud: Cloud) -> None:
    # Given a user with data and a steps function that breaks once the scopes are half swept
    target = seed_user(cloud.api, cloud.table, UserRef("shop", "ana"), cloud.vectors)
    swept = []

    def break_after_two_batches(event: dict[str, object]) -> None:
        if event["step"] == "delete_scope_batch":
            swept.append(event)
            if len(swept) > 2:
                raise RuntimeError("the steps function crashed")

    cloud.router.before_step = break_after_two_batches

    # When the deletion runs
    first = cloud.api.delete(target.path)
    described = execution(cloud.arn, first.body["deletion_id"])

    # Then the execution is FAILED with the cause, the status says so, and writes stay refused
    assert described["status"] == "FAILED"
    assert described["error"] == "RuntimeError"
    assert "the steps function crashed" in described["cause"]
    status = wait_for_status(cloud.api, target.path, first.body["deletion_id"])
    assert status["status"] == "FAILED"
    assert status["error"]["code"] == "RuntimeError"
    assert "finished_at" in status
    assert cloud.api.post(f"{target.path}/memories", {"entry": text_entry("no")}).status == 409

    # When the deletion is requested again with the fault gone
    cloud.router.before_step = None
    rerun = cloud.api.delete(target.path)

    # Then a new execution completes the erasure
    assert rerun.status == 202
    assert rerun.body["deletion_id"] != first.body["deletion_id"]
    assert execution(cloud.arn, rerun.body["deletion_id"])["status"] == "SUCCEEDED"
    assert wait_for_status(cloud.api, target.path, rerun.body["deletion_id"])["status"] == "SUCCEEDED"
    assert export_all(cloud.api, target.path)["entries"] == []
    assert cloud.vectors.count_user(target.user) == 0
    assert cloud.api.post(f"{target.path}/memories", {"entry": text_entry("back")}).status == 201


def test_local_runner_runs_the_same_steps_as_step_functions(cloud: Cloud) -> None:
    # Given two users with the same layout of data
    first = seed_user(cloud.api, cloud.table, UserRef("shop", "ana"), cloud.vectors)
    second = seed_user(cloud.api, cloud.table, UserRef("shop", "eve"), cloud.vectors)

    # When one is erased by Step Functions and the other by the local runner (the ASL interpreter)
    started = cloud.api.delete(first.path)
    assert execution(cloud.arn, started.body["deletion_id"])["status"] == "SUCCEEDED"
    cloud_calls = list(cloud.router.calls)
    local_calls: list[tuple[str, str | None]] = []

    def recorded(event: dict[str, Any]) -> Any:
        local_calls.append((event["step"], event.get("project_id")))
        return steps.run_step(get_container().deletion, event)

    reinstall(cloud, deletion_runner=LocalRunner(recorded, background=False))
    local = cloud.api.delete(second.path)

    # Then both ran the same steps, the same number of times, in the same order (the Map's items and
    # the parallel branches may interleave in the cloud, so those are compared as multisets)
    assert wait_for_status(cloud.api, second.path, local.body["deletion_id"])["status"] == "SUCCEEDED"
    assert Counter(local_calls) == Counter(cloud_calls)
    sequential = {"mark", "verify", "write_receipt", "clear_mark"}
    assert [c for c in local_calls if c[0] in sequential] == [c for c in cloud_calls if c[0] in sequential]


def test_a_workflow_that_cannot_start_is_a_503_and_lifts_the_mark(cloud: Cloud) -> None:
    # Given an API pointed at a state machine that does not exist
    target = seed_user(cloud.api, cloud.table, UserRef("shop", "ana"))
    reinstall(cloud, deletion_runner=StepFunctionsRunner(cloud.arn + "-missing", region_name="us-east-1"))

    # When the user is deleted
    reply = cloud.api.delete(target.path)

    # Then the caller gets 503 with the error body, the data is intact and writes are accepted again
    assert reply.status == 503
    assert reply.error_code == "dependency_unavailable"
    assert len(export_all(cloud.api, target.path)["entries"]) == target.entries
    assert cloud.api.post(f"{target.path}/memories", {"entry": text_entry("still here")}).status == 201


def test_a_throttled_step_is_retried_and_the_execution_succeeds(cloud: Cloud) -> None:
    # Given a steps function that is throttled by the table once on its first verification
    target = seed_user(cloud.api, cloud.table, UserRef("shop", "ana"))
    throttled: list[str] = []

    def throttle_once(event: dict[str, Any]) -> None:
        if event["step"] == "verify" and not throttled:
            throttled.append("verify")
            raise RateLimited("the table kept throttling a batch write; retry later")

    cloud.router.before_step = throttle_once

    # When the user is deleted
    started = cloud.api.delete(target.path)

    # Then Step Functions retried the step (the ASL's Retry on RateLimited) and the erasure succeeded
    assert execution(cloud.arn, started.body["deletion_id"])["status"] == "SUCCEEDED"
    assert throttled == ["verify"]
    assert [step for step, _ in cloud.router.calls].count("verify") == 2
    assert wait_for_status(cloud.api, target.path, started.body["deletion_id"])["status"] == "SUCCEEDED"


def test_a_user_with_more_projects_than_one_map_run_is_erased_page_by_page(cloud: Cloud) -> None:
    # Given a user with seven projects and a workflow that lists scopes three at a time
    reinstall(
        cloud,
        deletion=DeletionService(cloud.table, receipt_key=b"test-receipt-key", vectors=cloud.vectors, scope_page=3),
    )
    user = UserRef("shop", "busy")
    projects = [None, *(f"p{i}" for i in range(7))]
    for project in projects:
        scope = user.scope(project)
        cloud.table.batch_write(puts=graph_like_items(scope, project or "global"))
    path = "/v1/apps/shop/users/busy"

    # When the user is deleted
    started = cloud.api.delete(path)

    # Then the scopes were listed in three pages, every scope was swept, and nothing is left
    assert execution(cloud.arn, started.body["deletion_id"])["status"] == "SUCCEEDED"
    assert [step for step, _ in cloud.router.calls].count("list_scopes") == 3
    swept = {project for step, project in cloud.router.calls if step == "delete_scope_batch"}
    assert swept == set(projects)
    assert wait_for_status(cloud.api, path, started.body["deletion_id"])["deleted"]["episodes"] == 2 * len(projects)
    for project in projects:
        assert cloud.table.query(user.scope(project).partition).items == []


def test_a_write_held_past_the_verification_is_refused_under_step_functions() -> None:
    # Given the API on moto DynamoDB through a table with one write held, deletions run by Step Functions
    with moto_deployment("agent-memory-race", deletion_drain_seconds=0) as (settings, raw, router):
        arn = str(settings.deletion_state_machine_arn)
        held = HeldTable(raw)
        container = Container(settings, table=held)  # type: ignore[arg-type]
        set_container(container)
        try:
            api = ApiClient()
            ana = UserRef("shop", "ana")
            path = "/v1/apps/shop/users/ana"
            assert api.post(f"{path}/memories", {"entry": text_entry("I live in Lisbon")}).status == 201
            # and an add_entry that passed its early check, held at its first write
            held.hold_when = lambda ops: puts_sort_key(ops, "ID#")
            writer = Writer(lambda: api.post(f"{path}/memories", {"entry": text_entry("passport X123")}))
            writer.start()
            assert held.reached.wait(60)

            # When the execution runs and the writer goes on once the user was verified empty
            def release_after_verify(event: dict[str, object]) -> None:
                if event["step"] == "write_receipt":
                    held.release.set()
                    writer.join(60)

            router.before_step = release_after_verify
            started = container.deletion.begin(ana, is_active=container.deletion_runner.is_active)
            container.deletion_runner.start(started.deletion_id, ana.app)

            # Then the execution succeeded, the write got 409, and nothing of the user is stored
            assert execution(arn, started.deletion_id)["status"] == "SUCCEEDED"
            reply = writer.answer()
            assert reply.status == 409, reply.body
            assert keys_of_user(raw, ana) == []
        finally:
            held.release.set()
            set_container(None)
