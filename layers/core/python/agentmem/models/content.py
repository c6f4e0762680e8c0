"""The ADK ``Content`` shape: a role and a list of parts.

Parts are validated against the ADK part shapes but stored and returned exactly as the client sent
them (snake_case or camelCase keys alike); only text parts are indexed. A text part that holds a chat
message's envelope as JSON (:func:`indexed_text`) is indexed by the message's text blocks.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, model_validator
from pydantic.alias_generators import to_camel


class _PartField(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Blob(_PartField):
    mime_type: str
    data: str = Field(description="base64-encoded bytes")
    display_name: str | None = None


class FileData(_PartField):
    file_uri: str
    mime_type: str | None = None
    display_name: str | None = None


class FunctionCall(_PartField):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None


class FunctionResponse(_PartField):
    name: str
    response: dict[str, Any] | None = None
    id: str | None = None


class ExecutableCode(_PartField):
    code: str
    language: str | None = None


class CodeExecutionResult(_PartField):
    outcome: str
    output: str | None = None


PART_SHAPES: dict[str, type[BaseModel] | type[str]] = {
    "text": str,
    "inline_data": Blob,
    "file_data": FileData,
    "function_call": FunctionCall,
    "function_response": FunctionResponse,
    "executable_code": ExecutableCode,
    "code_execution_result": CodeExecutionResult,
}
_CAMEL = {to_camel(name): name for name in PART_SHAPES}
# Flags ADK allows beside the data of a part.
_PART_FLAGS = {"thought": bool, "thought_signature": str, "thoughtSignature": str}


class Part(RootModel[dict[str, Any]]):
    """One part: exactly one data field of a known ADK shape, kept as sent."""

    root: dict[str, Any]

    @model_validator(mode="after")
    def _check_shape(self) -> Part:
        data = self.root
        kinds = []
        for key, value in data.items():
            if key in _PART_FLAGS:
                if not isinstance(value, _PART_FLAGS[key]):
                    raise ValueError(f"part field {key!r} has the wrong type")
                continue
            kind = _CAMEL.get(key, key)
            shape = PART_SHAPES.get(kind)
            if shape is None:
                known = ", ".join(PART_SHAPES)
                raise ValueError(f"unknown part field {key!r}; a part holds one of: {known}")
            if value is None:
                continue
            if shape is str:
                if not isinstance(value, str):
                    raise ValueError("a text part's text must be a string")
            else:
                try:
                    shape.model_validate(value)  # type: ignore[union-attr]
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first["loc"])
                    raise ValueError(f"invalid {kind} part: {where}: {first['msg']}") from None
            kinds.append(kind)
        if len(kinds) != 1:
            raise ValueError("a part must hold exactly one of: " + ", ".join(PART_SHAPES))
        return self

    @property
    def text(self) -> str | None:
        value = self.root.get("text")
        return value if isinstance(value, str) else None


class Content(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str | None = Field(default=None, max_length=64)
    parts: list[Part] = Field(default_factory=list, max_length=1000)

    def text(self) -> str:
        """The indexed text: every text part (:func:`indexed_text`), one per line."""
        return "\n".join(t for t in (indexed_text(p.text) for p in self.parts if p.text) if t)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"parts": [p.root for p in self.parts]}
        if self.role is not None:
            out = {"role": self.role, **out}
        return out


_ENVELOPE_START = '{"message": {'


def indexed_text(text: str | None) -> str:
    """What a text part is indexed by: the text, or, when it is a chat message's envelope as JSON, the text
    blocks of the message. The Strands session manager stores each message of an agent as such an envelope
    in a conversational event (``{"message": {"role", "content": [{"text"}, {"toolUse"}, ...]}, "message_id",
    "created_at", ...}``, non-ASCII escaped): its keys, tool calls and timestamps are no words of anyone's, and
    escaped words would never match. The part itself is kept and returned as written."""
    if not text or not text.startswith(_ENVELOPE_START):
        return text or ""
    try:
        envelope = json.loads(text)
    except ValueError:
        return text
    message = envelope.get("message") if isinstance(envelope, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return text
    blocks = message.get("content")
    if not isinstance(blocks, list):
        return text
    return "\n".join(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))
