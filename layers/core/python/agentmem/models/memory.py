"""Memory entries as they come in, as they are stored and as the API returns them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from agentmem.errors import InvalidInput
from agentmem.keys import ID_JSON_SCHEMA, validate_id
from agentmem.memory.filters import KEY_PATTERN, is_finite
from agentmem.models.content import Content

MAX_ENTRIES_PER_REQUEST = 500
MAX_TEXT_BYTES = 64 * 1024
MAX_METADATA_KEYS = 32
MAX_METADATA_STRING_BYTES = 1024
MAX_METADATA_LIST = 32
MAX_TTL_SECONDS = 315_360_000
MAX_ENTRY_BYTES = 256 * 1024
"""An entry's content (every part, inline data included) as JSON: it must fit one 400 KB table item."""

SearchMode = Literal["keyword", "semantic", "hybrid"]


def _id(field: str) -> AfterValidator:
    def check(value: str) -> str:
        try:
            return validate_id(value, field)
        except InvalidInput as exc:
            raise ValueError(exc.message) from None

    return AfterValidator(check)


LAST_YEAR = 9000
"""The latest year a stored time may fall in: every period read against it (the dates a search names, a
month's spill into the next year, the fade of closeness) stays inside the calendar (9999)."""


def utc_moment(value: datetime, field: str = "the time") -> datetime:
    """``value`` in UTC; refuses a naive time, one that leaves the calendar once converted, or one after
    :data:`LAST_YEAR`."""
    if value.tzinfo is None:
        raise ValueError(f"{field} must carry a time zone (RFC 3339, e.g. 2026-06-01T09:30:00Z)")
    try:
        moment = value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{field} is out of range once converted to UTC") from None
    if moment.year > LAST_YEAR:
        raise ValueError(f"{field} must be before the year {LAST_YEAR + 1}")
    return moment


def _utc(value: datetime) -> datetime:
    return utc_moment(value)


Timestamp = Annotated[datetime, AfterValidator(_utc)]
"""An RFC 3339 time with a zone, held in UTC."""

ID_SCHEMA = WithJsonSchema({"type": "string", **ID_JSON_SCHEMA})
"""An id as the OpenAPI document states it (the byte limit is checked by :func:`validate_id`)."""
TtlSeconds = Annotated[
    int, Field(ge=1, le=MAX_TTL_SECONDS, description="applied to the entries that have no expires_at of their own")
]
FilterDocument = Annotated[
    dict[str, Any],
    Field(description="the filter language of docs/search.md, over metadata and author, session_id, timestamp"),
]
ProjectId = Annotated[str, _id("project_id"), ID_SCHEMA]
SessionId = Annotated[str, _id("session_id"), ID_SCHEMA]


def _metadata_value(key: str, value: Any) -> None:
    if isinstance(value, bool | str) or (isinstance(value, int | float) and is_finite(value)):
        if isinstance(value, str) and len(value.encode("utf-8")) > MAX_METADATA_STRING_BYTES:
            raise ValueError(f"metadata {key!r}: a string is at most {MAX_METADATA_STRING_BYTES} bytes")
        return
    if isinstance(value, list):
        if len(value) > MAX_METADATA_LIST or not all(isinstance(v, str) for v in value):
            raise ValueError(f"metadata {key!r}: a list holds at most {MAX_METADATA_LIST} strings")
        for v in value:
            _metadata_value(key, v)
        return
    raise ValueError(f"metadata {key!r}: a value is a string, a finite number, a boolean or a list of strings")


def check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """API.md's bounds: at most 32 keys of 1..64 ``[A-Za-z0-9_.-]``; values as :func:`_metadata_value`."""
    if len(value) > MAX_METADATA_KEYS:
        raise ValueError(f"metadata holds at most {MAX_METADATA_KEYS} keys")
    for key, item in value.items():
        if not KEY_PATTERN.fullmatch(key):
            raise ValueError(f"metadata key {key!r}: 1..64 characters of A-Z a-z 0-9 _ . -")
        _metadata_value(key, item)
    return value


def _aware(field: str) -> AfterValidator:
    def check(value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError(f"{field} must carry a time zone (RFC 3339, e.g. 2026-06-01T09:30:00Z)")
        return value

    return AfterValidator(check)


Metadata = Annotated[dict[str, Any], AfterValidator(check_metadata)]

RESERVED_METADATA_PREFIXES = ("agentcore.", "store.")
"""Metadata keys this service writes itself (AgentCore's events and records, the LangGraph store's items):
the REST and MCP writes may not set them, since the views that read them trust what they hold."""


def check_told_metadata(metadata: dict[str, Any] | None) -> None:
    """Refuse metadata keys of :data:`RESERVED_METADATA_PREFIXES` (a write through the REST API or MCP)."""
    for key in metadata or {}:
        if key.startswith(RESERVED_METADATA_PREFIXES):
            raise ValueError(
                f"metadata key {key!r}: keys beginning with {' or '.join(map(repr, RESERVED_METADATA_PREFIXES))} "
                "are this service's own (AgentCore's records and events, the store's items); choose another key"
            )


def _told(entry: MemoryEntry) -> MemoryEntry:
    check_told_metadata(entry.metadata)
    return entry


def _told_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    check_told_metadata(metadata)
    return metadata


ToldMetadata = Annotated[dict[str, Any], AfterValidator(check_metadata), AfterValidator(_told_metadata)]
"""Metadata of a write through MCP: as :data:`Metadata`, with none of the service's own keys."""


class MemoryEntry(BaseModel):
    """What an agent asks to remember: ADK's MemoryEntry, with our metadata and expiry."""

    model_config = ConfigDict(extra="forbid")

    content: Content
    author: str | None = Field(default=None, max_length=256)
    timestamp: Timestamp | None = None
    metadata: Metadata | None = Field(
        default=None, description="at most 32 keys; values: string (<= 1 KiB), number, boolean, list of <= 32 strings"
    )
    expires_at: Timestamp | None = Field(
        default=None, description="never returned after this time; removed within 48 hours"
    )


class StoredEntry(BaseModel):
    id: str
    session_id: str | None
    project_id: str | None
    content: dict[str, Any]
    author: str | None
    timestamp: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    expires_at: str | None = None
    score: float | None = None
    indexing: str | None = None
    """``pending`` on a write answer when the entry was stored but not yet indexed for semantic search."""
    revision: int = 1
    """1 for an entry never corrected; each PATCH adds one."""
    updated_at: str = ""
    """When the current version was written (the entry's timestamp until it is corrected)."""

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(exclude={k for k in ("score", "indexing") if getattr(self, k) is None})


def _plain_text(value: Any) -> Any:
    """A plain string is the user's own words: role user, one text part, author user (as both clients send it)."""
    if isinstance(value, str):
        return {"content": {"role": "user", "parts": [{"text": value}]}, "author": "user"}
    return value


class _OrPlainText:
    """The OpenAPI schema of an entry that may be written as a plain string."""

    @staticmethod
    def __get_pydantic_json_schema__(schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        plain = {"type": "string", "description": "the user's words: role user, one text part, author user"}
        return {"anyOf": [handler(schema), plain]}


ToldEntry = Annotated["MemoryEntry", BeforeValidator(_plain_text), AfterValidator(_told), _OrPlainText()]
"""An entry written through the REST API, a MemoryEntry or a plain string (:func:`_plain_text`): its metadata
keys are not the service's own."""


class PutSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entries: list[ToldEntry] = Field(max_length=MAX_ENTRIES_PER_REQUEST)
    project_id: ProjectId | None = None
    ttl_seconds: TtlSeconds | None = None


class AddEntryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entry: ToldEntry
    project_id: ProjectId | None = None
    session_id: SessionId | None = None
    ttl_seconds: TtlSeconds | None = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_TEXT_BYTES)
    top_k: int = Field(default=10, ge=1, le=100)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    project_id: ProjectId | None = None
    mode: SearchMode | None = None
    filter: FilterDocument | None = None


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filter: FilterDocument
    project_id: ProjectId | None = None
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=128)


class ExtractSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_id: ProjectId | None = None


class DeleteByQueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str | None = Field(default=None, max_length=MAX_TEXT_BYTES)
    filter: FilterDocument | None = None
    project_id: ProjectId | None = None


class UpdateEntryRequest(BaseModel):
    """PATCH of an entry: new content, new metadata (``null``: none), or both; ``revision``: only if the entry
    is still at it (409 ``revision_conflict`` otherwise)."""

    model_config = ConfigDict(extra="forbid")

    content: Content | None = None
    metadata: ToldMetadata | None = Field(
        default=None, description="replaces the entry's metadata; null removes it; absent keeps it"
    )
    revision: int | None = Field(default=None, ge=1, description="the entry's revision the change is made on")
    project_id: ProjectId | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> UpdateEntryRequest:
        if self.content is None and "metadata" not in self.model_fields_set:
            raise ValueError("give content, metadata or both: a PATCH changes at least one")
        return self
