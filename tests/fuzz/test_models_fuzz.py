"""Hypothesis fuzzers over the request models (``agentmem.models``) and the tokenizer.

Models: whatever JSON a client sends (nearly valid bodies with one field broken, or arbitrary JSON
built from the models' own field names, lone surrogates, nesting 1,200 deep, timestamps at the ends of
the calendar), validation either accepts it or raises pydantic's ``ValidationError``, never anything
else; and what it accepts can be stored: it serialises to UTF-8 JSON and its timestamps convert to UTC.

Tokenizer: for any text, every token is non-empty UTF-8 and its posting key fits DynamoDB's 1,024-byte
sort-key limit, in the memory index and in the graph's episode index.
"""

from __future__ import annotations

import contextlib
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
from agentmem.clock import new_id
from agentmem.graph import records as graph_records
from agentmem.keys import Scope
from agentmem.memory import records as memory_records
from agentmem.search.inverted_index import InvertedIndex
from agentmem.search.tokenize import graph_tokens, tokenize

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


def _check_accepted_or_refused(model: type[BaseModel], body: Any) -> None:
    try:
        accepted = model.model_validate(body)
    except ValidationError:
        return
    # Accepted: it can be stored as it is (UTF-8 JSON, every timestamp expressible in UTC).
    json.dumps(accepted.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    for moment in _datetimes(accepted):
        moment.astimezone(UTC)


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
    _check_accepted_or_refused(model, data.draw(bodies(model)))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@FUZZ
@given(data=st.data())
def test_any_json_text_is_either_accepted_or_refused_with_a_validation_error(
    model: type[BaseModel], data: st.DataObject
) -> None:
    """The same through ``model_validate_json`` (pydantic's own JSON parser), raw bytes included."""
    raw = data.draw(st.builds(lambda v: json.dumps(v), bodies(model)) | st.binary(max_size=64))
    try:
        accepted = model.model_validate_json(raw)
    except ValidationError:
        return
    json.dumps(accepted.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")


def _nested(depth: int, leaf: Any) -> Any:
    for level in range(depth):
        leaf = [leaf] if level % 2 else {"k": leaf}
    return leaf


def _json_text(value: Any) -> str:
    """``json.dumps`` without its recursion limit (the nesting is the point)."""
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_json_text(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _deep_bodies() -> list[tuple[type[BaseModel], Any]]:
    from agentmem.models.content import Content
    from agentmem.models.memory import AddEntryRequest, MemoryEntry, PutSessionRequest

    cases: list[tuple[type[BaseModel], Any]] = []
    for depth in (100, 1000, 1200):
        call = {"function_call": {"name": "f", "args": {"x": _nested(depth, 1)}}}
        reply = {"function_response": {"name": "f", "response": {"x": _nested(depth, "a")}}}
        for part in (call, reply):
            entry = {"content": {"role": "model", "parts": [part]}, "author": "agent"}
            cases += [(Content, entry["content"]), (AddEntryRequest, {"entry": entry})]
            cases += [(PutSessionRequest, {"entries": [entry]}), (MemoryEntry, entry)]
        cases += [(model, _nested(depth, None)) for model in MODELS[:3]]
    return cases


@pytest.mark.parametrize(
    ("model", "body"), _deep_bodies(), ids=lambda v: v.__name__ if isinstance(v, type) else "nested"
)
def test_json_nested_deep_is_either_accepted_and_storable_or_refused_with_a_validation_error(
    model: type[BaseModel], body: Any
) -> None:
    _check_accepted_or_refused(model, body)
    raw = _json_text(body)
    with contextlib.suppress(ValidationError):
        model.model_validate_json(raw)


ENTRY_ID = new_id()
SCOPE = Scope("a" * 256, "u" * 256, "p" * 256)


@settings(max_examples=300, deadline=None)
@given(text=any_text | st.text(max_size=3000) | st.builds(lambda n, c: c * n, st.integers(1, 3000), st.characters()))
def test_tokens_are_non_empty_utf8_and_their_posting_keys_fit_the_sort_key_limit(text: str) -> None:
    for tokenizer, namespace in ((tokenize, memory_records.INDEX_NAMESPACE), (graph_tokens, "GP")):
        tokens = tokenizer(text)
        assert all(isinstance(t, str) and t for t in tokens)
        for posting in InvertedIndex(None, namespace).postings(SCOPE.partition, ENTRY_ID, tokens):  # type: ignore[arg-type]
            size = len(posting["sk"].encode("utf-8"))
            assert size <= MAX_SORT_KEY_BYTES, f"a {size}-byte sort key from a token of {len(text)} characters"


def test_the_episode_index_namespace_is_the_one_the_fuzzer_checks() -> None:
    assert graph_records.EPISODE_INDEX_NAMESPACE == "GP"
