"""Writes racing an erasure, on both tables: a writer is held inside its request (a real adapter with one
write held, HeldTable) while the whole erasure runs through the packaged ASL (the local runner), then
released. Whatever the interleaving, nothing is left for the user afterwards, and a write refused by the
erasure gets the API's 409 and leaves nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentmem import users
from agentmem.container import Container, get_container, set_container
from agentmem.deletion import steps
from agentmem.deletion.runners import LocalRunner
from agentmem.idempotency import PREFIX as IDEMPOTENCY_PREFIX
from agentmem.keys import UserRef
from agentmem.memory import records as memory_records
from agentmem.settings import Settings
from agentmem.stores.table import Add, Put, Table
from tests.erasure_support import HeldTable, Writer, keys_of_user, puts_sort_key
from tests.support import ApiClient, scope_path, text_entry

ANA = UserRef("shop", "ana")
DRAIN = 31
PATH = scope_path(ANA.app, ANA.user)


@dataclass
class Race:
    api: ApiClient
    table: HeldTable
    container: Container
    before_step: dict[str, Callable[[], None]] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)
    """The workflow's steps and waits, in order."""

    def erase(self) -> dict[str, Any]:
        """What ``DELETE {scope}`` does (mark, then start the workflow), with the workflow run to its end."""
        started = self.container.deletion.begin(ANA, is_active=self.container.deletion_runner.is_active)
        self.container.deletion_runner.start(started.deletion_id, ANA.app)
        return self.container.deletion.status(ANA, started.deletion_id)

    def hold(self, at: Callable[[list[Any]], bool], request: Callable[[], Any]) -> Writer:
        """Start ``request`` in a thread and return once it is held at its first write matching ``at``."""
        self.table.hold_when = at
        writer = Writer(request)
        writer.start()
        assert self.table.reached.wait(60), "the writer never reached the held write"
        return writer

    def release_writer_at(self, step: str, writer: Writer) -> None:
        """When the workflow reaches ``step``, let the held writer finish before the step runs."""

        def release() -> None:
            self.table.release.set()
            writer.join(60)

        self.before_step[step] = release


@pytest.fixture
def race(table: Table) -> Iterator[Race]:
    held = HeldTable(table)
    hooks: dict[str, Callable[[], None]] = {}
    events: list[str] = []

    def run_step(event: dict[str, Any]) -> Any:
        events.append(str(event["step"]))
        hook = hooks.pop(str(event["step"]), None)
        if hook is not None:
            hook()
        return steps.run_step(get_container().deletion, event)

    def wait(seconds: float) -> None:  # the workflow's Wait states, without the waiting
        events.append(f"wait {seconds}")
        hook = hooks.pop("wait", None)
        if hook is not None:
            hook()

    runner = LocalRunner(run_step, background=False, sleep=wait)
    container = Container(Settings(deletion_drain_seconds=DRAIN), table=held, deletion_runner=runner)  # type: ignore[arg-type]
    set_container(container)
    try:
        yield Race(ApiClient(), held, container, hooks, events)
    finally:
        held.release.set()
        set_container(None)


def _seed(api: ApiClient) -> None:
    assert api.put(f"{PATH}/sessions/s1/memories", {"entries": [text_entry("I live in Lisbon")]}).status == 200
    assert api.post(f"{PATH}/graph/entities", {"entities": [{"name": "Ana", "observations": ["vegan"]}]}).status == 200


def test_entry_added_while_the_erasure_verifies_is_refused_and_nothing_remains(race: Race) -> None:
    # Given a user with data, and an add_entry held at its first write (it passed the early check)
    _seed(race.api)
    writer = race.hold(
        lambda ops: puts_sort_key(ops, memory_records.ENTRY_POINTER),
        lambda: race.api.post(f"{PATH}/memories", {"entry": text_entry("passport X123")}),
    )

    # When the erasure runs, and the writer goes on only after the workflow verified the user empty
    race.release_writer_at("write_receipt", writer)
    status = race.erase()

    # Then the erasure succeeded, the write was refused with the API's 409, and nothing of the user is stored
    assert status["status"] == "SUCCEEDED"
    reply = writer.answer()
    assert reply.status == 409, reply.body
    assert reply.error_code == "user_deletion_in_progress"
    assert keys_of_user(race.table, ANA) == []


def test_erasure_waits_for_in_flight_writes_before_it_sweeps_and_refuses_what_they_write(race: Race) -> None:
    # Given a user with data, and an add_entry that passed its early check, held at its first write
    _seed(race.api)
    writer = race.hold(
        lambda ops: puts_sort_key(ops, memory_records.ENTRY_POINTER),
        lambda: race.api.post(f"{PATH}/memories", {"entry": text_entry("passport X123")}),
    )

    # When the erasure runs and the writer goes on during the workflow's drain wait
    race.release_writer_at("wait", writer)
    status = race.erase()

    # Then the workflow waited the configured drain (the API's timeout) after marking, before sweeping
    assert race.events[:3] == ["mark", f"wait {DRAIN}", "list_scopes"]
    # and the write was refused, so the erasure found and left nothing
    assert status["status"] == "SUCCEEDED"
    assert writer.answer().status == 409
    assert keys_of_user(race.table, ANA) == []


def test_session_replace_paused_across_the_whole_erasure_leaves_nothing(race: Race) -> None:
    # Given a stored session, and its replacement held after some of its writes landed: on DynamoDB after
    # its index items, before its entries; on SQLite (index items and entries in one commit) after both,
    # before its session head
    _seed(race.api)
    body = {"entries": [text_entry("passport X123"), text_entry("born 1990")]}
    held = memory_records.SESSION_HEAD if race.table.batches_in_order else memory_records.ENTRY
    writer = race.hold(
        lambda ops: puts_sort_key(ops, held),
        lambda: race.api.put(f"{PATH}/sessions/s1/memories", body),
    )

    # When the whole erasure runs (mark cleared at its end), and only then the writer goes on
    status = race.erase()
    race.table.release.set()
    reply = writer.answer()

    # Then the rest of the replacement is refused (its scope was erased meanwhile) and nothing remains
    assert status["status"] == "SUCCEEDED"
    assert reply.status == 409, reply.body
    assert reply.error_code == "user_deletion_in_progress"
    assert keys_of_user(race.table, ANA) == []
    assert race.api.get(f"{PATH}/memories").body["entries"] == []


def test_graph_write_landing_after_the_verification_is_refused(race: Race) -> None:
    # Given a user with data, and a graph write held at its first write
    _seed(race.api)
    facts = {"entities": [{"name": "Passport", "entity_type": "document", "observations": ["number X123"]}]}
    global_scope = ANA.scope(None).partition
    writer = race.hold(
        lambda ops: any(isinstance(op, Put) and op.item["pk"] == global_scope for op in ops),
        lambda: race.api.post(f"{PATH}/graph/entities", facts),
    )

    # When the erasure runs and the writer goes on after the verification
    race.release_writer_at("write_receipt", writer)
    status = race.erase()

    # Then it was refused with 409 and nothing of the user is stored
    assert status["status"] == "SUCCEEDED"
    reply = writer.answer()
    assert reply.status == 409, reply.body
    assert reply.error_code == "user_deletion_in_progress"
    assert keys_of_user(race.table, ANA) == []


def test_idempotency_record_completed_after_the_erasure_is_not_kept_and_a_retry_stores_anew(race: Race) -> None:
    # Given a write with an Idempotency-Key whose answer is about to be recorded when it is held
    def recording(ops: list[Any]) -> bool:
        return any(
            isinstance(op, Put) and op.item["sk"].startswith(IDEMPOTENCY_PREFIX) and op.item["status"] == "done"
            for op in ops
        )

    key = {"Idempotency-Key": "retry-1"}
    body = {"entry": text_entry("passport X123")}
    writer = race.hold(recording, lambda: race.api.post(f"{PATH}/memories", body, headers=key))

    # When the whole erasure runs before the answer is recorded
    status = race.erase()
    race.table.release.set()
    first = writer.answer()

    # Then nothing of the user is kept, the erased answer included
    assert status["status"] == "SUCCEEDED"
    assert first.status == 201, first.body
    assert keys_of_user(race.table, ANA) == []
    # and the same request retried with the same key stores anew instead of replaying the erased answer
    retried = race.api.post(f"{PATH}/memories", body, headers=key)
    assert retried.status == 201, retried.body
    assert "Idempotent-Replayed" not in retried.headers
    assert retried.body["id"] != first.body["id"]
    assert [e["id"] for e in race.api.get(f"{PATH}/memories").body["entries"]] == [retried.body["id"]]


def test_project_deleted_while_an_entry_is_added_stays_registered_so_erasure_reaches_it(race: Race) -> None:
    # Given an entry of project p held after its index items and registry, before the entry itself
    _seed(race.api)
    writer = race.hold(
        lambda ops: puts_sort_key(ops, memory_records.ENTRY),
        lambda: race.api.post(f"{PATH}/memories", {"entry": text_entry("X123"), "project_id": "p"}),
    )

    # When the project is deleted meanwhile (what DELETE {scope}/projects/p calls), then the entry lands
    race.container.memory.delete_project(ANA, "p")
    race.table.release.set()
    assert writer.answer().status == 201

    # Then the project is still registered, so export sees the entry and an erasure removes everything
    assert users.registry_sk("p") in {sk for _, sk in keys_of_user(race.table, ANA)}
    assert [e["project_id"] for e in race.api.get(f"{PATH}/export").body["entries"]].count("p") == 1
    assert race.erase()["status"] == "SUCCEEDED"
    assert keys_of_user(race.table, ANA) == []


def test_statistics_updated_by_a_delete_after_the_sweep_are_not_recreated(race: Race) -> None:
    # Given an entry, and its deletion held after the entry is gone, before the statistics are updated
    stored = race.api.post(f"{PATH}/memories", {"entry": text_entry("passport X123")})
    assert stored.status == 201
    writer = race.hold(
        lambda ops: any(isinstance(op, Add) and op.deltas.get("docs", 0) < 0 for op in ops),
        lambda: race.api.delete(f"{PATH}/memories/{stored.body['id']}"),
    )

    # When the whole erasure runs, then the delete goes on
    status = race.erase()
    race.table.release.set()

    # Then the delete answered, and the statistics item it would have updated is not brought back
    assert status["status"] == "SUCCEEDED"
    assert writer.answer().status == 204
    assert keys_of_user(race.table, ANA) == []


def test_erasure_with_trailing_slashes_keeps_no_idempotency_record(race: Race) -> None:
    # Given a user with data
    _seed(race.api)
    # When the erasure is requested as DELETE {scope}// with an Idempotency-Key (the route matches it)
    reply = race.api.delete(f"{PATH}//", headers={"Idempotency-Key": "erase-1"})
    # Then it ran, and no record of it is written into the erased user's partition afterwards
    assert reply.status == 202, reply.body
    assert race.api.get(f"{PATH}/deletions/{reply.body['deletion_id']}").body["status"] == "SUCCEEDED"
    assert keys_of_user(race.table, ANA) == []
