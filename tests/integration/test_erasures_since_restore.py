"""After restoring a backup, the erasures made since it are applied again (issue 42, point 7; docs/erasure.md,
"After restoring a backup"), on both tables: ``agentmem erasures since TIME`` lists the receipts of the
running store that a copy taken at TIME predates, names the users the restored copy still holds for them (by
the receipts' keyed hash), and with ``--erase`` erases them there, touching nothing else.

The restored store is a copy of the running one taken between two erasures (SQLite's backup API; every item of
the moto table put into a second table), as DynamoDB's restores make a new table from a backup.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from agentmem import users
from agentmem.cli import main
from agentmem.clock import format_timestamp, utc_now
from agentmem.container import Container, set_container
from agentmem.deletion import receipts, records
from agentmem.keys import UserRef, tenant_partition
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Table, query_all
from tests.support import ApiClient, inline_deletion_runner, scope_path, text_entry

APP = "shop"
RESTORED_TABLE = "agent-memory-restored"


@pytest.fixture
def inline(container: Container) -> Container:
    """The test's container, erasing inline (the ``container`` fixture uninstalls it afterwards)."""
    built = Container(container.settings, table=container.table, deletion_runner=inline_deletion_runner())
    set_container(built)
    return built


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the command sets in the environment is put back after the test."""
    for name in ("MEMORY_SQLITE_PATH", "MEMORY_TABLE_NAME", "MEMORY_DYNAMODB_ENDPOINT_URL", "MEMORY_STORE"):
        monkeypatch.setenv(name, "")


def remember(api: ApiClient, user: str, project: str | None = None) -> None:
    body: dict[str, object] = {"entries": [text_entry(f"{user} lives in Lyon"), text_entry(f"{user} likes tea")]}
    if project:
        body["project_id"] = project
    reply = api.put(f"{scope_path(APP, user)}/sessions/s1/memories", body)
    assert reply.status == 200, reply.body


def erase(api: ApiClient, user: str) -> str:
    reply = api.delete(scope_path(APP, user))
    assert reply.status == 202, reply.body
    deletion_id = str(reply.body["deletion_id"])
    assert api.get(f"{scope_path(APP, user)}/deletions/{deletion_id}").body["status"] == "SUCCEEDED"
    return deletion_id


def restored_copy(table: Table, tmp_path: Path) -> tuple[Table, list[str]]:
    """A copy of ``table`` as it is now, and the command's options naming it."""
    if isinstance(table, SqliteTable):
        path = tmp_path / "restored.db"
        with sqlite3.connect(tmp_path / "memory.db") as source, sqlite3.connect(path) as target:
            source.backup(target)
        return SqliteTable(path), ["--restored-db", str(path)]
    assert isinstance(table, DynamoTable)
    import boto3

    copy = DynamoTable(RESTORED_TABLE, region_name="us-east-1")
    copy.create()
    client = boto3.client("dynamodb", region_name="us-east-1")
    for page in client.get_paginator("scan").paginate(TableName=table.table_name):
        for start in range(0, len(page["Items"]), 25):
            chunk = page["Items"][start : start + 25]
            client.batch_write_item(RequestItems={RESTORED_TABLE: [{"PutRequest": {"Item": i}} for i in chunk]})
    return copy, ["--restored-table", RESTORED_TABLE]


def running_options(table: Table, tmp_path: Path) -> list[str]:
    if isinstance(table, SqliteTable):
        return ["--db", str(tmp_path / "memory.db")]
    assert isinstance(table, DynamoTable)
    return ["--table", table.table_name]


def holds(table: Table, user: str) -> int:
    """How many items the table holds in the user's partitions (global scope, project p1, user partition)."""
    ref = UserRef(APP, user)
    partitions = [ref.scope(None).partition, ref.scope("p1").partition, ref.partition]
    return sum(len(query_all(table, pk)) for pk in partitions)


def test_a_restored_copy_loses_the_users_erased_since_it_was_taken(
    api: ApiClient,
    table: Table,
    inline: Container,
    tmp_path: Path,
    cli_env: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given three users; cy erased, then back with new memories, before the backup is taken
    for user in ("ana", "bob", "cy"):
        remember(api, user)
    remember(api, "ana", project="p1")
    before_cy = format_timestamp(utc_now())
    time.sleep(0.01)
    cy_erased = erase(api, "cy")
    remember(api, "cy")
    time.sleep(0.01)
    taken = format_timestamp(utc_now())
    time.sleep(0.01)
    # And a backup taken then, and ana erased after it
    restored, restored_options = restored_copy(table, tmp_path)
    ana_erased = erase(api, "ana")
    assert holds(table, "ana") == 0
    assert holds(restored, "ana") > 0
    receipts_before = len(query_all(restored, tenant_partition(APP), records.DELETION_REQUEST))
    options = [*running_options(table, tmp_path), *restored_options]

    # When the operator lists the erasures since the backup's time, naming the restored store
    assert main(["erasures", "since", taken, *options]) == 0
    listed = capsys.readouterr()
    # Then ana's erasure is listed (cy's ended before it), with the user the restored store still holds
    lines = [line.split("\t") for line in listed.out.splitlines()]
    assert [(line[0], line[1], line[2], line[-1]) for line in lines] == [
        (ana_erased, "app=shop", "SUCCEEDED", "user=ana")
    ]
    assert "the restored store holds 1 of their users" in listed.err
    # And nothing was erased yet
    assert holds(restored, "ana") > 0

    # When they erase those users in the restored store, giving a time earlier than the backup's
    assert main(["erasures", "since", before_cy, *options, "--erase"]) == 0
    erased = capsys.readouterr()
    # Then cy's erasure, which the restored store holds as ended, is skipped: what it holds of cy came after
    listed_lines = [line.split("\t") for line in erased.out.splitlines() if not line.startswith("erased again")]
    assert [(line[0], line[-1]) for line in listed_lines] == [
        (cy_erased, "ended in the restored store"),
        (ana_erased, "user=ana"),
    ]
    # And ana is gone from it, with a receipt of her own there; bob and cy's new memories stay, and the running
    # store is untouched
    (line,) = [line.split("\t") for line in erased.out.splitlines() if line.startswith("erased again")]
    assert line[1:3] == ["app=shop", "user=ana"]
    assert line[4:] == ["SUCCEEDED", "entries=4 vectors=0 graph_items=0 episodes=0"]
    assert holds(restored, "ana") == 0
    assert holds(restored, "bob") > 0
    assert holds(restored, "cy") > 0
    assert len(query_all(restored, tenant_partition(APP), records.DELETION_REQUEST)) == receipts_before + 1
    assert holds(table, "bob") > 0
    assert holds(table, "cy") > 0
    assert len(query_all(table, tenant_partition(APP), records.DELETION_REQUEST)) == 2  # cy's and ana's

    # And asked again, the restored store holds nobody to erase
    assert main(["erasures", "since", taken, *options, "--erase"]) == 0
    again = capsys.readouterr()
    assert again.out.splitlines() == [f"{ana_erased}\t" + "\t".join(lines[0][1:-1]) + "\tnot in the restored store"]
    assert "0 users erased again" in again.err
    close = getattr(restored, "close", None)
    if close is not None:
        close()


def test_an_erasure_that_has_not_ended_is_listed_whenever_it_began(table: Table) -> None:
    # Given a request left running long before the backup (its user id still held), and one that ended before it
    old = "2026-01-01T00:00:00.000Z"
    running = records.request_item(APP, "01RUNNING", user="dee", hashed_user="h1", started_at=old)
    ended = {**records.request_item(APP, "01ENDED", user="eve", hashed_user="h2", started_at=old)}
    ended.pop(records.USER_ID)
    ended.update(status="SUCCEEDED", finished_at="2026-01-01T00:00:05.000Z")
    table.batch_write(puts=[running, ended])
    # When the receipts since a later time are read / Then only the running one is
    since = utc_now().replace(year=2026, month=3, day=1)
    assert [(r.deletion_id, r.running) for r in receipts.receipts_since(table, since)] == [("01RUNNING", True)]


def test_the_users_are_named_only_with_the_deployment_key(table: Table) -> None:
    # Given a user listed in the app and a receipt naming them by the deployment's key
    user = UserRef("shop#eu", "ana")
    table.put(users.app_user_item(user))
    item = records.request_item(
        user.app,
        "01X",
        user="ana",
        hashed_user=records.user_hash(b"deployment", user),
        started_at="2026-01-01T00:00:00Z",
    )
    table.put(item)
    (receipt,) = receipts.receipts_since(table, utc_now().replace(year=2000))
    assert receipt.app == "shop#eu"  # the tenant partition's app, unescaped
    # Then the deployment's key names the user, another key nobody
    assert receipts.users_held(table, b"deployment", [receipt]) == {"01X": user}
    assert receipts.users_held(table, b"another", [receipt]) == {}


def test_the_command_refuses_the_running_store_as_the_restored_one(
    tmp_path: Path, cli_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    SqliteTable(tmp_path / "memory.db").close()
    db = str(tmp_path / "memory.db")
    assert main(["erasures", "since", "2026-01-01T00:00:00Z", "--db", db, "--restored-db", db, "--erase"]) == 2
    assert "the restored store is the running one" in capsys.readouterr().err
    assert main(["erasures", "since", "yesterday", "--db", db]) == 2
    assert "not an RFC 3339 time" in capsys.readouterr().err
    assert main(["erasures", "since", "2026-01-01T00:00:00Z", "--db", str(tmp_path / "none.db")]) == 2
    assert "there is no store at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()
