"""Per-user bookkeeping shared by every capability, kept in the user's own partition ``U#app#user``:

- the registry of the user's scopes (``SCOPE#<project>``), written with every write, so erasure and
  export list a user's projects without scanning the table;
- the deletion mark (``DELETION``): while it exists, every write for the user is refused (409).
"""

from __future__ import annotations

from agentmem.errors import UserDeletionInProgress
from agentmem.keys import Scope, UserRef, escape, unescape
from agentmem.stores.table import Item, Key, Table, query_all

SCOPE_REGISTRY = "SCOPE#"
DELETION_MARK = "DELETION"


def registry_sk(project_id: str | None) -> str:
    return SCOPE_REGISTRY + escape(project_id or "")


def registry_item(scope: Scope) -> Item:
    """Write this with any item stored in ``scope`` (an idempotent put)."""
    return {"pk": scope.user_ref.partition, "sk": registry_sk(scope.project_id), "project_id": scope.project_id}


def registered_scopes(table: Table, user: UserRef) -> list[Scope]:
    """Every scope the user has written to: always the global scope, then each project."""
    projects = {
        unescape(item["sk"][len(SCOPE_REGISTRY) :]) for item in query_all(table, user.partition, SCOPE_REGISTRY)
    }
    projects.discard("")
    return [user.scope(None), *(Scope(user.app, user.user, p) for p in sorted(projects))]


def deletion_mark_key(user: UserRef) -> Key:
    return user.partition, DELETION_MARK


def ensure_writable(table: Table, user: UserRef) -> None:
    """Refuse writes while the user's erasure runs, so nothing is resurrected."""
    if table.get(*deletion_mark_key(user)) is not None:
        raise UserDeletionInProgress("this user's data is being deleted; writes are refused until it finishes")
