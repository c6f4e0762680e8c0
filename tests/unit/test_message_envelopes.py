"""A text part holding a chat message's envelope as JSON (what the Strands session manager stores in a
conversational event) is indexed by the message's text blocks; any other text as it is (issue 43, point 7)."""

from __future__ import annotations

import json

from agentmem.models.content import Content, indexed_text


def _envelope(*blocks: dict[str, object]) -> str:
    message = {"role": "user", "content": list(blocks)}
    return json.dumps({"message": message, "message_id": 3, "redact_message": None, "created_at": "2026-12-07"})


def test_an_envelope_is_indexed_by_its_text_blocks() -> None:
    text = _envelope({"text": "Je préfère le thé"}, {"toolUse": {"name": "remember", "input": {"x": 1}}})
    assert "\\u00e9" in text  # escaped as Strands writes it
    assert indexed_text(text) == "Je préfère le thé"
    content = Content.model_validate({"parts": [{"text": text}, {"text": "plain words"}]})
    assert content.text() == "Je préfère le thé\nplain words"


def test_a_message_with_no_text_block_has_no_indexed_text() -> None:
    assert indexed_text(_envelope({"toolUse": {"name": "remember", "input": {}}})) == ""


def test_other_text_is_indexed_as_written() -> None:
    for text in ('{"message": {"no role": 1}}', '{"message": {broken', '{"other": 1}', "message: hello"):
        assert indexed_text(text) == text
