"""The ChatModel port: one prompt in, one answer out, with the tokens it cost.

Callers ask for structured answers: :func:`structured` sends the answer's JSON schema (a pydantic model)
with the prompt, checks what comes back against it, asks once more when it does not parse or does not
match, and then gives up with :class:`ModelAnswerInvalid`. Every call is bounded: the adapter's timeout,
and ``max_output_tokens`` on the answer. Usage (calls, input and output tokens) is reported for every
call, answered or not, so the caller can meter what it spent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from agentmem.errors import MemoryServiceError, Unavailable

Answer = TypeVar("Answer", bound=BaseModel)

DEFAULT_MAX_OUTPUT_TOKENS = 1024
DEFAULT_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Usage:
    """What calls to a model cost: how many, and their input and output tokens."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One call: the system prompt, the user prompt, the JSON schema the answer must satisfy (an object),
    and the most output tokens it may take."""

    system: str
    prompt: str
    schema: dict[str, Any]
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    schema_name: str = "answer"


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """The model's answer as text (JSON when it kept to the schema), and what the call cost."""

    text: str
    usage: Usage
    truncated: bool = False
    """The answer stopped at ``max_output_tokens``."""


@runtime_checkable
class ChatModel(Protocol):
    model_id: str
    """The model as its provider names it (a Bedrock model id, an endpoint's model name)."""

    def complete(self, request: ChatRequest) -> ChatAnswer:
        """Ask once. Raise :class:`ModelUnavailable` when the model cannot be reached or does not answer in
        time (a retry may succeed), :class:`ModelRefused` when it refuses the request (a retry would not)."""
        ...


class ModelUnavailable(Unavailable):
    """The model could not be reached, timed out, or was throttled: a later retry may succeed."""

    code = "model_unavailable"

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage(calls=1)


class ModelTimedOut(ModelUnavailable):
    """The model was reached but did not answer within the call's limit (``timeout_seconds``): slow, not
    unreachable. MEMORY_MODEL_TIMEOUT_SECONDS raises the limit."""

    code = "model_timed_out"

    def __init__(self, message: str, *, timeout_seconds: float, usage: Usage | None = None) -> None:
        super().__init__(message, usage=usage)
        self.timeout_seconds = timeout_seconds


class ModelRefused(MemoryServiceError):
    """The model's endpoint refused the request (bad model id, no access, request too large)."""

    code = "model_refused"
    http_status = 502

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage(calls=1)


class ModelAnswerInvalid(MemoryServiceError):
    """The model answered, but not with JSON matching the schema, on every attempt."""

    code = "model_answer_invalid"
    http_status = 502

    def __init__(self, message: str, *, usage: Usage) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True, slots=True)
class Structured(Generic[Answer]):
    answer: Answer
    usage: Usage


GRAMMAR_MAX_LENGTH = 300
"""The longest ``maxLength`` and ``maxItems`` a schema sent to an endpoint states: endpoints that constrain
generation with a grammar (llama.cpp's server) unroll a bound into as many rules, and a bound of thousands
makes them refuse the grammar or fail. Longer bounds are checked on the answer instead, by its model."""


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an answer model as sent to an endpoint: inlined (no ``$ref``: small endpoints follow
    flat schemas), with bounds beyond :data:`GRAMMAR_MAX_LENGTH` left to the answer's validation."""
    loosened: dict[str, Any] = _loosened(_inline(model.model_json_schema()))
    return loosened


def _loosened(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _loosened(v)
            for k, v in node.items()
            if not (k in ("maxLength", "maxItems") and isinstance(v, int) and v > GRAMMAR_MAX_LENGTH)
        }
    if isinstance(node, list):
        return [_loosened(v) for v in node]
    return node


def structured(
    chat: ChatModel,
    answer: type[Answer],
    *,
    system: str,
    prompt: str,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    attempts: int = 2,
) -> Structured[Answer]:
    """Ask ``chat`` for an answer of type ``answer``; ask again (``attempts`` in all) while the answer does
    not parse or does not match its schema, then raise :class:`ModelAnswerInvalid` (carrying the usage of
    every attempt). :class:`ModelUnavailable` and :class:`ModelRefused` pass through, carrying the usage
    spent before them."""
    request = ChatRequest(system, prompt, schema_of(answer), max_output_tokens, answer.__name__)
    spent = Usage()
    problem = "no attempt was made"
    for attempt in range(max(1, attempts)):
        if attempt:  # the same request at temperature 0 would likely get the same answer: say what was wrong
            again = (
                f"{prompt}\n\nYour previous answer was refused ({problem}). Answer with JSON that matches the schema."
            )
            request = ChatRequest(system, again, request.schema, max_output_tokens, request.schema_name)
        try:
            reply = chat.complete(request)
        except (ModelUnavailable, ModelRefused) as error:
            error.usage = spent + error.usage
            raise
        spent = spent + reply.usage
        try:
            return Structured(answer.model_validate(parse_json(reply.text)), spent)
        except (ValueError, ValidationError) as error:
            problem = _first_line(error)
            if reply.truncated:
                problem = f"the answer was cut at {max_output_tokens} tokens ({problem})"
    raise ModelAnswerInvalid(f"the model's answer does not match its schema: {problem}", usage=spent)


def parse_json(text: str) -> Any:
    """The JSON value of an answer: the text itself, or the first JSON object in it (a model may wrap its
    answer in a code fence or a sentence)."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    start = text.find("{")
    if start < 0:
        raise ValueError("the answer holds no JSON object")
    value, _ = json.JSONDecoder().raw_decode(text[start:])
    return value


def wire_name(name: str) -> str:
    """``name`` as providers take a tool or schema name (``[a-zA-Z0-9_-]{1,64}`` on Bedrock and OpenAI): a
    generic answer model's name such as ``Page[Fact]`` would be refused."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "answer"


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            # A schema's ``title`` annotation is a string; a property named ``title`` is a schema (a dict).
            return {k: resolve(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved
