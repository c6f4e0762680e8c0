"""Issue 24, point 4 (export): each page of ``GET {scope}/export`` reads a bounded number of items, through
the real handler on both tables (SQLite and DynamoDB on moto), items read counted by ``capacity.measuring``.

The rows the export does not return (a scope's keyword postings of the earlier layout, ``MT#<word>#<id>``;
the graph's postings; the change log) are never read, so they neither slow a page nor change what the
export holds; and a page that reaches its read budget ends with a cursor the next page resumes from."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentmem import capacity, users
from agentmem.container import Container, set_container
from agentmem.deletion.service import EXPORT_PAGE_ITEMS, EXPORT_PAGE_READS, DeletionService
from agentmem.keys import Scope, UserRef
from agentmem.memory import records as memory_records
from agentmem.stores.table import Item, Table
from tests.erasure_support import graph_like_items
from tests.support import ApiClient, scope_path, text_entry

USER = UserRef("demo", "ana")
PATH = scope_path("demo", "ana")


@dataclass
class Export:
    """Every page's content, flattened, and what each page read."""

    content: dict[str, list[Any]] = field(default_factory=dict)
    items_read: list[int] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)


def export_measured(api: ApiClient) -> Export:
    exported = Export({"entries": [], "entities": [], "relations": [], "observations": [], "episodes": [], "store": []})
    cursor = None
    for _ in range(1000):
        with capacity.measuring() as used:
            reply = api.get(f"{PATH}/export", query={"cursor": cursor} if cursor else None)
        assert reply.status == 200, reply.body
        page = {**reply.body["graph"], **{k: reply.body[k] for k in ("entries", "episodes", "store")}}
        for section, values in page.items():
            exported.content[section] += values
        exported.items_read.append(used.items_read)
        exported.returned.append(sum(len(values) for values in page.values()))
        cursor = reply.body["next_cursor"]
        if cursor is None:
            return exported
    raise AssertionError("the export never ended")


def legacy_postings(scope: Scope, entry: Item, words: int) -> list[Item]:
    """An entry's keyword postings as entries had them in the table (memory/records.py LEGACY_TOKENS)."""
    return [{"pk": scope.partition, "sk": f"MT#word{w}#{entry['id']}", "tf": 1, "dl": words} for w in range(words)]


def test_postings_and_logs_are_never_read_and_change_nothing_exported(
    api: ApiClient, table: Table, container: Container
) -> None:
    # Given a user with entries in two scopes (one expired, still held), store items, graph items and episodes
    # (and the change-log rows their writes left)
    for session, project in (("s-global", None), ("s-project", "x#p%25")):
        body: dict[str, Any] = {"entries": [text_entry(f"fact {i} in {project}") for i in range(20)]}
        if project:
            body["project_id"] = project
        assert api.put(f"{PATH}/sessions/{session}/memories", body).status == 200
        table.batch_write(puts=graph_like_items(USER.scope(project), project or "global"))
    ops = [
        {"op": "put", "user": "ana", "namespace": ["prefs"], "key": f"k{i}", "value": {"content": f"likes {i}"}}
        for i in range(5)
    ]
    assert api.post("/v1/apps/demo/store/batch", {"ops": ops}).status == 200
    held_expired = {
        "pk": USER.scope(None).partition,
        "sk": memory_records.entry_sk("expired0"),
        "id": "expired0",
        "session_id": None,
        "project_id": None,
        "content": json.dumps({"role": "user", "parts": [{"text": "expired but held"}]}),
        "author": "user",
        "timestamp": "2026-01-01T00:00:00.000Z",
        memory_records.EXPIRES_AT: "2026-01-02T00:00:00.000Z",
        "ttl": int(time.time()) - 3600,
    }
    table.put(held_expired)
    before = export_measured(api)
    assert len(before.content["entries"]) == 46  # 40 entries, 5 store items' entries, the expired one
    assert len(before.content["store"]) == 5

    # When thousands of rows the export does not return are added: keyword postings of the earlier layout
    # for every entry (2,000 in the global scope, 500 in the project), and graph postings
    for project, words in ((None, 80), ("x#p%25", 25)):
        scope = USER.scope(project)
        derived: list[Item] = []
        for entry in table.query(scope.partition, memory_records.ENTRY, include_expired=True).items:
            derived += legacy_postings(scope, entry, words)
        derived += [{"pk": scope.partition, "sk": f"GT#name{i}#Entity", "tf": 1, "dl": 2} for i in range(300)]
        table.batch_write(puts=derived)
    after = export_measured(api)

    # Then the export holds exactly what it held, and no page read more than its budget
    assert after.content == before.content
    assert max(after.items_read) <= EXPORT_PAGE_READS, after.items_read
    # (the postings are not read at all: a page reads about what it returns, plus a few registry rows)
    assert sum(after.items_read) <= sum(after.returned) + 10, (after.items_read, after.returned)


def test_a_page_that_reaches_its_read_budget_resumes_where_it_stopped(
    api: ApiClient, table: Table, container: Container
) -> None:
    # Given a user with 40 projects, each holding one entry beside its postings (one registry row each)
    planted: list[Item] = []
    for i in range(40):
        scope = USER.scope(f"p{i:04d}")
        entry = {
            "pk": scope.partition,
            "sk": memory_records.entry_sk(f"e{i:04d}"),
            "id": f"e{i:04d}",
            "session_id": None,
            "project_id": scope.project_id,
            "content": json.dumps({"role": "user", "parts": [{"text": f"fact {i}"}]}),
            "author": "user",
            "timestamp": "2026-01-01T00:00:00.000Z",
        }
        planted += [users.registry_item(scope), entry, *legacy_postings(scope, entry, 3)]
    table.batch_write(puts=planted)
    whole = export_measured(api)

    # When the export is followed to its end by a service whose pages read at most 60 items
    service = DeletionService(table, receipt_key=container.settings.resolved_receipt_key(), export_page_reads=60)
    set_container(Container(container.settings, table=table, deletion=service))
    paged = export_measured(api)

    # Then no page read more than that, the pages it ended early (fewer items than a page holds) carried a
    # cursor that moved on, and together they hold exactly what the export of the default budget holds
    assert max(paged.items_read) <= 60, paged.items_read
    assert len(paged.returned) > 3
    assert all(0 < returned < EXPORT_PAGE_ITEMS for returned in paged.returned), paged.returned
    assert paged.content == whole.content
    assert sorted(entry["id"] for entry in paged.content["entries"]) == [f"e{i:04d}" for i in range(40)]


def cursor_of(scope_order: Any, after: Any) -> str:
    raw = json.dumps([scope_order, after]).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


@pytest.mark.parametrize(
    ("scope_order", "after"),
    [("alpha", ""), ("~bad\u0001project", ""), ("~" + "p" * 300, ""), ("", 7)],
    ids=["scope without its mark", "control character", "project id over 256 bytes", "position not a string"],
)
def test_an_export_cursor_naming_no_scope_is_a_400(
    api: ApiClient, table: Table, container: Container, scope_order: Any, after: Any
) -> None:
    # When the export is asked with a well-formed cursor that names no scope this API could have returned
    reply = api.get(f"{PATH}/export", query={"cursor": cursor_of(scope_order, after)})
    # Then it is a 400 with the error body
    assert reply.status == 400, reply.body
    assert reply.error_code == "invalid_cursor"
