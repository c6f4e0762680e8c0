"""``agentmem erasures``: the accepted erasures that failed for good and their retry (``list``, ``retry``), and
those a restored backup predates, erased again there (``since``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentmem.cli.store_options import admin_container, configure

if TYPE_CHECKING:
    from agentmem import keys
    from agentmem.settings import Settings
    from agentmem.stores.table import Table


def list_or_retry(args: argparse.Namespace) -> int:
    """``agentmem erasures list|retry --table T --state-machine ARN``: the accepted erasures no re-drive will
    finish (their latest attempt failed, timed out or was aborted and they still have work), and the retry of
    one (its next attempt now; docs/deploy.md's runbook)."""
    os.environ["MEMORY_STORE"] = "dynamodb"
    from agentmem.deletion.redrive import failed_erasures, retry
    from agentmem.deletion.runners import StepFunctionsRunner

    container = admin_container(args)
    runner = StepFunctionsRunner(args.state_machine, region_name=container.settings.aws_region)
    if args.erasures_command == "list":
        failed = failed_erasures(runner, container.table)
        for execution in failed:
            print(
                f"{execution.deletion_id}\tapp={execution.app}\tattempt={execution.attempt}\t"
                f"{execution.status}\t{execution.stopped_at or ''}\t{execution.error or ''}"
            )
        print(f"{len(failed)} erasures need a retry", file=sys.stderr)
        return 0
    try:
        started = retry(runner, container.table, args.deletion_id)
    except ValueError as refused:
        print(str(refused), file=sys.stderr)
        return 1
    print(f"erasure {started.deletion_id}: attempt {started.attempt} started")
    return 0


def since(args: argparse.Namespace) -> int:
    """``agentmem erasures since TIME``: the receipts of the erasures a copy of the table taken at TIME predates
    (ended at or after it, or not ended); with ``--restored-db``/``--restored-table``, the user of each that the
    restored store still holds (an erasure it holds as ended is in the copy already); with ``--erase``, erase those
    users there (docs/erasure.md, "After restoring a backup")."""
    from agentmem.clock import format_timestamp, parse_timestamp
    from agentmem.deletion import receipts
    from agentmem.settings import Settings

    def refuse(why: str) -> int:
        print(f"agentmem erasures since: {why}", file=sys.stderr)
        return 2

    try:
        since = parse_timestamp(args.time)
    except ValueError:
        return refuse(f"{args.time!r} is not an RFC 3339 time with a zone (2026-06-01T03:00:00Z)")
    if args.erase and not (args.restored_db or args.restored_table):
        return refuse("--erase needs the restored store (--restored-db or --restored-table)")
    configure(args)
    settings = Settings.from_env()
    running = _StoreName("dynamodb", args.table) if args.table else _StoreName.file(settings.sqlite_path)
    restored_name = None
    if args.restored_table:
        restored_name = _StoreName("dynamodb", args.restored_table)
    elif args.restored_db:
        restored_name = _StoreName.file(args.restored_db)
    if restored_name == running:
        return refuse("the restored store is the running one: erasing again there would erase what users wrote since")
    for name in (running, restored_name):
        if name is not None and name.kind == "sqlite" and not os.path.exists(name.name):
            return refuse(f"there is no store at {name.name}")
    live = running.open(settings)
    restored = restored_name.open(settings) if restored_name is not None else None
    try:
        found = receipts.receipts_since(live, since)
        ended = receipts.ended_in(restored, found) if restored is not None else set()
        unknown = [r for r in found if r.deletion_id not in ended]
        held = receipts.users_held(restored, settings.resolved_receipt_key(), unknown) if restored is not None else {}
        for receipt in found:
            columns = [
                receipt.deletion_id,
                f"app={receipt.app}",
                receipt.status,
                f"started={receipt.started_at}",
                f"finished={receipt.finished_at or '-'}",
                f"user_hash={receipt.user_hash}",
            ]
            if receipt.deletion_id in ended:
                columns.append("ended in the restored store")
            elif restored is not None:
                user = held.get(receipt.deletion_id)
                columns.append(f"user={user.user}" if user is not None else "not in the restored store")
            print("\t".join(columns))
        targets = sorted(set(held.values()), key=lambda u: (u.app, u.user))
        summary = f"{len(found)} erasures ended since {format_timestamp(since)} or have not ended"
        if restored is not None:
            summary += f"; the restored store holds {len(targets)} of their users"
            if unknown and not held:
                summary += " (if it should hold some: is MEMORY_RECEIPT_KEY the deployment's key?)"
        print(summary, file=sys.stderr)
        if args.erase and restored is not None:
            return _erase_again(restored, settings, targets)
        return 0
    finally:
        for table in (live, restored):
            close = getattr(table, "close", None)
            if close is not None:
                close()


@dataclass(frozen=True)
class _StoreName:
    """Which store a command reads: a SQLite file (``kind`` ``sqlite``, its absolute path) or a DynamoDB table."""

    kind: str
    name: str

    @classmethod
    def file(cls, path: str) -> _StoreName:
        return cls("sqlite", os.path.abspath(path))

    def open(self, settings: Settings) -> Table:
        if self.kind == "dynamodb":
            from agentmem.stores.dynamo_table import DynamoTable

            return DynamoTable(self.name, endpoint_url=settings.dynamodb_endpoint_url, region_name=settings.aws_region)
        from agentmem.stores.sqlite_table import SqliteTable

        return SqliteTable(self.name)


def _erase_again(table: Table, settings: Settings, targets: Sequence[keys.UserRef]) -> int:
    """Erase each user of ``targets`` from the restored ``table`` in this process (the workflow interpreted inline, as
    ``make serve`` runs it), touching nothing else: no vector index and no snapshots (they belong to the running
    deployment, which erased the user already), and no drain (nothing serves the restored table)."""
    from agentmem.deletion import steps
    from agentmem.deletion.runners import LocalRunner, start_erasure
    from agentmem.deletion.service import DeletionService

    service = DeletionService(
        table, receipt_key=settings.resolved_receipt_key(), batch_size=settings.deletion_batch_size, drain_seconds=0
    )
    runner = LocalRunner(lambda event: steps.run_step(service, event), background=False)
    failed = 0
    for user in targets:
        started = start_erasure(service, runner, user)
        status = service.status(user, started.deletion_id)
        counts = " ".join(f"{name}={count}" for name, count in status["deleted"].items())
        print(f"erased again\tapp={user.app}\tuser={user.user}\t{started.deletion_id}\t{status['status']}\t{counts}")
        failed += status["status"] != "SUCCEEDED"
    print(f"{len(targets) - failed} users erased again in the restored store, {failed} failed", file=sys.stderr)
    return 1 if failed else 0
