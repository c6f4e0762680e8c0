"""The write guard over both tables: what it refuses, what it lets through, and that it chunks batches."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from agentmem import users
from agentmem.errors import RateLimited, UserDeletionInProgress
from agentmem.keys import UserRef
from agentmem.stores import dynamo_table
from agentmem.stores.dynamo_table import DynamoTable
from agentmem.stores.table import Condition, Delete, Put, Table, query_all
from tests.erasure_support import keys_of_user

ANA = UserRef("shop", "ana")
PROJECT = ANA.scope("p")


def _mark(table: Table) -> None:
    pk, sk = users.deletion_mark_key(ANA)
    table.batch_write(puts=users.mark_items({"pk": pk, "sk": sk, "deletion_id": "d1"}))


def test_a_marked_user_gets_nothing_written_and_a_409(table: Table) -> None:
    # Given a registered scope and a user marked for erasure
    guarded = users.guarded(table)
    guarded.put(users.registry_item(PROJECT))
    _mark(table)
    before = keys_of_user(table, ANA)
    # When writing items of the scope and of the user partition, one by one, in a batch, in a transaction
    writes = [
        lambda: guarded.put({"pk": PROJECT.partition, "sk": "E#1"}),
        lambda: guarded.batch_write(puts=[{"pk": PROJECT.partition, "sk": f"MT#t{i}#1"} for i in range(150)]),
        lambda: guarded.transact_write([Put({"pk": ANA.partition, "sk": "ID#1"})]),
        lambda: guarded.increment(PROJECT.partition, "MSTATS", {"docs": 1}),
    ]
    # Then each is refused with user_deletion_in_progress (409) and the store holds what it held
    for write in writes:
        with pytest.raises(UserDeletionInProgress) as refused:
            write()
        assert refused.value.http_status == 409
    assert keys_of_user(table, ANA) == before


def test_an_unregistered_scope_gets_nothing_written_unless_the_write_registers_it(table: Table) -> None:
    guarded = users.guarded(table)
    # Given a scope not in the user's registry (erased meanwhile): a write into it is refused
    with pytest.raises(UserDeletionInProgress):
        guarded.batch_write(puts=[{"pk": PROJECT.partition, "sk": "E#1"}])
    assert keys_of_user(table, ANA) == []
    # When a batch carries the registry item (anywhere in it) and more than one transaction of items
    items = [{"pk": PROJECT.partition, "sk": f"MT#t{i:03d}#1"} for i in range(250)]
    guarded.batch_write(puts=[*items, users.registry_item(PROJECT)])
    # Then everything is stored, the registry first, and later writes into the scope pass
    guarded.put({"pk": PROJECT.partition, "sk": "E#1"})
    assert len(query_all(table, PROJECT.partition)) == 251
    assert users.registered_scopes(table, ANA) == [ANA.scope(None), PROJECT]


def test_deletes_and_writes_that_need_their_item_pass_even_for_a_marked_user(table: Table) -> None:
    # Given stored items and statistics, then the mark
    guarded = users.guarded(table)
    guarded.batch_write(puts=[users.registry_item(PROJECT), {"pk": PROJECT.partition, "sk": "E#1", "v": 1}])
    guarded.increment(PROJECT.partition, "MSTATS", {"docs": 2})
    _mark(table)
    # When deleting, updating an existing item, and decrementing existing statistics
    guarded.put({"pk": PROJECT.partition, "sk": "E#1", "v": 2}, Condition(equals={"v": 1}))
    guarded.increment(PROJECT.partition, "MSTATS", {"docs": -1}, Condition(exists=True))
    guarded.transact_write([Delete(PROJECT.partition, "E#1")])
    # Then they applied (none of them can bring back an item an erasure removed)
    assert table.get(PROJECT.partition, "E#1") is None
    assert table.get(PROJECT.partition, "MSTATS") == {"pk": PROJECT.partition, "sk": "MSTATS", "docs": 1}


def test_items_of_no_user_are_written_as_they_are(table: Table) -> None:
    # Given a tenant item (no user owns it): the guard adds nothing, even with every user marked
    _mark(table)
    users.guarded(table).put({"pk": "T#shop", "sk": "USAGE#2026-01-01", "requests": 1})
    assert table.get("T#shop", "USAGE#2026-01-01") is not None


def _conflict() -> dict[str, object]:
    return {
        "service_error_code": "TransactionCanceledException",
        "service_message": "Transaction cancelled",
        "http_status_code": 400,
        "modeled_fields": {"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}]},
    }


def test_dynamodb_transactions_cancelled_by_a_conflict_are_retried_then_reported_as_throttling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dynamo_table, "_CONFLICT_BACKOFF_CAP", 0.0)  # no waits between the attempts here
    # Given DynamoDB answering TransactionConflict (two transactions touched the user's mark at once),
    # a botocore Stubber standing in for the service (moto never conflicts)
    client = boto3.client("dynamodb", region_name="us-east-1")
    table = DynamoTable("t", client=client)
    ops = [Put({"pk": "p", "sk": "a"})]
    with Stubber(client) as stub:
        stub.add_client_error("transact_write_items", **_conflict())  # type: ignore[arg-type]
        stub.add_response("transact_write_items", {})
        # When a transaction conflicts once, then it is run again and succeeds
        table.transact_write(ops)
        stub.assert_no_pending_responses()
        # And one that keeps conflicting ends as RateLimited (429) after a bounded number of attempts
        for _ in range(dynamo_table._MAX_CONFLICT_ATTEMPTS):
            stub.add_client_error("transact_write_items", **_conflict())  # type: ignore[arg-type]
        with pytest.raises(RateLimited):
            table.transact_write(ops)
        stub.assert_no_pending_responses()
