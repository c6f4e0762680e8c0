"""Identifier validation and the injective key encoding of the single table.

Every partition key is a tag followed by escaped components joined by ``#``. Escaping turns ``%`` into
``%25`` and ``#`` into ``%23``, so an escaped component never contains ``#`` and the escape is
reversible: two different tuples of components can never produce the same key. The global project is
the empty component, which no real project id can be (ids are 1..256 bytes).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from agentmem.errors import InvalidInput

MAX_ID_BYTES = 256
MAX_PARTITION_BYTES = 2048
"""DynamoDB's partition-key limit: an escaped ``#`` or ``%`` takes three bytes, so three ids of 256
bytes full of them would not fit."""

SCOPE_TAG = "S"
USER_TAG = "U"
TENANT_TAG = "T"


ID_JSON_SCHEMA = {"minLength": 1, "maxLength": MAX_ID_BYTES, "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]+$"}
"""What :func:`validate_id` accepts, as JSON Schema (lengths in characters; the limit is in bytes)."""


def validate_id(value: object, field: str) -> str:
    """Return ``value`` if it is a valid id: a string of 1..256 bytes of UTF-8, no control characters."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", code="invalid_id")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} is not valid UTF-8", code="invalid_id") from None
    if size == 0:
        raise InvalidInput(f"{field} must not be empty", code="invalid_id")
    if size > MAX_ID_BYTES:
        raise InvalidInput(f"{field} is {size} bytes; the limit is {MAX_ID_BYTES}", code="invalid_id")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise InvalidInput(f"{field} must not contain control characters", code="invalid_id")
    return value


def escape(component: str) -> str:
    return component.replace("%", "%25").replace("#", "%23")


def unescape(component: str) -> str:
    return component.replace("%23", "#").replace("%25", "%")


def _join(tag: str, *components: str) -> str:
    return "#".join([tag, *(escape(c) for c in components)])


@dataclass(frozen=True, slots=True)
class UserRef:
    """An end user of one tenant app: the unit of isolation and of GDPR erasure."""

    app: str
    user: str

    @classmethod
    def of(cls, app: object, user: object) -> UserRef:
        return cls(validate_id(app, "app"), validate_id(user, "user"))

    @property
    def partition(self) -> str:
        """The partition holding per-user bookkeeping: id pointers, scope registry, deletion mark."""
        return _join(USER_TAG, self.app, self.user)

    def scope(self, project_id: str | None = None) -> Scope:
        return Scope(self.app, self.user, validate_project(project_id))


@dataclass(frozen=True, slots=True)
class Scope:
    """``(app, user, project)``; ``project_id=None`` is the user's global scope."""

    app: str
    user: str
    project_id: str | None = None

    def __post_init__(self) -> None:
        size = len(self.partition.encode("utf-8", "surrogatepass"))
        if size > MAX_PARTITION_BYTES:
            raise InvalidInput(
                f"app, user and project_id are {size} bytes together once encoded (# and % count three); "
                f"the limit is {MAX_PARTITION_BYTES}",
                code="invalid_id",
            )

    @property
    def user_ref(self) -> UserRef:
        return UserRef(self.app, self.user)

    @property
    def partition(self) -> str:
        return _join(SCOPE_TAG, self.app, self.user, self.project_id or "")

    @property
    def global_scope(self) -> Scope:
        return Scope(self.app, self.user, None)

    def visible_scopes(self) -> list[Scope]:
        """Scopes a read in this scope sees: global only, or global plus this project."""
        if self.project_id is None:
            return [self]
        return [self.global_scope, self]


def validate_project(project_id: object) -> str | None:
    if project_id is None:
        return None
    return validate_id(project_id, "project_id")


def scope_of_partition(pk: str) -> Scope | None:
    """The scope of a partition key ``S#app#user#project`` (the inverse of ``Scope.partition``); None for others."""
    parts = pk.split("#")
    if len(parts) != 4 or parts[0] != SCOPE_TAG:
        return None
    return Scope(unescape(parts[1]), unescape(parts[2]), unescape(parts[3]) or None)


def user_of_partition(pk: str) -> UserRef | None:
    """The user of a partition key ``U#app#user`` (the inverse of ``UserRef.partition``); None for others."""
    parts = pk.split("#")
    if len(parts) != 3 or parts[0] != USER_TAG:
        return None
    return UserRef(unescape(parts[1]), unescape(parts[2]))


def tenant_partition(app: str) -> str:
    return _join(TENANT_TAG, app)
