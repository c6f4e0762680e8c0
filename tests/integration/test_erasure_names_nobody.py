"""The erasure workflow is given the app and the deletion id, never the user (issue 17, point 13): Step
Functions keeps an execution's input, every step's input and output, for 90 days after it closes. The
steps read the user from the deletion request, which holds it only while the erasure runs. On both tables,
through the API with the packaged ASL (the local runner); tests/integration/test_erasure_workflow_moto.py
reads the history of an execution on moto's Step Functions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentmem.container import Container, get_container, set_container
from agentmem.deletion import records, steps
from agentmem.deletion.runners import LocalRunner, load_definition
from agentmem.errors import InvalidInput
from agentmem.keys import UserRef
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.support import ApiClient, scope_path, text_entry

ANA = UserRef("shop", "ana-7f3c91")
PATH = scope_path(ANA.app, ANA.user)


class Recorded:
    """Every event a step was given and every result it returned: what an execution's history holds."""

    def __init__(self) -> None:
        self.history: list[Any] = []

    def __call__(self, event: dict[str, Any]) -> Any:
        self.history.append(event)
        result = steps.run_step(get_container().deletion, event)
        self.history.append(result)
        return result


@pytest.fixture
def recorded(table: Table) -> Iterator[Recorded]:
    history = Recorded()
    runner = LocalRunner(history, background=False, sleep=lambda _: None)
    set_container(Container(Settings(deletion_drain_seconds=0), table=table, deletion_runner=runner))
    try:
        yield history
    finally:
        set_container(None)


def _seed(api: ApiClient) -> None:
    assert api.post(f"{PATH}/memories", {"entry": text_entry("I live in Lisbon")}).status == 201
    assert api.post(f"{PATH}/graph/entities", {"entities": [{"name": "Ana", "observations": ["vegan"]}]}).status == 200


def test_no_step_input_or_output_names_the_user_and_the_receipt_forgets_the_id(
    table: Table, recorded: Recorded
) -> None:
    # Given a user with memories and facts
    api = ApiClient()
    _seed(api)
    # When the user is erased through the API
    started = api.delete(PATH)
    assert started.status == 202
    deletion_id = started.body["deletion_id"]
    # Then the erasure ran to its end, on the user named by nothing the workflow saw
    status = api.get(f"{PATH}/deletions/{deletion_id}").body
    assert status["status"] == "SUCCEEDED", status
    assert status["deleted"]["entries"] == 1
    assert recorded.history, "no step ran"
    history = json.dumps(recorded.history)
    assert ANA.user not in history
    assert all(event.keys() <= {"step", "deletion_id", "app", "after", "project_id"} for event in recorded.history[::2])
    # And the finished request keeps the keyed hash only
    request = table.get(*records.request_key(ANA.app, deletion_id))
    assert request is not None
    assert records.USER_ID not in request
    assert ANA.user not in json.dumps(request)
    # And the user is gone
    assert api.get(f"{PATH}/memories").body["entries"] == []


def test_a_superseded_request_forgets_the_user_and_its_steps_refuse_to_run(table: Table, recorded: Recorded) -> None:
    # Given an erasure whose workflow could not be started (its request FAILED, the mark lifted)
    service = get_container().deletion
    first = service.begin(ANA, is_active=lambda _: False)
    service.record_failure(ANA, first.deletion_id, "States.Timeout", "the runner stopped")
    # When the user asks again, and the new erasure runs
    api = ApiClient()
    second = api.delete(PATH).body["deletion_id"]
    assert second != first.deletion_id
    assert api.get(f"{PATH}/deletions/{second}").body["status"] == "SUCCEEDED"
    # Then neither request holds the user id any more
    for deletion_id in (first.deletion_id, second):
        request = table.get(*records.request_key(ANA.app, deletion_id))
        assert request is not None
        assert records.USER_ID not in request, deletion_id
    # And a step of the superseded erasure has nobody to act on: it refuses (a finished clear_mark is done)
    with pytest.raises(InvalidInput) as refused:
        steps.run_step(service, {"step": "delete_user_items_batch", "deletion_id": first.deletion_id, "app": ANA.app})
    assert refused.value.code == "deletion_finished"
    assert steps.run_step(service, {"step": "clear_mark", "deletion_id": second, "app": ANA.app}) == {"more": False}


def test_the_packaged_workflow_reads_no_user_from_its_input() -> None:
    definition = json.dumps(load_definition())
    assert "$.user" not in definition
    assert '"user' not in definition
