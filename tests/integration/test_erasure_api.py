"""Erasure, status and export routes through the real handler on both tables, with the local runner
interpreting the same ASL file in-process (inline here, so each test reads a finished deletion)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agentmem import users
from agentmem.container import Container, get_container, set_container
from agentmem.deletion import records, steps
from agentmem.deletion.runners import LocalRunner
from agentmem.keys import UserRef
from agentmem.stores.table import Table
from tests.erasure_support import InMemoryVectorIndex, export_all, seed_user
from tests.support import ApiClient, inline_deletion_runner, scope_path, text_entry


@pytest.fixture
def inline(container: Container) -> Container:
    """The test's container, erasing inline (the ``container`` fixture uninstalls it afterwards)."""
    built = Container(container.settings, table=container.table, deletion_runner=inline_deletion_runner())
    set_container(built)
    return built


def install_vector_index(inline: Container, index: InMemoryVectorIndex) -> None:
    set_container(
        Container(inline.settings, table=inline.table, vector_index=index, deletion_runner=inline_deletion_runner())
    )


def test_local_runner_erases_the_user_and_reports_counts(api: ApiClient, table: Table, inline: Container) -> None:
    # Given a user in three projects and another user of the same app
    target = seed_user(api, table, UserRef("demo", "ana"))
    other = seed_user(api, table, UserRef("demo", "bob"))
    other_before = export_all(api, other.path)

    # When the user is deleted
    started = api.delete(target.path)

    # Then the deletion succeeded with counts per kind and nothing of the user remains
    assert started.status == 202
    assert started.body["status"] == "RUNNING"
    status = api.get(f"{target.path}/deletions/{started.body['deletion_id']}")
    assert status.status == 200
    assert status.body["status"] == "SUCCEEDED"
    assert status.body["deleted"] == {"entries": 12, "vectors": 0, "graph_items": 12, "episodes": 8}
    assert all(v == [] for v in export_all(api, target.path).values())
    assert table.query(target.user.partition).items == []
    assert export_all(api, other.path) == other_before


def test_deletion_status_is_private_to_the_user(api: ApiClient, table: Table, inline: Container) -> None:
    # Given a finished deletion of one user
    started = api.delete(scope_path("demo", "ana"))
    deletion_id = started.body["deletion_id"]

    # When another user, the same user of another app, or an unknown id asks for it
    replies = [
        api.get(f"{scope_path('demo', 'bob')}/deletions/{deletion_id}"),
        api.get(f"{scope_path('other', 'ana')}/deletions/{deletion_id}"),
        api.get(f"{scope_path('demo', 'ana')}/deletions/01UNKNOWN"),
    ]

    # Then each gets 404 with the error body
    assert [r.status for r in replies] == [404, 404, 404]
    assert {r.error_code for r in replies} == {"deletion_not_found"}


def test_entries_carrying_vectors_are_counted_as_vectors_without_an_index(
    api: ApiClient, table: Table, inline: Container
) -> None:
    # Given entries whose embedding is kept on the entry item (no external vector index)
    user = UserRef("demo", "ana")
    scope = user.scope(None)
    table.batch_write(
        puts=[
            users.registry_item(scope),
            *[
                {"pk": scope.partition, "sk": f"E#{i}", "id": str(i), "content": "{}", "timestamp": "t", "vector": b"v"}
                for i in range(3)
            ],
        ]
    )
    # When the user is deleted
    started = api.delete(scope_path("demo", "ana"))
    # Then the vectors count is the number of entries that carried one
    status = api.get(f"{scope_path('demo', 'ana')}/deletions/{started.body['deletion_id']}").body
    assert status["deleted"]["vectors"] == 3
    assert status["deleted"]["entries"] == 3


def test_export_pages_hold_everything_exactly_once(api: ApiClient, table: Table, container: Container) -> None:
    # Given a user with 1,200 entries in two scopes plus graph-like items and episodes
    user = UserRef("demo", "ana")
    seeded = seed_user(api, table, user)
    for project in (None, "alpha"):
        scope = user.scope(project)
        table.batch_write(
            puts=[
                {
                    "pk": scope.partition,
                    "sk": f"E#bulk{project}{i:05d}",
                    "id": f"bulk{project}{i:05d}",
                    "project_id": project,
                    "content": '{"role":"user","parts":[{"text":"bulk"}]}',
                    "timestamp": "2026-01-01T00:00:00.000Z",
                }
                for i in range(600)
            ]
        )

    # When following the export cursor
    first = api.get(f"{seeded.path}/export")
    everything = export_all(api, seeded.path)

    # Then pages are bounded, and every item comes exactly once across pages
    assert first.body["next_cursor"] is not None
    assert len(first.body["entries"]) <= 500
    ids = [e["id"] for e in everything["entries"]]
    assert len(ids) == len(set(ids)) == 1200 + seeded.entries
    assert Counter(e["project_id"] for e in everything["entries"]) == {None: 603, "alpha": 603, "beta": 3, "gamma": 3}
    # with the content of entries, graph items sorted by kind and episodes, and no index internals
    assert any(e["content"]["parts"][0]["text"].startswith("ana fact") for e in everything["entries"])
    assert len(everything["entities"]) == len(everything["relations"]) == len(everything["observations"]) == 4
    assert len(everything["episodes"]) == seeded.episodes
    assert {item["text"] for item in everything["episodes"]} >= {"episode global one", "episode global two"}
    assert {item["relation_type"] for item in everything["relations"]} == {"knows"}


def test_export_shows_nothing_of_other_users(api: ApiClient, table: Table, container: Container) -> None:
    # Given two users of one app and the same user id in another app
    seed_user(api, table, UserRef("demo", "ana"))
    seed_user(api, table, UserRef("other", "bob"))
    # When bob of demo (who has nothing) exports
    everything = export_all(api, scope_path("demo", "bob"))
    # Then nothing comes back
    assert all(v == [] for v in everything.values())


@pytest.mark.parametrize("cursor", ["!!!", "bm90IGpzb24", "WzEsMl0"])
def test_a_forged_export_cursor_is_a_400(api: ApiClient, cursor: str) -> None:
    # When the export is asked with a cursor this API never returned
    reply = api.get(f"{scope_path('demo', 'ana')}/export", query={"cursor": cursor})
    # Then it is a 400 with the error body
    assert reply.status == 400
    assert reply.error_code == "invalid_cursor"


def test_bad_user_ids_get_4xx_on_every_erasure_route(api: ApiClient, inline: Container) -> None:
    # When the user id holds a control character
    path = "/v1/apps/demo/users/a%01b"
    replies = [api.delete(path), api.get(f"{path}/export"), api.get(f"{path}/deletions/x")]
    # Then every route answers 422 and nothing is created
    assert [r.status for r in replies] == [422, 422, 422]


def test_verify_loops_back_until_the_index_is_empty(api: ApiClient, table: Table, inline: Container) -> None:
    # Given a vector index that only really deletes on the second sweep (an eventually consistent index)
    class LaggingIndex(InMemoryVectorIndex):
        calls = 0

        def delete_user(self, user: UserRef) -> int:
            self.calls += 1
            return super().delete_user(user) if self.calls > 1 else 0

    index = LaggingIndex()
    install_vector_index(inline, index)
    target = seed_user(api, table, UserRef("demo", "ana"), index)

    # When the user is deleted
    started = api.delete(target.path)

    # Then verification found vectors left, swept again, and then succeeded
    status = api.get(f"{target.path}/deletions/{started.body['deletion_id']}").body
    assert status["status"] == "SUCCEEDED"
    assert index.calls == 2
    assert status["deleted"]["vectors"] == 12
    assert index.count_user(target.user) == 0


def test_data_that_never_goes_away_fails_the_deletion_visibly(api: ApiClient, table: Table, inline: Container) -> None:
    # Given a vector index that never deletes anything
    class StuckIndex(InMemoryVectorIndex):
        def delete_user(self, user: UserRef) -> int:
            return 0

    index = StuckIndex()
    install_vector_index(inline, index)
    target = seed_user(api, table, UserRef("demo", "ana"), index)

    # When the user is deleted
    started = api.delete(target.path)

    # Then the deletion ends FAILED (not verified), and writes stay refused
    status = api.get(f"{target.path}/deletions/{started.body['deletion_id']}").body
    assert status["status"] == "FAILED"
    assert status["error"]["code"] == "ErasureNotVerified"
    assert api.post(f"{target.path}/memories", {"entry": text_entry("no")}).status == 409


def test_erasure_with_an_idempotency_key_leaves_no_record_in_the_erased_partition(
    api: ApiClient, table: Table, inline: Container
) -> None:
    # Given a user with data
    target = seed_user(api, table, UserRef("demo", "ana"))
    # When the erasure is requested (twice) with an Idempotency-Key
    first = api.delete(target.path, headers={"Idempotency-Key": "erase-1"})
    # Then it ran, and nothing at all is left under the user's partition keys
    assert first.status == 202
    assert table.query(target.user.partition).items == []
    status = api.get(f"{target.path}/deletions/{first.body['deletion_id']}").body
    assert status["status"] == "SUCCEEDED"


def test_simultaneous_erasure_requests_start_one_deletion(table: Table, container: Container) -> None:
    # Given many requests to erase the same user at the same moment (runner never finishes)
    from concurrent.futures import ThreadPoolExecutor

    user = UserRef("demo", "ana")

    def begin(_: int) -> str:
        return container.deletion.begin(user, is_active=lambda _: True).deletion_id

    # When they race
    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(begin, range(8)))

    # Then they all got the one deletion that won the mark, and only its request exists
    assert len(ids) == 1
    assert table.get(*users.deletion_mark_key(user))["deletion_id"] in ids
    assert [i["deletion_id"] for i in table.query("T#demo").items] == list(ids)


def test_the_sample_step_event_runs_through_the_lambda_handler(table: Table, container: Container) -> None:
    # Given the sample event of the deletion-steps function and a user with two projects
    from functions.deletion.handler import handler
    from tests.support import load_event

    for project in (None, "alpha"):
        table.put(users.registry_item(UserRef("demo", "ana").scope(project)))
    sample = load_event("deletion_step_list_scopes.json")  # names the erasure, not the user: its request does
    table.put(
        records.request_item(
            "demo", sample["deletion_id"], user="ana", hashed_user="h", started_at="2026-12-01T00:00:00.000Z"
        )
    )
    # When the handler gets it
    result = handler(load_event("deletion_step_list_scopes.json"), None)
    # Then it answers the step's result
    assert result == {"scopes": [{"project_id": None}, {"project_id": "alpha"}], "next": None, "more": False}


class LateIndex(InMemoryVectorIndex):
    """Deletes show in counts only ``visibility_seconds`` after they were made (Serverless: about a
    minute), on the clock of the runner's waits."""

    visibility_seconds = 60

    def __init__(self, *, shows_deletes: bool = True) -> None:
        super().__init__()
        self.now = 0.0
        self.sweeps = 0
        self._shows_deletes = shows_deletes
        self._hidden: list[tuple[float, int]] = []  # (deleted at, how many)

    def wait(self, seconds: float) -> None:
        self.now += seconds

    def delete_user(self, user: UserRef) -> int:
        self.sweeps += 1
        deleted = super().delete_user(user)
        self._hidden.append((self.now, deleted))
        return deleted

    def count_user(self, user: UserRef) -> int:
        late = sum(n for at, n in self._hidden if not self._shows_deletes or self.now - at < self.visibility_seconds)
        return super().count_user(user) + late


def _erase_on(inline: Container, index: LateIndex, api: ApiClient, table: Table) -> tuple[dict[str, Any], list[float]]:
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        index.wait(seconds)

    runner = LocalRunner(lambda event: steps.run_step(get_container().deletion, event), background=False, sleep=wait)
    set_container(Container(inline.settings, table=inline.table, vector_index=index, deletion_runner=runner))
    target = seed_user(api, table, UserRef("demo", "ana"), index)
    started = api.delete(target.path)
    return api.get(f"{target.path}/deletions/{started.body['deletion_id']}").body, [w for w in waits if w]


def test_re_sweeps_back_off_until_an_index_that_shows_deletes_late_shows_them(
    api: ApiClient, table: Table, inline: Container
) -> None:
    # Given an external index whose deletes show in counts a minute late (OpenSearch Serverless)
    index = LateIndex()
    # When the user is deleted
    status, waits = _erase_on(inline, index, api, table)
    # Then the workflow swept again after 2, 4, 8, 16 and 32 s, and the sixth count saw the deletes
    assert status["status"] == "SUCCEEDED", status
    assert waits == [2, 4, 8, 16, 32]
    assert index.sweeps == 6
    # And each vector was counted as deleted once
    assert status["deleted"]["vectors"] == 12
    assert index.count_user(UserRef("demo", "ana")) == 0


def test_an_index_that_never_shows_the_deletes_fails_the_erasure_after_a_minute_of_sweeps(
    api: ApiClient, table: Table, inline: Container
) -> None:
    index = LateIndex(shows_deletes=False)
    status, waits = _erase_on(inline, index, api, table)
    assert status["status"] == "FAILED"
    assert status["error"]["code"] == "ErasureNotVerified"
    assert waits == [2, 4, 8, 16, 32]
