"""A request's writes end before its time does (issue 24, point 8), through the real handler on both tables.

An erasure waits ``MEMORY_DELETION_DRAIN_SECONDS`` after its mark for the writes of requests begun before it:
no write may start later than that. In Lambda a request's time is what its context says is left; on the local
server it is :class:`LocalContext`'s, shorter than the drain."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmem import users
from agentmem.container import Container
from agentmem.errors import DeadlineExceeded
from agentmem.keys import UserRef
from agentmem.local.events import LocalContext, rest_event
from agentmem.settings import Settings
from agentmem.stores.table import Delete, Put, Table
from tests.erasure_support import wait_for_status
from tests.support import ApiClient, scope_path, stored_keys, text_entry

ANA = UserRef("demo", "ana")
SCOPE = scope_path(ANA.app, ANA.user)


class InvocationEndingIn(LocalContext):
    """The context of an invocation that has ``milliseconds`` left (as Lambda's reports it)."""

    def __init__(self, milliseconds: int) -> None:
        super().__init__()
        self.milliseconds = milliseconds

    def get_remaining_time_in_millis(self) -> int:
        return self.milliseconds


def _invoke(context: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    from functions.api.handler import handler

    event = rest_event(method, path, body=json.dumps(body) if body is not None else None)
    result = handler(event, context)
    return result["statusCode"], json.loads(result["body"] or "null")


def test_writes_of_a_request_whose_time_is_nearly_up_are_refused_503_and_write_nothing(
    api: ApiClient, table: Table
) -> None:
    # Given a user with a memory, written with time to spare
    assert api.post(f"{SCOPE}/memories", {"entry": text_entry("ana likes tea")}).status == 201
    before = stored_keys(table)
    # When requests come with less time left than a write may start in (under a second)
    nearly_up = InvocationEndingIn(900)
    writes = [
        ("POST", f"{SCOPE}/memories", {"entry": text_entry("ana moved to Lyon")}),
        ("PUT", f"{SCOPE}/sessions/s1/memories", {"entries": [text_entry("a session")]}),
        ("POST", f"{SCOPE}/graph/entities", {"entities": [{"name": "Lyon", "entity_type": "city"}]}),
    ]
    # Then every write is refused with 503 deadline_exceeded and the store holds what it held
    for method, path, body in writes:
        status, answer = _invoke(nearly_up, method, path, body)
        assert (status, answer["error"]["code"]) == (503, "deadline_exceeded"), answer
    assert stored_keys(table) == before
    # And reads are still answered in that time
    status, listed = _invoke(nearly_up, "GET", f"{SCOPE}/memories")
    assert status == 200
    assert [e["content"]["parts"][0]["text"] for e in listed["entries"]] == ["ana likes tea"]
    # And the same write with time left lands
    status, _ = _invoke(InvocationEndingIn(10_000), "POST", f"{SCOPE}/memories", writes[0][2])
    assert status == 201


def test_past_the_deadline_the_guard_refuses_every_write_but_deletes(table: Table) -> None:
    # Given a registered scope holding two items
    project = ANA.scope("p")
    guarded = users.guarded(table)
    guarded.batch_write(puts=[users.registry_item(project), *({"pk": project.partition, "sk": k} for k in "ab")])
    before = stored_keys(table)
    with users.writes_end_with(InvocationEndingIn(900)):
        # When a request whose time is nearly up writes, each way the guard writes
        writes = [
            lambda: guarded.put({"pk": project.partition, "sk": "c"}),
            lambda: guarded.batch_write(
                puts=[{"pk": project.partition, "sk": "c"}], deletes=[(project.partition, "a")]
            ),
            lambda: guarded.transact_write([Put({"pk": project.partition, "sk": "c"}), Delete(project.partition, "a")]),
            lambda: guarded.transact_write_each(
                [[Delete(project.partition, "a")], [Put({"pk": project.partition, "sk": "c"})]]
            ),
            lambda: guarded.increment(project.partition, "MSTATS", {"docs": 1}),
        ]
        # Then each is refused (503) before anything of it is written
        for write in writes:
            with pytest.raises(DeadlineExceeded) as refused:
                write()
            assert refused.value.http_status == 503
        assert stored_keys(table) == before
        # And deletes still run
        guarded.delete(project.partition, "a")
        guarded.batch_write(deletes=[(project.partition, "b")])
    assert (project.partition, "a") not in stored_keys(table)
    assert (project.partition, "b") not in stored_keys(table)
    # And out of the request, writes land again
    guarded.put({"pk": project.partition, "sk": "c"})
    assert table.get(project.partition, "c") is not None


def test_the_local_servers_requests_end_before_an_erasures_drain() -> None:
    # A request begun before an erasure's mark starts no write after the erasure's wait for it
    drain_ms = Settings().deletion_drain_seconds * 1000
    assert 0 < LocalContext().get_remaining_time_in_millis() < drain_ms


def test_an_erasure_started_by_a_request_with_little_time_left_still_completes(
    api: ApiClient, table: Table, container: Container
) -> None:
    # Given a user with memories
    assert api.post(f"{SCOPE}/memories", {"entry": text_entry("ana likes tea")}).status == 201
    # When the erasure is asked for by a request with under a second left (it runs in a background thread,
    # which does not inherit the request's deadline)
    status, started = _invoke(InvocationEndingIn(900), "DELETE", SCOPE)
    assert status == 202, started
    # Then it runs to the end, its own writes (mark, receipt) not refused, and nothing of the user is left
    assert wait_for_status(api, SCOPE, started["deletion_id"])["status"] == "SUCCEEDED"
    assert api.get(f"{SCOPE}/memories").body["entries"] == []


class SlowFirstWrite:
    """The real table, its first write of items taking ``seconds`` (a slow transaction: a request's time runs out
    while it runs, however fast the machine), reads, counters and later writes as fast as ever."""

    WRITES = ("put", "delete", "batch_write", "transact_write", "transact_write_each")

    def __init__(self, table: Table, seconds: float) -> None:
        self._table = table
        self.seconds = seconds

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._table, name)
        if name not in self.WRITES:
            return method

        def slow(*args: Any, **kwargs: Any) -> Any:
            import time

            time.sleep(self.seconds)
            self.seconds = 0.0
            return method(*args, **kwargs)

        return slow


def test_a_write_that_began_in_time_finishes_with_its_log_and_never_answers_503(table: Table) -> None:
    """Issue 33, point 2: a request whose time ran out between its items and its change-log row answered
    503 ("nothing was written") while its items were stored, unlogged: a process that held the user never
    saw them. Now a request that began writing in time finishes; the one that did not begin writes nothing."""
    from agentmem.container import set_container

    # Given a process that holds ana's memories (it searched them), and another whose writes are slow
    holder = Container(Settings(deletion_drain_seconds=0), table=table)
    set_container(holder)
    try:
        _invoke(InvocationEndingIn(60_000), "POST", f"{SCOPE}/memories", {"entry": text_entry("ana likes tea")})
        status, _ = _invoke(InvocationEndingIn(60_000), "POST", f"{SCOPE}/memories/search", {"query": "lyon"})
        assert status == 200
        slow = SlowFirstWrite(table, 3.5)
        writer = Container(Settings(deletion_drain_seconds=0), table=slow)  # type: ignore[arg-type]
        set_container(writer)
        # When a write begins with 3 s left to start writing in (however busy the machine, its first write starts
        # in time), and that write takes longer: the rest run after the request's time is up
        status, stored = _invoke(
            InvocationEndingIn(4_000), "POST", f"{SCOPE}/memories", {"entry": text_entry("ana moved to Lyon")}
        )
        # Then it answers as written, and the process that held ana sees it (its log row landed with it)
        assert status == 201, stored
        set_container(holder)
        status, found = _invoke(InvocationEndingIn(60_000), "POST", f"{SCOPE}/memories/search", {"query": "lyon"})
        assert [e["id"] for e in found["entries"]] == [stored["id"]]
        # And a request whose time is up before its first write still writes nothing, with 503
        set_container(writer)
        before = stored_keys(table)
        status, refused = _invoke(InvocationEndingIn(900), "POST", f"{SCOPE}/memories", {"entry": text_entry("late")})
        assert (status, refused["error"]["code"]) == (503, "deadline_exceeded")
        assert "nothing was written" in refused["error"]["message"]
        assert [k for k in stored_keys(table) if k not in before and not k[1].startswith("USAGE#")] == []
    finally:
        set_container(None)
