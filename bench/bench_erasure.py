"""Erasure and export figures: items erased per second by the local runner (SQLite) and by the ASL
on moto Step Functions + moto DynamoDB (in-process), and export paging. Run: python bench/bench_erasure.py"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from benchlib import emulated_aws, scaled

from agentmem import users
from agentmem.deletion import steps
from agentmem.deletion.runners import LocalRunner, execution_input
from agentmem.deletion.service import DeletionService
from agentmem.keys import UserRef
from agentmem.observability import logger
from agentmem.stores.table import Table

ROOT = Path(__file__).resolve().parent.parent
USER = UserRef("bench", "hoarder")


def seed(table: Table, count: int, projects: int = 4) -> None:
    per_scope = count // projects
    for index in range(projects):
        scope = USER.scope(None if index == 0 else f"p{index}")
        items: list[dict[str, Any]] = [users.registry_item(scope)]
        items += [
            {
                "pk": scope.partition,
                "sk": f"E#{i:07d}",
                "id": f"{index}-{i:07d}",
                "project_id": scope.project_id,
                "content": json.dumps({"role": "user", "parts": [{"text": f"fact number {i} " * 8}]}),
                "timestamp": "2026-01-01T00:00:00.000Z",
            }
            for i in range(per_scope)
        ]
        table.batch_write(puts=items)


def local_erasure(count: int) -> None:
    from agentmem.stores.sqlite_table import SqliteTable

    with tempfile.TemporaryDirectory() as folder:
        table = SqliteTable(Path(folder) / "bench.db")
        seed(table, count)
        service = DeletionService(table, receipt_key=b"bench")
        export_start = time.perf_counter()
        pages, cursor, size = 0, None, 0
        while True:
            page = service.export(USER, cursor)
            pages += 1
            size = max(size, len(json.dumps(page)))
            cursor = page["next_cursor"]
            if cursor is None:
                break
        export_seconds = time.perf_counter() - export_start
        started = service.begin(USER, is_active=lambda _: False)
        runner = LocalRunner(lambda event: steps.run_step(service, event), background=False)
        begin = time.perf_counter()
        runner.start(started.deletion_id, USER.app)
        seconds = time.perf_counter() - begin
        status = service.status(USER, started.deletion_id)
        table.close()
    print(
        f"erasure local runner (SQLite): {count} entries in {seconds:.2f} s = {count / seconds:,.0f} entries/s "
        f"({status['status']}, {status['deleted']['entries']} counted)"
    )
    print(
        f"export (SQLite): {count} entries in {pages} pages, {export_seconds:.2f} s, largest page {size / 1e6:.2f} MB"
    )


def moto_erasure(count: int) -> None:
    import boto3
    from moto import mock_aws

    from agentmem.stores.dynamo_table import DynamoTable

    holder: dict[str, DeletionService] = {}

    def routed(self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any) -> bytes:
        try:
            return json.dumps(steps.run_step(holder["service"], json.loads(body))).encode()
        except Exception as exc:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}).encode()

    config = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    with mock_aws(config=config), mock.patch("moto.awslambda_simple.models.LambdaSimpleBackend.invoke", routed):  # type: ignore[arg-type]
        table = DynamoTable("bench", region_name="us-east-1")
        table.create()
        seed_start = time.perf_counter()
        seed(table, count)
        seed_seconds = time.perf_counter() - seed_start
        service = holder["service"] = DeletionService(table, receipt_key=b"bench")
        client = boto3.client("stepfunctions", region_name="us-east-1")
        definition = (ROOT / "infra/workflows/delete_user.asl.json").read_text()
        definition = definition.replace(
            "${DeletionStepsFunctionArn}", "arn:aws:lambda:us-east-1:123456789012:function:d"
        )
        arn = client.create_state_machine(
            name="delete-user", definition=definition, roleArn="arn:aws:iam::123456789012:role/r"
        )["stateMachineArn"]
        started = service.begin(USER, is_active=lambda _: False)
        begin = time.perf_counter()
        execution = client.start_execution(
            stateMachineArn=arn,
            name=started.deletion_id,
            input=json.dumps(execution_input(started.deletion_id, USER.app)),
        )
        while (status := client.describe_execution(executionArn=execution["executionArn"])["status"]) == "RUNNING":
            time.sleep(0.05)
        seconds = time.perf_counter() - begin
    print(
        f"erasure ASL on moto Step Functions + moto DynamoDB: {count} entries in {seconds:.2f} s = "
        f"{count / seconds:,.0f} entries/s ({status}; seeding with batch writes took {seed_seconds:.2f} s)"
    )


def main() -> None:
    emulated_aws()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    logger.setLevel("WARNING")
    local_erasure(scaled(5_000, 40))
    local_erasure(scaled(20_000, 80))
    moto_erasure(scaled(5_000, 40))


if __name__ == "__main__":
    main()
