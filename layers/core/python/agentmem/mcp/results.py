"""Tool results: the text content (compact JSON) and ``structuredContent`` of one call, bounded so that
no result carries more than 1 MiB of text; a cut result says so (``truncated``, ``message``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_RESULT_TEXT_BYTES = 1024 * 1024
"""No tool result carries more than this much text (API.md): an agent's context is never flooded."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    structured: dict[str, Any]
    text: str


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _size(value: Any) -> int:
    return len(dumps(value).encode("utf-8"))


def json_result(structured: dict[str, Any]) -> ToolResult:
    return ToolResult(structured, dumps(structured))


def fit_list(payload: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``payload`` with its lists ``keys`` cut from the end until its JSON fits the result budget.

    When cut, each list gets an equal share of the room left by the rest of the payload.
    """
    if _size(payload) <= MAX_RESULT_TEXT_BYTES:
        return payload
    rest = {**payload, **{key: [] for key in keys}, "truncated": True, "message": "x" * 200}
    share = (MAX_RESULT_TEXT_BYTES - _size(rest) - 64) // len(keys)
    fitted: dict[str, Any] = {**payload, "truncated": True}
    shown = []
    for key in keys:
        room, kept = share, []
        for item in payload[key]:
            room -= _size(item) + 1
            if room < 0:
                break
            kept.append(item)
        fitted[key] = kept
        shown.append(f"{len(kept)} of {len(payload[key])} {key}")
    fitted["message"] = f"showing {', '.join(shown)}: the rest did not fit in {MAX_RESULT_TEXT_BYTES} bytes"
    return fitted


def reference_entity(entity: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": entity["name"],
        "entityType": entity["entity_type"],
        "observations": [o["content"] for o in entity["observations"]],
    }


def reference_relation(relation: dict[str, Any]) -> dict[str, Any]:
    return {"from": relation["source"], "to": relation["target"], "relationType": relation["relation_type"]}


def graph_result(
    entities: Sequence[dict[str, Any]], relations: Sequence[dict[str, Any]], *, cut_from: int | None = None
) -> ToolResult:
    """A reference-shaped graph, bounded: the entities in order and the relations touching those kept.

    ``cut_from``: how many entities matched when the caller's ``limit`` already cut the list.
    """
    shown = [reference_entity(e) for e in entities]
    links = [reference_relation(r) for r in relations]
    total = cut_from if cut_from is not None else len(shown)
    touching: dict[str, list[int]] = {}
    for index, link in enumerate(links):
        for name in dict.fromkeys((link["from"], link["to"])):
            touching.setdefault(name, []).append(index)
    budget = MAX_RESULT_TEXT_BYTES - 512
    size = 0
    kept: list[dict[str, Any]] = []
    taken: dict[int, None] = {}
    for entity in shown:  # each entity comes with the relations touching it, or not at all
        fresh = [i for i in touching.get(entity["name"], []) if i not in taken]
        cost = _size(entity) + 1 + sum(_size(links[i]) + 1 for i in fresh)
        if size + cost > budget:
            break
        size += cost
        kept.append(entity)
        taken.update(dict.fromkeys(fresh))
    cut = len(kept) < total
    if not cut:  # relations between entities this read does not show (none in a whole graph)
        for index, link in enumerate(links):
            if index in taken:
                continue
            if size + _size(link) + 1 > budget:
                cut = True
                break
            size += _size(link) + 1
            taken[index] = None
    kept_links = [links[i] for i in sorted(taken)]
    structured: dict[str, Any] = {"entities": kept, "relations": kept_links}
    if cut:
        structured["truncated"] = True
        structured["message"] = (
            f"showing {len(kept)} of {total} entities and {len(kept_links)} relations; "
            "pass a limit, or use search_nodes / open_nodes for the rest"
        )
    return json_result(structured)
