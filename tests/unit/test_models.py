"""ADK Content and MemoryEntry models."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentmem.models.content import Content
from agentmem.models.memory import MemoryEntry, PutSessionRequest, SearchRequest


@pytest.mark.parametrize(
    "part",
    [
        {"text": "hello"},
        {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        {"file_data": {"file_uri": "gs://bucket/a.pdf", "mime_type": "application/pdf"}},
        {"function_call": {"name": "get_weather", "args": {"city": "Paris", "days": 2.5}}},
        {"function_response": {"name": "get_weather", "response": {"temp": 21.5}}},
        {"text": "thinking", "thought": True},
    ],
)
def test_known_part_shapes_are_kept_exactly_as_sent(part: dict[str, object]) -> None:
    content = Content.model_validate({"role": "model", "parts": [part]})
    assert content.to_json() == {"role": "model", "parts": [part]}


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"video": "x"}, "unknown part field 'video'"),
        ({}, "exactly one"),
        ({"text": "a", "inline_data": {"mime_type": "a/b", "data": ""}}, "exactly one"),
        ({"text": 5}, "must be a string"),
        ({"inline_data": {"data": "AAAA"}}, "invalid inline_data part"),
        ({"function_call": {"name": "f", "unexpected": 1}}, "invalid function_call part"),
    ],
)
def test_unknown_or_malformed_parts_are_rejected_with_a_clear_message(part: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Content.model_validate({"parts": [part]})
    assert message in str(caught.value)


def test_only_text_parts_make_the_indexed_text() -> None:
    content = Content.model_validate(
        {"parts": [{"text": "first"}, {"inline_data": {"mime_type": "a/b", "data": "AA=="}}, {"text": "second"}]}
    )
    assert content.text() == "first\nsecond"


def test_timestamps_must_carry_a_zone() -> None:
    with pytest.raises(ValidationError, match="time zone"):
        MemoryEntry.model_validate({"content": {"parts": [{"text": "x"}]}, "timestamp": "2026-06-01T09:30:00"})
    entry = MemoryEntry.model_validate({"content": {"parts": [{"text": "x"}]}, "timestamp": "2026-06-01T09:30:00Z"})
    assert entry.timestamp is not None
    assert entry.timestamp.utcoffset() is not None


def test_a_session_holds_at_most_500_entries() -> None:
    entry = {"content": {"parts": [{"text": "x"}]}}
    PutSessionRequest.model_validate({"entries": [entry] * 500})
    with pytest.raises(ValidationError, match="at most 500"):
        PutSessionRequest.model_validate({"entries": [entry] * 501})


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "x", "top_k": 0},
        {"query": "x", "top_k": 101},
        {"query": "x", "min_score": 1.5},
        {"query": "x", "mode": "fuzzy"},
        {"query": "x", "project_id": ""},
        {"query": "x", "extra": 1},
    ],
)
def test_search_requests_are_bounded(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        SearchRequest.model_validate(body)
