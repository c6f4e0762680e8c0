"""The MCP result bounds: no tool result holds more than 1 MiB of text, and a cut result says so."""

from __future__ import annotations

import json
from typing import Any

from agentmem.mcp.results import MAX_RESULT_TEXT_BYTES, fit_list, graph_result


def entity(name: str, *facts: str) -> dict[str, Any]:
    return {"name": name, "entity_type": "t", "observations": [{"content": f} for f in facts]}


def relation(source: str, target: str) -> dict[str, Any]:
    return {"source": source, "target": target, "relation_type": "knows"}


def test_a_small_graph_is_whole_and_carries_no_cut_fields() -> None:
    result = graph_result([entity("A", "x"), entity("B")], [relation("A", "B")])
    assert result.structured == {
        "entities": [
            {"name": "A", "entityType": "t", "observations": ["x"]},
            {"name": "B", "entityType": "t", "observations": []},
        ],
        "relations": [{"from": "A", "to": "B", "relationType": "knows"}],
    }
    assert json.loads(result.text) == result.structured


def test_a_large_graph_is_cut_below_the_budget_with_the_relations_of_the_entities_kept() -> None:
    big = "é" * 100_000  # two bytes each in UTF-8: the budget counts bytes, not characters
    entities = [entity(f"E{i:02d}", big) for i in range(10)]
    relations = [relation("E00", "E01"), relation("E08", "E09"), relation("E09", "E00")]
    result = graph_result(entities, relations)
    assert len(result.text.encode("utf-8")) <= MAX_RESULT_TEXT_BYTES
    kept = [e["name"] for e in result.structured["entities"]]
    assert kept == [f"E{i:02d}" for i in range(len(kept))]
    assert 0 < len(kept) < 10
    assert result.structured["truncated"] is True
    assert "of 10 entities" in result.structured["message"]
    # Relations touching a kept entity stay (E09 -> E00 too); one between two cut entities goes
    assert {"from": "E08", "to": "E09", "relationType": "knows"} not in result.structured["relations"]
    assert {"from": "E09", "to": "E00", "relationType": "knows"} in result.structured["relations"]


def test_a_limit_cut_is_reported_even_when_the_text_is_small() -> None:
    result = graph_result([entity("A")], [], cut_from=5)
    assert result.structured["truncated"] is True
    assert "1 of 5 entities" in result.structured["message"]


def test_fit_list_keeps_the_head_of_a_list_that_does_not_fit() -> None:
    payload = {"entries": [{"id": str(i), "text": "x" * 200_000} for i in range(8)], "mode": "keyword"}
    fitted = fit_list(payload, "entries")
    assert len(json.dumps(fitted, ensure_ascii=False, separators=(",", ":")).encode()) <= MAX_RESULT_TEXT_BYTES
    assert [e["id"] for e in fitted["entries"]] == [str(i) for i in range(len(fitted["entries"]))]
    assert fitted["truncated"] is True
    assert fitted["mode"] == "keyword"
    assert fit_list({"entries": [], "mode": "keyword"}, "entries") == {"entries": [], "mode": "keyword"}


def test_fit_list_shares_the_room_between_two_lists() -> None:
    # Given an entity history with many relations and large observations (a high-degree entity)
    history = {
        "name": "the user",
        "observations": [{"id": str(i), "content": "y" * 50_000} for i in range(30)],
        "relations": [{"id": f"r{i}", "source": "the user", "target": f"T{i}"} for i in range(40_000)],
    }
    fitted = fit_list(history, "observations", "relations")
    # Then both lists keep their heads and the whole fits
    assert len(json.dumps(fitted, ensure_ascii=False, separators=(",", ":")).encode()) <= MAX_RESULT_TEXT_BYTES
    assert 0 < len(fitted["observations"]) < 30
    assert 0 < len(fitted["relations"]) < 40_000
    assert fitted["relations"][0]["id"] == "r0"
    assert "of 30 observations" in fitted["message"]
    assert "of 40000 relations" in fitted["message"]
