"""Hypothesis fuzzers over the request models (``agentmem.models``) and the tokenizer.

Models: whatever JSON text a client sends (nearly valid bodies with one field broken, arbitrary JSON
built from the models' own field names, lone surrogates, nesting 1,200 deep, timestamps at the ends of
the calendar, bytes that are not JSON), read as the API reads it (``api.http.parse_body``, which refuses
too deep or non-Unicode JSON with a 400) then validated by the model, it is either refused with the
validation error (pydantic's ``ValidationError``, or the library's ``InvalidInput`` that the graph's id
checks raise: both answer 422) or accepted, and what is accepted can be stored: it serialises to UTF-8
JSON and its timestamps are expressible in UTC. Never anything else.

Tokenizer: for any text, every token is non-empty UTF-8 and its posting key fits DynamoDB's 1,024-byte
sort-key limit, in the memory index and in the graph's episode index.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

import agentmem.models
from agentmem.api.http import parse_body
from agentmem.clock import new_id
from agentmem.errors import InvalidInput, MalformedRequest
from agentmem.graph import records as graph_records
from agentmem.keys import Scope
from agentmem.memory import records as memory_records
from agentmem.search.inverted_index import MAX_TERMS_PER_DOCUMENT, InvertedIndex, index_terms
from agentmem.search.tokenize import MAX_TOKEN_CHARS, graph_tokens, tokenize

MAX_SORT_KEY_BYTES = 1024
"""DynamoDB's limit on a sort key (and SQLite stores the same keys)."""


def _models() -> list[type[BaseModel]]:
    """Every pydantic model defined in the ``agentmem.models`` package (new ones are fuzzed too)."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(agentmem.models.__path__, "agentmem.models."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            defined_here = inspect.isclass(value) and value.__module__ == module.__name__ and name == value.__name__
            if defined_here and issubclass(value, BaseModel) and not name.startswith("_"):
                found[f"{module.__name__}.{name}"] = value
    return [found[name] for name in sorted(found)]


MODELS = _models()


def _field_names(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[str]:
    """The field names and aliases of a model and of the models it nests (the keys worth fuzzing)."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    names: set[str] = set()
    for name, field in model.model_fields.items():
        names |= {name, field.alias or name}
        for nested in _nested_models(field.annotation):
            names |= _field_names(nested, seen)
    return names


def _nested_models(annotation: Any) -> list[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _nested_models(arg)]


PART_KEYS = [
    "text",
    "inline_data",
    "inlineData",
    "file_data",
    "function_call",
    "functionCall",
    "function_response",
    "executable_code",
    "code_execution_result",
    "thought",
    "thought_signature",
    "mime_type",
    "mimeType",
    "data",
    "file_uri",
    "name",
    "args",
    "response",
    "id",
    "code",
    "outcome",
]
KEYS = sorted({k for model in MODELS for k in _field_names(model)} | set(PART_KEYS))

# Strings as JSON delivers them: any code point, lone surrogates included (json.loads('"\\ud800"')).
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
edge_timestamps = st.sampled_from(
    [
        "9999-12-31T23:59:59-14:00",
        "9999-12-31T23:59:59.999999-00:01",
        "0001-01-01T00:00:00+14:00",
        "0001-01-01T00:00:00+00:01",
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:00:00Z",
        "2026-06-01T09:30:00Z",
        "2026-06-01T09:30:00",
        "2026-02-30T00:00:00Z",
        "2026-06-01T24:00:00Z",
        "2026-06-01T09:30:00+24:00",
        "+002026-06-01T09:30:00Z",
    ]
)
timestamps = edge_timestamps | st.datetimes(timezones=st.timezones()).map(datetime.isoformat)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text
    | timestamps
    | st.sampled_from(["", " ", "keyword", "semantic", "hybrid", "user", "a" * 257, "é" * 129, "\x00", "#%/"])
)
keys = st.sampled_from(KEYS) | any_text
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=25,
)


def _valid_bodies() -> dict[str, Any]:
    """One valid body per kind of model field, to break one field at a time."""
    entry = {"content": {"role": "user", "parts": [{"text": "I prefer dark mode"}]}, "author": "user"}
    return {
        "entry": entry,
        "entries": [entry],
        "content": entry["content"],
        "parts": entry["content"]["parts"],
        "query": "dark mode",
        "session_id": "s1",
        "project_id": "p1",
        "entities": [{"name": "Alice", "entity_type": "person", "observations": ["likes tea"]}],
        "observations": ["likes tea"],
        "relations": [{"source": "Alice", "relation_type": "knows", "target": "Bob"}],
        "entity": "Alice",
        "facts": ["likes tea"],
        "source": "Alice",
        "target": "Bob",
        "relation": "knows",
        "relation_type": "knows",
        "name": "Alice",
        "valid_from": "2026-06-01T09:30:00Z",
        "valid_to": "2026-06-01T09:30:00Z",
        "timestamp": "2026-06-01T09:30:00Z",
        "top_k": 5,
    }


VALID = _valid_bodies()


@st.composite
def near_valid(draw: st.DrawFn, model: type[BaseModel]) -> dict[str, Any]:
    """A body with every field of ``model`` set to a valid value, then one or two fields broken."""
    body = {name: VALID[name] for name in model.model_fields if name in VALID}
    for name in draw(st.lists(st.sampled_from(sorted(model.model_fields)), min_size=1, max_size=2)):
        body[name] = draw(json_values | timestamps)
    return body


def bodies(model: type[BaseModel]) -> st.SearchStrategy[Any]:
    return near_valid(model) | json_values


def _datetimes(value: Any) -> list[datetime]:
    if isinstance(value, datetime):
        return [value]
    if isinstance(value, BaseModel):
        return [d for name in type(value).model_fields for d in _datetimes(getattr(value, name))]
    if isinstance(value, list | tuple):
        return [d for v in value for d in _datetimes(v)]
    if isinstance(value, dict):
        return [d for v in value.values() for d in _datetimes(v)]
    return []


def _check_accepted_or_refused(model: type[BaseModel], raw: str | bytes) -> None:
    """Read ``raw`` as the API does, validate it with ``model``: refused with a 4xx, or storable."""
    try:
        body = parse_body(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    except MalformedRequest:  # too deep, or not Unicode: 400
        return
    except (ValueError, UnicodeDecodeError):  # not UTF-8 or not JSON at all: 400 (server, Powertools)
        return
    try:
        accepted = model.model_validate(body)
    except (ValidationError, InvalidInput):
        return
    json.dumps(accepted.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    for moment in _datetimes(accepted):
        moment.astimezone(UTC)


def _json_text(value: Any) -> str:
    """``json.dumps`` without its recursion limit (the nesting is the point); escapes as clients send them."""
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_json_text(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same inputs on every run; a failure reproduces with the printed example
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_the_fuzzed_models_include_every_request_model() -> None:
    names = {m.__name__ for m in MODELS}
    assert {"PutSessionRequest", "AddEntryRequest", "SearchRequest", "CreateEntitiesRequest", "RelateRequest"} <= names


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@FUZZ
@given(data=st.data())
def test_any_json_is_either_accepted_and_storable_or_refused_with_a_validation_error(
    model: type[BaseModel], data: st.DataObject
) -> None:
    _check_accepted_or_refused(model, _json_text(data.draw(bodies(model))))


@pytest.mark.parametrize(
    "model", MODELS[:1] + [m for m in MODELS if m.__name__.endswith("Request")], ids=lambda m: m.__name__
)
@FUZZ
@given(raw=st.binary(max_size=64) | st.text(max_size=64) | st.builds(lambda v: _json_text(v)[:-1], json_values))
def test_any_bytes_are_either_accepted_or_refused_with_a_validation_error(
    model: type[BaseModel], raw: bytes | str
) -> None:
    """Bodies that are not JSON, or JSON cut short, are refused the same way."""
    _check_accepted_or_refused(model, raw)


DEEP = '"<deep>"'


def _nested(depth: int, leaf: str) -> str:
    """JSON text nesting ``leaf`` ``depth`` levels deep (objects and arrays in turn)."""
    for level in range(depth):
        leaf = f"[{leaf}]" if level % 2 else f'{{"k":{leaf}}}'
    return leaf


def _deep_bodies() -> list[tuple[type[BaseModel], str, int]]:
    from agentmem.models.content import Content
    from agentmem.models.memory import AddEntryRequest, MemoryEntry, PutSessionRequest

    call = {"function_call": {"name": "f", "args": {"x": "<deep>"}}}
    reply = {"function_response": {"name": "f", "response": {"x": "<deep>"}}}
    cases: list[tuple[type[BaseModel], str, int]] = []
    for depth in (60, 1000, 1200):
        for part in (call, reply):
            entry = {"content": {"role": "model", "parts": [part]}, "author": "agent"}
            for model, body in (
                (Content, entry["content"]),
                (MemoryEntry, entry),
                (AddEntryRequest, {"entry": entry}),
                (PutSessionRequest, {"entries": [entry]}),
            ):
                cases.append((model, json.dumps(body).replace(DEEP, _nested(depth, "1")), depth))
        cases += [(model, _nested(depth, "null"), depth) for model in MODELS[:3]]
    return cases


@pytest.mark.parametrize(
    ("model", "raw", "depth"), _deep_bodies(), ids=lambda v: v.__name__ if isinstance(v, type) else None
)
def test_json_nested_deep_is_either_accepted_and_storable_or_refused_with_a_validation_error(
    model: type[BaseModel], raw: str, depth: int
) -> None:
    _check_accepted_or_refused(model, raw)


ENTRY_ID = new_id()
SCOPE = Scope("a" * 256, "u" * 256, "p" * 256)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=any_text | st.text(max_size=3000) | st.builds(lambda n, c: c * n, st.integers(1, 3000), st.characters()))
def test_tokens_are_bounded_utf8_and_their_posting_keys_fit_the_sort_key_limit(text: str) -> None:
    for tokenizer, namespace in ((tokenize, memory_records.INDEX_NAMESPACE), (graph_tokens, "GP")):
        tokens = tokenizer(text)
        assert all(isinstance(t, str) and 0 < len(t) <= MAX_TOKEN_CHARS for t in tokens)
        terms = index_terms(tokens)
        assert len(terms) <= MAX_TERMS_PER_DOCUMENT
        for posting in InvertedIndex(None, namespace).postings(SCOPE.partition, ENTRY_ID, terms, len(tokens)):  # type: ignore[arg-type]
            key = posting["sk"].encode("utf-8")  # raises on a lone surrogate
            assert len(key) <= MAX_SORT_KEY_BYTES, f"a {len(key)}-byte sort key from a text of {len(text)} characters"


def test_the_episode_index_namespace_is_the_one_the_fuzzer_checks() -> None:
    assert graph_records.EPISODE_INDEX_NAMESPACE == "GP"
