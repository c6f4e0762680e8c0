"""The cost figures the docs cite, from one ``make bench ONLY=cost`` run (issue 42, point 6).

A full run (``BENCH_SCALE`` 1) keeps the figures the docs cite in ``docs/cost-figures.json`` (committed: the
docs' source) and writes each doc's marked sections from them: a section is the text between
``<!-- cost-figures:<name> -->`` and ``<!-- /cost-figures -->``, rendered by :data:`SECTIONS`. A test
(tests/bench/test_cost_figures.py) holds the docs equal to the file, and the file's fixed floors and alarm
counts equal to what the synthesized templates give now, so neither can drift from the other."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "cost-figures.json"
DOCS = ("README.md", "docs/deploy.md", "docs/agentcore.md", "docs/extraction.md")
USERS = ("100", "10000", "1000000")
MARKED = re.compile(r"(<!-- cost-figures:([a-z-]+) -->\n)(.*?)(<!-- /cost-figures -->)", re.DOTALL)


def usd(value: float) -> str:
    """Dollars as the docs write them: cents below $1,000, whole dollars above."""
    return f"${value:,.2f}" if abs(value) < 1000 else f"${value:,.0f}"


def per_1k(value: float) -> str:
    return f"${value:.4f}" if value < 0.1 else f"${value:.3f}"


def selected(cost: Mapping[str, Any], floors: Mapping[str, Any]) -> dict[str, Any]:
    """What of a run's ``bench/out/cost.json`` (``cost``) and the stacks' floors (``floors``: per stack, its
    ``usd_month``, ``parts`` and template ``facts``) the docs cite."""
    workloads = {}
    for users in USERS:
        row = cost["workloads"][users]
        workloads[users] = {
            "table": row["table"]["usd_month"],
            "table_with_extraction": row["table"].get("table_with_extraction_usd_month"),
            "table_backups": row["table"]["backups_usd_month"],
            "table_backup_copy": row["table"]["backups_copy_usd_month"],
            "opensearch": row["opensearch"]["usd_month"],
            "agentcore_short_term": row["agentcore_short_term_usd_month"],
            "agentcore_built_in": row["agentcore_with_long_term_usd_month"],
            "agentcore_self_managed_with_model": row.get("agentcore_self_managed_with_model_usd_month"),
            "agentcore_records_per_session": row["agentcore_records_per_session"],
            "cache_hit_rate": row["table"]["cache_hit_rate"],
            "search_all_in_usd_per_1k": row["table"]["search_all_in_usd_per_1k"],
            "search_vs_agentcore_retrieval": row["table"]["search_vs_agentcore_retrieval"],
        }
    calls = {
        kind: {backend: value["usd_per_1k"] for backend, value in by_backend.items()}
        for kind, by_backend in cost["calls"].items()
    }
    return {
        "floors": {
            stack: {
                "usd_month": floor["usd_month"],
                "alarm_metrics": floor["facts"]["alarm_metrics"],
                "custom_metrics": floor["facts"]["custom_metrics"],
                "parts": floor["parts"],
            }
            for stack, floor in floors.items()
        },
        "workloads": workloads,
        "calls": calls,
        "memories_per_user": cost.get("memories_per_user", {}),
    }


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A markdown table of ``rows`` under ``header``."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _floors(figures: Mapping[str, Any]) -> str:
    return _table(
        ("stack", "fixed monthly floor, idle", "alarm metrics"),
        (
            (stack, usd(floor["usd_month"]), f"{floor['alarm_metrics']:.0f}")
            for stack, floor in figures["floors"].items()
        ),
    )


def _or_not_run(value: float | None) -> str:
    return usd(value) if value is not None else "not run"


def _workloads(figures: Mapping[str, Any]) -> str:
    return _table(
        (
            "users",
            "table",
            "table, learning (extraction on)",
            "of which backups (with the copy)",
            "opensearch",
            "AgentCore, short-term only",
            "AgentCore with long-term: built-in / self-managed with the model",
        ),
        (
            (
                f"{int(users):,}",
                usd(row["table"]),
                _or_not_run(row["table_with_extraction"]),
                f"{usd(row['table_backups'])} ({usd(row['table_backups'] + row['table_backup_copy'])})",
                usd(row["opensearch"]),
                usd(row["agentcore_short_term"]),
                f"{usd(row['agentcore_built_in'])} / {_or_not_run(row['agentcore_self_managed_with_model'])}",
            )
            for users, row in figures["workloads"].items()
        ),
    )


def _search(figures: Mapping[str, Any]) -> str:
    def row(users: str, held: Mapping[str, Any]) -> tuple[str, ...]:
        hit = held["cache_hit_rate"]
        cost = per_1k(held["search_all_in_usd_per_1k"])
        if hit is None:
            return (f"{int(users):,}", "-", cost, "-")
        return (f"{int(users):,}", f"{hit:.1%}", cost, f"1/{held['search_vs_agentcore_retrieval']:,.0f}")

    return _table(
        ("users", "cache hit rate", "search all-in per 1,000", "against AgentCore's retrieval ($0.50)"),
        (row(users, held) for users, held in figures["workloads"].items()),
    )


def _calls(figures: Mapping[str, Any]) -> str:
    return _table(
        ("call", "table", "opensearch"),
        ((kind, per_1k(by["table"]), per_1k(by["opensearch"])) for kind, by in figures["calls"].items()),
    )


def _memories(figures: Mapping[str, Any]) -> str:
    return _table(
        ("memories a user", "table: needs", "table", "opensearch"),
        (
            (
                f"{int(memories):,}",
                f"{row['table_needs']['memory_mb']:,} MB, MEMORY_MAX_ENTRIES {row['table_needs']['max_entries']:,}",
                usd(row["table"]),
                usd(row["opensearch"]),
            )
            for memories, row in figures["memories_per_user"].items()
        ),
    )


SECTIONS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "floors": _floors,
    "workloads": _workloads,
    "search": _search,
    "calls": _calls,
    "memories-per-user": _memories,
}


def rendered(text: str, figures: Mapping[str, Any]) -> str:
    """``text`` with each marked section written from ``figures``."""

    def write(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in SECTIONS:
            raise KeyError(f"no cost-figures section {name!r}")
        return match.group(1) + SECTIONS[name](figures) + match.group(4)

    return MARKED.sub(write, text)


def write(cost: Mapping[str, Any], floors: Mapping[str, Any]) -> list[str]:
    """Keep a full run's figures and write the docs' sections from them; the docs it changed."""
    figures = selected(cost, floors)
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n")  # in the run's order: the tables' rows
    changed = []
    for doc in DOCS:
        path = ROOT / doc
        text = path.read_text(encoding="utf-8")
        new = rendered(text, figures)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(doc)
    return changed
