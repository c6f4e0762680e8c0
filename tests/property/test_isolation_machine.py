"""A stateful isolation property test: random API sequences against a model of what each scope must see.

Hypothesis drives the API handler (the module Lambda runs, through API Gateway events) with random
sequences of entry writes, session replaces, entry / session / project deletes, graph writes,
invalidations, user erasures and exports, across 3 apps x 3 users x (global + 3 projects) whose ids are
full of ``#``, ``%``, ``/`` and non-ASCII letters, chosen so that a key encoding that merely joined or
half-escaped them would make two scopes share a key. A plain-Python model says what every scope holds.
After each step:

- every read (list, search, get, graph, export) returns exactly what the model says that scope sees:
  nothing of another scope (isolation), nothing acknowledged missing (durability);
- a delete or invalidate with an id of another scope is a 404 and changes nothing;
- an erasure ends SUCCEEDED with the user's entry count in its receipt and leaves zero items in the
  user's partitions, while every other user keeps all of theirs.

It runs on both tables (SQLite and DynamoDB under moto), each example on a fresh table.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from agentmem import users as user_records
from agentmem.container import Container, set_container
from agentmem.keys import Scope, UserRef
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.support import ApiClient, Reply, scope_path, stored_keys, text_entry

# (acme#u, x) and (acme, u#x) collide under a plain "#" join; acme#u and acme%23u under an escape of "#"
# alone; x%2F/y and x//y under a second percent-decoding of the path.
APPS = ("acme", "acme#u", "acme%23u")
USERS = ("x", "u#x", "x%2F/y é")
PROJECTS = (None, "p", "x#p", "項目/%25")
SESSIONS = ("s1", "s#1", "s/%2F")
ENTITIES = ("Alice", "Bob#1", "名前/%")
RELATION_TYPES = ("knows", "works#at")
FILLERS = ("", "東京に住む", "café crème", "#tag %25 a/b", "dark mode")

users = st.sampled_from([(a, u) for a in APPS for u in USERS])
projects = st.sampled_from(PROJECTS)


@dataclass
class Entry:
    app: str
    user: str
    project: str | None
    session: str | None
    marker: str
    id: str | None = None


@dataclass
class Observation:
    scope: tuple[str, str, str | None]
    entity: str
    content: str
    current: bool = True


@dataclass
class Relation:
    scope: tuple[str, str, str | None]
    source: str
    relation_type: str
    target: str
    current: bool = True


@dataclass
class Model:
    entries: dict[str, Entry] = field(default_factory=dict)
    observations: dict[str, Observation] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    names: dict[tuple[str, str, str | None], set[str]] = field(default_factory=dict)

    @staticmethod
    def visible(project: str | None) -> set[str | None]:
        return {None} if project is None else {None, project}

    def entries_seen(self, app: str, user: str, project: str | None) -> set[str]:
        seen = self.visible(project)
        return {m for m, e in self.entries.items() if (e.app, e.user) == (app, user) and e.project in seen}

    def graph_seen(self, app: str, user: str, project: str | None) -> tuple[set[str], set[str], set[str]]:
        scopes = {(app, user, p) for p in self.visible(project)}
        names = set().union(*(self.names.get(s, set()) for s in scopes))
        observations = {i for i, o in self.observations.items() if o.scope in scopes and o.current}
        relations = {i for i, r in self.relations.items() if r.scope in scopes and r.current}
        return names, observations, relations

    def forget_user(self, app: str, user: str) -> None:
        self.entries = {m: e for m, e in self.entries.items() if (e.app, e.user) != (app, user)}
        self.observations = {i: o for i, o in self.observations.items() if o.scope[:2] != (app, user)}
        self.relations = {i: r for i, r in self.relations.items() if r.scope[:2] != (app, user)}
        self.names = {s: n for s, n in self.names.items() if s[:2] != (app, user)}

    def forget_project(self, app: str, user: str, project: str) -> None:
        scope = (app, user, project)
        self.entries = {m: e for m, e in self.entries.items() if (e.app, e.user, e.project) != scope}
        self.observations = {i: o for i, o in self.observations.items() if o.scope != scope}
        self.relations = {i: r for i, r in self.relations.items() if r.scope != scope}
        self.names.pop(scope, None)


def _project_query(project: str | None) -> dict[str, str]:
    return {} if project is None else {"project_id": project}


def _project_body(project: str | None) -> dict[str, str]:
    return {} if project is None else {"project_id": project}


def _marker(entry: dict[str, Any]) -> str:
    return str(entry["content"]["parts"][0]["text"]).split(" ", 1)[0]


def _ok(reply: Reply, status: int = 200) -> Any:
    assert reply.status == status, f"{reply.status} {reply.body}"
    return reply.body


def _user_partitions(app: str, user: str) -> tuple[str, str]:
    """The user's own partition, and the prefix every partition of the user's scopes starts with."""
    return UserRef(app, user).partition, Scope(app, user, "p").partition.removesuffix("#p") + "#"


class IsolationMachine(RuleBasedStateMachine):
    """Subclassed per table kind: ``make_table`` returns a fresh table and a function that disposes of it."""

    def make_table(self) -> tuple[Table, Any]:
        raise NotImplementedError

    def __init__(self) -> None:
        super().__init__()
        self.table, self._dispose = self.make_table()
        self.container = Container(Settings(deletion_drain_seconds=0), table=self.table)
        set_container(self.container)
        self.api = ApiClient()
        self.model = Model()
        self.counter = itertools.count()

    def teardown(self) -> None:
        set_container(None)
        self._dispose()

    def _next_marker(self) -> str:
        return f"mk{next(self.counter):05d}q"

    def _text(self, filler: str) -> str:
        return f"{self._next_marker()} {filler}".strip()

    # -- memory writes ------------------------------------------------------------------------------

    @rule(who=users, project=projects, session=st.none() | st.sampled_from(SESSIONS), filler=st.sampled_from(FILLERS))
    def add_entry(self, who: tuple[str, str], project: str | None, session: str | None, filler: str) -> None:
        app, user = who
        body: dict[str, Any] = {"entry": text_entry(self._text(filler)), **_project_body(project)}
        if session is not None:
            body["session_id"] = session
        stored = _ok(self.api.post(scope_path(app, user) + "/memories", body), 201)
        assert (stored["project_id"], stored["session_id"]) == (project, session)
        marker = _marker(stored)
        self.model.entries[marker] = Entry(app, user, project, session, marker, stored["id"])

    @rule(
        who=users,
        project=projects,
        session=st.sampled_from(SESSIONS),
        fillers=st.lists(st.sampled_from(FILLERS), max_size=3),
    )
    def replace_session(self, who: tuple[str, str], project: str | None, session: str, fillers: list[str]) -> None:
        app, user = who
        texts = [self._text(f) for f in fillers]
        body = {"entries": [text_entry(t) for t in texts], **_project_body(project)}
        path = f"{scope_path(app, user)}/sessions/{quote(session, safe='')}/memories"
        assert _ok(self.api.put(path, body))["stored"] == len(texts)
        replaced = [
            m
            for m, e in self.model.entries.items()
            if (e.app, e.user, e.project, e.session) == (*who, project, session)
        ]
        for marker in replaced:
            del self.model.entries[marker]
        for text in texts:
            marker = text.split(" ", 1)[0]
            self.model.entries[marker] = Entry(app, user, project, session, marker)

    # -- memory deletes -----------------------------------------------------------------------------

    def _known_ids(self) -> list[Entry]:
        return [e for e in self.model.entries.values() if e.id is not None]

    @precondition(lambda self: self._known_ids())
    @rule(data=st.data())
    def delete_entry(self, data: st.DataObject) -> None:
        entry = data.draw(st.sampled_from(self._known_ids()))
        others = [(a, u) for a in APPS for u in USERS if (a, u) != (entry.app, entry.user)]
        app, user = data.draw(st.sampled_from(others))
        # Another user's id is "not found" there, and deletes nothing
        self._expect_not_found(self.api.delete(f"{scope_path(app, user)}/memories/{quote(entry.id or '', safe='')}"))
        _ok(self.api.delete(f"{scope_path(entry.app, entry.user)}/memories/{quote(entry.id or '', safe='')}"), 204)
        del self.model.entries[entry.marker]

    @rule(who=users, project=projects, session=st.sampled_from(SESSIONS))
    def delete_session(self, who: tuple[str, str], project: str | None, session: str) -> None:
        app, user = who
        path = f"{scope_path(app, user)}/sessions/{quote(session, safe='')}"
        deleted = _ok(self.api.delete(path, query=_project_query(project)))["deleted"]
        gone = [
            m
            for m, e in self.model.entries.items()
            if (e.app, e.user, e.project, e.session) == (*who, project, session)
        ]
        assert deleted == len(gone)
        for marker in gone:
            del self.model.entries[marker]

    @rule(who=users, project=st.sampled_from(PROJECTS[1:]))
    def delete_project(self, who: tuple[str, str], project: str) -> None:
        app, user = who
        reply = self.api.delete(f"{scope_path(app, user)}/projects/{quote(project, safe='')}")
        expected = [m for m, e in self.model.entries.items() if (e.app, e.user, e.project) == (*who, project)]
        assert _ok(reply)["deleted"] == len(expected)
        self.model.forget_project(app, user, project)

    # -- graph writes ---------------------------------------------------------------------------------

    @rule(who=users, project=projects, name=st.sampled_from(ENTITIES), facts=st.integers(0, 2))
    def create_entity(self, who: tuple[str, str], project: str | None, name: str, facts: int) -> None:
        app, user = who
        scope = (app, user, project)
        contents = [f"fact {self._next_marker()}" for _ in range(facts)]
        body = {"entities": [{"name": name, "observations": contents}], **_project_body(project)}
        (entity,) = _ok(self.api.post(scope_path(app, user) + "/graph/entities", body))["entities"]
        known = {
            i: o.content
            for i, o in self.model.observations.items()
            if (o.scope, o.entity, o.current) == (scope, name, True)
        }
        returned = {o["id"]: o["content"] for o in entity["observations"]}
        # The entity comes back with every current observation it had in this scope, and the new ones
        assert known.items() <= returned.items()
        assert sorted(set(returned.values()) - set(known.values())) == sorted(contents)
        for obs_id, content in returned.items():
            self.model.observations.setdefault(obs_id, Observation(scope, name, content))
        self.model.names.setdefault(scope, set()).add(name)

    @rule(
        who=users,
        project=projects,
        source=st.sampled_from(ENTITIES),
        relation_type=st.sampled_from(RELATION_TYPES),
        to=st.sampled_from(ENTITIES),
    )
    def create_relation(
        self, who: tuple[str, str], project: str | None, source: str, relation_type: str, to: str
    ) -> None:
        target = to  # ("target" is a reserved argument of @rule)
        app, user = who
        scope = (app, user, project)
        body = {
            "relations": [{"source": source, "relation_type": relation_type, "target": target}],
            **_project_body(project),
        }
        (relation,) = _ok(self.api.post(scope_path(app, user) + "/graph/relations", body))["relations"]
        same = [
            i
            for i, r in self.model.relations.items()
            if (r.scope, r.source, r.relation_type, r.target, r.current) == (scope, source, relation_type, target, True)
        ]
        assert [relation["id"]] == same or not same, "an identical current relation is returned, not stored twice"
        self.model.relations.setdefault(relation["id"], Relation(scope, source, relation_type, target))
        self.model.names.setdefault(scope, set()).update({source, target})

    def _current_observations(self) -> list[str]:
        return sorted(i for i, o in self.model.observations.items() if o.current)

    def _current_relations(self) -> list[str]:
        return sorted(i for i, r in self.model.relations.items() if r.current)

    @precondition(lambda self: self._current_observations())
    @rule(data=st.data())
    def invalidate_observation(self, data: st.DataObject) -> None:
        obs_id = data.draw(st.sampled_from(self._current_observations()))
        obs = self.model.observations[obs_id]
        app, user, project = obs.scope
        # From a scope that does not see it: not found, and it stays current
        blind = data.draw(st.sampled_from(self._blind_scopes(obs.scope)))
        path = f"/graph/observations/{quote(obs_id, safe='')}/invalidate"
        self._expect_not_found(self.api.post(scope_path(*blind[:2]) + path, _project_body(blind[2])))
        # From a project that sees a global fact: not found either (a project never widens a write)
        if project is None:
            over = data.draw(st.sampled_from([p for p in PROJECTS if p is not None]))
            self._expect_not_found(self.api.post(scope_path(app, user) + path, _project_body(over)))
        # From its own scope
        closed = _ok(self.api.post(scope_path(app, user) + path, _project_body(project)))
        assert closed["id"] == obs_id
        assert closed["valid_to"] is not None
        obs.current = False

    @precondition(lambda self: self._current_relations())
    @rule(data=st.data())
    def invalidate_relation(self, data: st.DataObject) -> None:
        rel_id = data.draw(st.sampled_from(self._current_relations()))
        relation = self.model.relations[rel_id]
        app, user, project = relation.scope
        blind = data.draw(st.sampled_from(self._blind_scopes(relation.scope)))
        path = f"/graph/relations/{quote(rel_id, safe='')}/invalidate"
        self._expect_not_found(self.api.post(scope_path(*blind[:2]) + path, _project_body(blind[2])))
        closed = _ok(self.api.post(scope_path(app, user) + path, _project_body(project)))
        assert closed["id"] == rel_id
        assert closed["valid_to"] is not None
        relation.current = False

    @staticmethod
    def _blind_scopes(scope: tuple[str, str, str | None]) -> list[tuple[str, str, str | None]]:
        """Scopes that must not see an item of ``scope``: other users' scopes, and the user's other projects."""
        app, user, project = scope
        seeing = {(app, user, p) for p in PROJECTS if project is None or p == project}
        return [(a, u, p) for a in APPS for u in USERS for p in PROJECTS if (a, u, p) not in seeing]

    def _expect_not_found(self, reply: Reply) -> None:
        assert reply.status == 404, f"{reply.status} {reply.body}"

    # -- erasure and export -------------------------------------------------------------------------

    def _users_with_data(self) -> list[tuple[str, str]]:
        held = {(e.app, e.user) for e in self.model.entries.values()}
        held |= {s[:2] for s, names in self.model.names.items() if names}
        return sorted(held)

    @precondition(lambda self: self._users_with_data())
    @rule(data=st.data())
    def erase_user(self, data: st.DataObject) -> None:
        who = data.draw(st.sampled_from(self._users_with_data()))
        app, user = who
        entries = len([e for e in self.model.entries.values() if (e.app, e.user) == who])
        before = {k for k in stored_keys(self.table) if not self._belongs_to(k, app, user)}
        started = _ok(self.api.delete(scope_path(app, user)), 202)
        assert self.container.deletion_runner.wait(60), "the erasure did not finish"  # type: ignore[attr-defined]
        status = _ok(self.api.get(f"{scope_path(app, user)}/deletions/{quote(started['deletion_id'], safe='')}"))
        assert status["status"] == "SUCCEEDED", status
        assert status["deleted"]["entries"] == entries
        after = set(stored_keys(self.table))
        # Nothing of the user is left; every other user's item is still there (the receipt is the app's)
        assert not [k for k in after if self._belongs_to(k, app, user)]
        assert before <= after
        self.model.forget_user(app, user)

    @staticmethod
    def _belongs_to(key: tuple[str, str], app: str, user: str) -> bool:
        """The user's partitions, and the user's row in the app's list of users (agentmem/users.py)."""
        own, scopes = _user_partitions(app, user)
        return key[0] == own or key[0].startswith(scopes) or key == user_records.app_user_key(UserRef(app, user))

    @rule(who=users)
    def export_user(self, who: tuple[str, str]) -> None:
        app, user = who
        entries: list[dict[str, Any]] = []
        graph: dict[str, list[dict[str, Any]]] = {"entities": [], "relations": [], "observations": []}
        cursor: str | None = None
        while True:
            page = _ok(self.api.get(f"{scope_path(app, user)}/export", query={"cursor": cursor} if cursor else None))
            entries += page["entries"]
            for section in graph:
                graph[section] += page["graph"][section]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        mine = {m for m, e in self.model.entries.items() if (e.app, e.user) == who}
        assert sorted(_marker(e) for e in entries) == sorted(mine)
        observations = {i for i, o in self.model.observations.items() if o.scope[:2] == who}
        assert {o["id"] for o in graph["observations"]} == observations
        relations = {i for i, r in self.model.relations.items() if r.scope[:2] == who}
        assert {r["id"] for r in graph["relations"]} == relations

    # -- reads ----------------------------------------------------------------------------------------

    @rule(who=users, project=projects)
    def list_entries(self, who: tuple[str, str], project: str | None) -> None:
        app, user = who
        seen: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = {**_project_query(project), "limit": 7, **({"cursor": cursor} if cursor else {})}
            page = _ok(self.api.get(scope_path(app, user) + "/memories", query=query))
            seen += page["entries"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert sorted(_marker(e) for e in seen) == sorted(self.model.entries_seen(app, user, project))
        for entry in seen:
            model = self.model.entries[_marker(entry)]
            assert (entry["project_id"], entry["session_id"]) == (model.project, model.session)
            model.id = entry["id"]

    @precondition(lambda self: self.model.entries)
    @rule(data=st.data(), who=users, project=projects)
    def search_marker(self, data: st.DataObject, who: tuple[str, str], project: str | None) -> None:
        """Search each scope for one entry's unique word: only the scopes that see it find it."""
        marker = data.draw(st.sampled_from(sorted(self.model.entries)))
        app, user = who
        body = {"query": marker, "mode": "keyword", **_project_body(project)}
        found = _ok(self.api.post(scope_path(app, user) + "/memories/search", body))["entries"]
        expected = [marker] if marker in self.model.entries_seen(app, user, project) else []
        assert [_marker(e) for e in found] == expected

    @precondition(lambda self: self._known_ids())
    @rule(data=st.data(), who=users)
    def get_entry(self, data: st.DataObject, who: tuple[str, str]) -> None:
        entry = data.draw(st.sampled_from(self._known_ids()))
        reply = self.api.get(f"{scope_path(*who)}/memories/{quote(entry.id or '', safe='')}")
        if who == (entry.app, entry.user):
            assert _marker(_ok(reply)) == entry.marker
        else:
            self._expect_not_found(reply)

    @rule(who=users, project=projects)
    def read_graph(self, who: tuple[str, str], project: str | None) -> None:
        app, user = who
        graph = _ok(self.api.get(scope_path(app, user) + "/graph", query=_project_query(project)))
        names, observations, relations = self.model.graph_seen(app, user, project)
        assert {e["name"] for e in graph["entities"]} == names
        assert {o["id"] for e in graph["entities"] for o in e["observations"]} == observations
        assert {r["id"] for r in graph["relations"]} == relations


PROPERTY = settings(
    max_examples=30,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,  # the same sequences on every run; a failure prints the steps that reproduce it
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
PROPERTY_ON_MOTO = settings(PROPERTY, max_examples=6, stateful_step_count=25)
"""Fewer and shorter sequences under moto, where each table call costs about ten times SQLite's."""


def _sqlite_machine() -> type[IsolationMachine]:
    from agentmem.stores.sqlite_table import SqliteTable

    class OnSqlite(IsolationMachine):
        def make_table(self) -> tuple[Table, Any]:
            folder = tempfile.TemporaryDirectory()
            table = SqliteTable(Path(folder.name) / "memory.db")

            def dispose() -> None:
                table.close()
                folder.cleanup()

            return table, dispose

    return OnSqlite


def _dynamo_machine() -> type[IsolationMachine]:
    from agentmem.stores.dynamo_table import DynamoTable

    names = itertools.count()

    class OnDynamo(IsolationMachine):
        def make_table(self) -> tuple[Table, Any]:
            table = DynamoTable(f"agent-memory-prop-{next(names)}", region_name="us-east-1")
            table.create()
            return table, lambda: table.client.delete_table(TableName=table.table_name)

    return OnDynamo


@pytest.fixture
def moto() -> Iterator[None]:
    from moto import mock_aws

    from tests.moto_support import serialise_moto_dynamodb

    serialise_moto_dynamodb()
    with mock_aws():
        yield


@pytest.mark.slow
def test_no_scope_sees_another_and_nothing_acknowledged_is_lost_on_sqlite() -> None:
    run_state_machine_as_test(_sqlite_machine(), settings=PROPERTY)


@pytest.mark.slow
@pytest.mark.usefixtures("moto")
def test_no_scope_sees_another_and_nothing_acknowledged_is_lost_on_dynamodb() -> None:
    run_state_machine_as_test(_dynamo_machine(), settings=PROPERTY_ON_MOTO)
