"""Memory entries as they come in, as they are stored and as the API returns them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from agentmem.errors import InvalidInput
from agentmem.keys import ID_JSON_SCHEMA, validate_id
from agentmem.models.content import Content

MAX_ENTRIES_PER_REQUEST = 500
MAX_TEXT_BYTES = 64 * 1024
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


def utc_moment(value: datetime, field: str = "the time") -> datetime:
    """``value`` in UTC; refuses a naive time or one that leaves the calendar once converted."""
    if value.tzinfo is None:
        raise ValueError(f"{field} must carry a time zone (RFC 3339, e.g. 2026-06-01T09:30:00Z)")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{field} is out of range once converted to UTC") from None


def _utc(value: datetime) -> datetime:
    return utc_moment(value)


Timestamp = Annotated[datetime, AfterValidator(_utc)]
"""An RFC 3339 time with a zone, held in UTC."""

ID_SCHEMA = WithJsonSchema({"type": "string", **ID_JSON_SCHEMA})
"""An id as the OpenAPI document states it (the byte limit is checked by :func:`validate_id`)."""
ProjectId = Annotated[str, _id("project_id"), ID_SCHEMA]
SessionId = Annotated[str, _id("session_id"), ID_SCHEMA]


class MemoryEntry(BaseModel):
    """What an agent asks to remember: ADK's MemoryEntry."""

    model_config = ConfigDict(extra="forbid")

    content: Content
    author: str | None = Field(default=None, max_length=256)
    timestamp: Timestamp | None = None


class StoredEntry(BaseModel):
    id: str
    session_id: str | None
    project_id: str | None
    content: dict[str, Any]
    author: str | None
    timestamp: str
    score: float | None = None
    indexing: str | None = None
    """``pending`` on a write answer when the entry was stored but not yet indexed for semantic search."""

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(exclude={k for k in ("score", "indexing") if getattr(self, k) is None})


class PutSessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entries: list[MemoryEntry] = Field(max_length=MAX_ENTRIES_PER_REQUEST)
    project_id: ProjectId | None = None


class AddEntryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entry: MemoryEntry
    project_id: ProjectId | None = None
    session_id: SessionId | None = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_TEXT_BYTES)
    top_k: int = Field(default=10, ge=1, le=100)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    project_id: ProjectId | None = None
    mode: SearchMode | None = None


class DeleteByQueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(max_length=MAX_TEXT_BYTES)
    project_id: ProjectId | None = None
