"""A batch's clientToken names nobody but its owner (issue 33, point 9), on both tables through the real
handler: a BatchCreateMemoryRecords of records of alice and bob kept, with its token, the keys of every
record (bob's partition, so bob's user id) in alice's partition, for up to a day after bob's erasure. Now
bob's erasure leaves nothing that names bob, and a retry of the batch still writes nothing twice."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.erasure_support import wait_for_status
from tests.support import ApiClient, inline_deletion_runner, scope_path, stored_keys

MEMORY = "token-erasure-memory"
BOB = "bob-5f2a9e"


@pytest.fixture
def api(table: Table) -> Iterator[ApiClient]:
    set_container(Container(Settings(deletion_drain_seconds=0), table=table, deletion_runner=inline_deletion_runner()))
    yield ApiClient()
    set_container(None)


def _everything(table: Table) -> str:
    """Every key and value the store holds, as one text."""
    keys = stored_keys(table)
    items = [table.get(pk, sk) for pk, sk in keys]
    return json.dumps([keys, items], default=str)


def test_erasing_an_actor_of_a_batch_leaves_nothing_that_names_them(api: ApiClient, table: Table) -> None:
    batch = {
        "clientToken": "batch-token-1",
        "records": [
            {
                "requestIdentifier": "a",
                "namespaces": ["/facts/alice/"],
                "content": {"text": "alice sails"},
                "timestamp": 1.7e9,
            },
            {
                "requestIdentifier": "b",
                "namespaces": [f"/facts/{BOB}/"],
                "content": {"text": "bob rows"},
                "timestamp": 1.7e9,
            },
        ],
    }
    first = api.post(f"/agentcore/memories/{MEMORY}/memoryRecords/batchCreate", batch)
    assert first.status == 201, first.body
    assert BOB in _everything(table)
    # When bob is erased
    started = api.delete(scope_path(MEMORY, BOB))
    assert wait_for_status(api, scope_path(MEMORY, BOB), started.body["deletion_id"])["status"] == "SUCCEEDED"
    # Then nothing in the store names bob
    assert BOB not in _everything(table)
    # And a retry of the batch answers the first answer and writes nothing again
    before = [k for k in stored_keys(table) if not k[1].startswith("USAGE#")]
    again = api.post(f"/agentcore/memories/{MEMORY}/memoryRecords/batchCreate", batch)
    assert again.body == first.body
    assert [k for k in stored_keys(table) if not k[1].startswith("USAGE#")] == before
