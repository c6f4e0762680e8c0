"""The MCP tools over memory entries: search and add (this service's own since the first version), and
correcting an entry and reading its history (mem0's ``update`` and ``history``: agentmem/memory/revisions.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, StrictStr, model_validator

from agentmem.keys import validate_id
from agentmem.mcp.results import ToolResult, fit_list, json_result
from agentmem.mcp.tool import CUT as _CUT
from agentmem.mcp.tool import READ, WRITE, Services, Tool
from agentmem.mcp.tool import Strict as _Strict
from agentmem.mcp.tool import object_schema as _object
from agentmem.mcp.tool import top_schema as _top
from agentmem.memory import filters
from agentmem.models.content import Content, Part
from agentmem.models.memory import (
    MAX_TEXT_BYTES,
    FilterDocument,
    MemoryEntry,
    SearchMode,
    SessionId,
    ToldMetadata,
)

if TYPE_CHECKING:
    from agentmem.keys import Scope


class _SearchMemory(_Strict):
    query: StrictStr = Field(min_length=1, max_length=MAX_TEXT_BYTES)
    top_k: int = Field(default=10, ge=1, le=100)
    mode: SearchMode | None = None
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    filter: FilterDocument | None = None


class _AddMemory(_Strict):
    text: StrictStr = Field(min_length=1, max_length=MAX_TEXT_BYTES)
    session_id: SessionId | None = None
    metadata: ToldMetadata | None = None


class _UpdateMemory(_Strict):
    id: StrictStr = Field(min_length=1)
    text: StrictStr | None = Field(default=None, min_length=1, max_length=MAX_TEXT_BYTES)
    metadata: ToldMetadata | None = None
    revision: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _changes_something(self) -> _UpdateMemory:
        if self.text is None and "metadata" not in self.model_fields_set:
            raise ValueError("give text, metadata or both")
        return self


class _MemoryHistory(_Strict):
    id: StrictStr = Field(min_length=1)


def _search_memory(services: Services, scope: Scope, args: _SearchMemory) -> ToolResult:
    result = services.memory.search(
        scope,
        args.query,
        top_k=args.top_k,
        min_score=args.min_score,
        mode=args.mode,
        where=filters.parse(args.filter),
    )
    return json_result(fit_list(result.to_json(), "entries"))


def _add_memory(services: Services, scope: Scope, args: _AddMemory) -> ToolResult:
    entry = MemoryEntry(
        content=Content(role="user", parts=[Part({"text": args.text})]), author="user", metadata=args.metadata
    )
    stored = services.memory.add_entry(scope, entry, session_id=args.session_id)
    return json_result(stored.to_json())


def _update_memory(services: Services, scope: Scope, args: _UpdateMemory) -> ToolResult:
    changes: dict[str, Any] = {"revision": args.revision, "project_id": scope.project_id}
    if args.text is not None:
        changes["content"] = Content(role="user", parts=[Part({"text": args.text})])
    if "metadata" in args.model_fields_set:
        changes["metadata"] = args.metadata
    stored = services.memory.update_entry(scope.user_ref, validate_id(args.id, "id"), **changes)
    return json_result(stored.to_json())


def _memory_history(services: Services, scope: Scope, args: _MemoryHistory) -> ToolResult:
    history = services.memory.entry_history(scope.user_ref, validate_id(args.id, "id"), scope.project_id)
    history["versions"] = history["versions"][::-1]  # newest first, so a cut keeps the newest
    return json_result(fit_list(history, "versions"))


_ENTRY_OUT = _object(
    {"id": {"type": "string"}, "session_id": {"type": ["string", "null"]}, "project_id": {"type": ["string", "null"]},
     "content": {"type": "object"}, "author": {"type": ["string", "null"]}, "timestamp": {"type": "string"},
     "score": {"type": "number"}, "revision": {"type": "integer"}, "updated_at": {"type": "string"}},
    ["id", "content", "timestamp"],
)  # fmt: skip

MEMORY_TOOLS: list[Tool] = [
    Tool(
        "search_memory",
        "Search Memory",
        "Search the user's long-term memories (conversation turns and notes), best first.",
        _top(
            _object(
                {
                    "query": {"type": "string", "minLength": 1, "description": "what to look for"},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                    "mode": {"type": "string", "enum": ["keyword", "semantic", "hybrid"]},
                    "min_score": {"type": "number", "minimum": 0, "maximum": 1},
                    "filter": {
                        "type": "object",
                        "description": (
                            'only entries matching it, e.g. {"topic": "travel"} or '
                            '{"$and": [{"priority": {"$gte": 2}}, {"author": "user"}]}: metadata keys and author, '
                            "session_id, timestamp; operators $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $not"
                        ),
                    },
                },
                ["query"],
                closed=True,
            )
        ),
        _top(
            _object(
                {
                    "entries": {"type": "array", "items": _ENTRY_OUT},
                    "mode": {"type": "string"},
                    "degraded": {"type": "boolean"},
                    "warnings": {"type": "array", "items": {"type": "string"}},
                    **_CUT,
                },
                ["entries"],
            )
        ),
        READ,
        _search_memory,
        _SearchMemory,
    ),
    Tool(
        "add_memory",
        "Add Memory",
        "Store one memory (a note or a turn worth keeping) in the user's long-term memory.",
        _top(
            _object(
                {
                    "text": {"type": "string", "minLength": 1, "description": "the memory, in plain words"},
                    "session_id": {"type": "string", "minLength": 1, "description": "the conversation it came from"},
                    "metadata": {
                        "type": "object",
                        "description": (
                            "up to 32 keys (A-Z a-z 0-9 _ . -) of strings, numbers, booleans or lists of strings, "
                            'e.g. {"topic": "travel", "priority": 2}; search_memory can filter on them'
                        ),
                        "additionalProperties": {
                            "type": ["string", "number", "boolean", "array"],
                            "items": {"type": "string"},
                        },
                    },
                },
                ["text"],
                closed=True,
            )
        ),
        _top(_ENTRY_OUT),
        WRITE,
        _add_memory,
        _AddMemory,
    ),
]

_VERSION_OUT = _object(
    {"revision": {"type": "integer"}, "content": {"type": "object"}, "metadata": {"type": "object"},
     "valid_from": {"type": "string"}, "valid_to": {"type": ["string", "null"]}, "recorded_at": {"type": "string"}},
    ["revision", "content", "valid_from", "valid_to"],
)  # fmt: skip
_ID = {"type": "string", "minLength": 1, "description": "the memory's id (from search_memory or add_memory)"}

REVISION_TOOLS: list[Tool] = [
    Tool(
        "update_memory",
        "Update Memory",
        "Correct one memory in place: replace its text, its metadata (null removes it) or both; it keeps its id, "
        "and the version it replaces stays in memory_history. With revision, only if the memory is still at it.",
        _top(
            _object(
                {
                    "id": _ID,
                    "text": {"type": "string", "minLength": 1, "description": "the memory's new text"},
                    "metadata": {
                        "type": ["object", "null"],
                        "description": "replaces the memory's metadata (same rules as add_memory); null removes it",
                        "additionalProperties": {
                            "type": ["string", "number", "boolean", "array"],
                            "items": {"type": "string"},
                        },
                    },
                    "revision": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "the memory's revision this correction is made on (an error if it moved on)",
                    },
                },
                ["id"],
                closed=True,
            )
        ),
        _top(_ENTRY_OUT),
        WRITE,
        _update_memory,
        _UpdateMemory,
    ),
    Tool(
        "memory_history",
        "Memory History",
        "Every version of one memory, newest first: its text and metadata, when each was current "
        "(valid_from/valid_to; the current one's valid_to is null) and when it was recorded (recorded_at).",
        _top(_object({"id": _ID}, ["id"], closed=True)),
        _top(
            _object(
                {"memory_id": {"type": "string"}, "versions": {"type": "array", "items": _VERSION_OUT}, **_CUT},
                ["memory_id", "versions"],
            )
        ),
        READ,
        _memory_history,
        _MemoryHistory,
    ),
]
