"""The store batch of ``POST /v1/apps/{app}/store/batch``: LangGraph's operations over HTTP."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from agentmem.errors import InvalidInput
from agentmem.keys import validate_id
from agentmem.models.memory import ID_SCHEMA, MAX_TEXT_BYTES, MAX_TTL_SECONDS, ProjectId

MAX_OPS = 100
MAX_DEPTH = 16
MAX_NAMESPACE_BYTES = 512
MAX_KEY_BYTES = 1024
MAX_LIMIT = 1000


def _valid_id(value: str, field: str) -> str:
    """:func:`validate_id` inside a model: its refusal as the ValueError pydantic reports."""
    try:
        return validate_id(value, field)
    except InvalidInput as exc:
        raise ValueError(exc.message) from None


def _user(value: str) -> str:
    return _valid_id(value, "user")


def _namespace(labels: list[str]) -> list[str]:
    for label in labels:
        _valid_id(label, "namespace label")  # 1..256 bytes, no control characters, as every id
        if "." in label:
            raise ValueError(f"namespace label {label!r}: a label holds no '.'")
    if sum(len(label.encode("utf-8")) for label in labels) > MAX_NAMESPACE_BYTES:
        raise ValueError(f"namespace: at most {MAX_NAMESPACE_BYTES} bytes of labels below the user")
    return labels


def _key(value: str) -> str:
    if len(value.encode("utf-8")) > MAX_KEY_BYTES:
        raise ValueError(f"key: at most {MAX_KEY_BYTES} bytes")
    return value


UserId = Annotated[str, AfterValidator(_user), ID_SCHEMA]
Namespace = Annotated[
    list[str],
    Field(max_length=MAX_DEPTH, description="the labels below the user (the user and app are not part of it)"),
    AfterValidator(_namespace),
]
Key = Annotated[str, AfterValidator(_key), Field(description="any string of at most 1 KiB")]


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: UserId
    project_id: ProjectId | None = None


class GetOp(_Op):
    op: Literal["get"]
    namespace: Namespace
    key: Key
    refresh_ttl: bool = False


class PutOp(_Op):
    op: Literal["put"]
    namespace: Namespace
    key: Key
    value: dict[str, Any] | None = Field(description="the document; null deletes the item")
    text: str | None = Field(
        default=None, max_length=MAX_TEXT_BYTES, description="what search ranks (default: the value's strings)"
    )
    ttl_minutes: float | None = Field(default=None, gt=0, le=MAX_TTL_SECONDS / 60)


class SearchOp(_Op):
    op: Literal["search"]
    namespace_prefix: Namespace
    query: str | None = Field(default=None, max_length=MAX_TEXT_BYTES)
    filter: dict[str, Any] | None = Field(
        default=None, description='LangGraph\'s filter on the value: {"field": value} or {"field": {"$gte": 3}}'
    )
    limit: int = Field(default=10, ge=0, le=MAX_LIMIT)
    offset: int = Field(default=0, ge=0, le=MAX_LIMIT)
    refresh_ttl: bool = False


class ListNamespacesOp(_Op):
    op: Literal["list_namespaces"]
    prefix: Namespace = Field(default_factory=list)


StoreOp = Annotated[GetOp | PutOp | SearchOp | ListNamespacesOp, Field(discriminator="op")]


class StoreBatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ops: list[StoreOp] = Field(min_length=1, max_length=MAX_OPS)


class StoreItem(BaseModel):
    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str
    expires_at: str | None = None
    score: float | None = None


class StoreBatchResults(BaseModel):
    results: list[StoreItem | list[StoreItem] | list[list[str]] | None] = Field(
        description="one per op, in order: get, an item or null; put, null; search, items; list_namespaces, paths"
    )
    truncated: list[int] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="the indexes of searches whose items were cut to the response budget (a batch without "
        "writes only; ask for the rest with a larger offset); omitted when nothing was cut",
    )
