"""The docs' cost figures are one full `make bench ONLY=cost` run's, and the templates still give its floors
(issue 42, point 6): each doc's marked sections are what bench/cost_figures.py writes from docs/cost-figures.json,
and each stack's fixed floor and alarm metrics in that file are what the synthesized templates give now (a template
that adds an alarm, a rule or a key makes this fail until the bench runs again and the docs follow)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench")]

import bench_cost  # noqa: E402
import cost_figures  # noqa: E402
import cost_model  # noqa: E402

pytestmark = pytest.mark.xdist_group("bench-cost-synth")  # the bench's synthesis cache, one writer at a time


def test_every_marked_section_of_the_docs_is_the_figures_files() -> None:
    figures = json.loads(cost_figures.FIGURES.read_text())
    marked = 0
    for doc in cost_figures.DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        marked += len(cost_figures.MARKED.findall(text))
        assert cost_figures.rendered(text, figures) == text, f"{doc}: run `make bench ONLY=cost` (a full run)"
    assert marked >= len(cost_figures.SECTIONS)  # every section is cited somewhere


def test_the_figures_files_floors_are_what_the_templates_give_now() -> None:
    from tests.cloud.template import Template

    figures = json.loads(cost_figures.FIGURES.read_text())
    templates = bench_cost.synthesized().templates
    assert set(figures["floors"]) == set(templates)
    for name, body in templates.items():
        kept = figures["floors"][name]
        facts = bench_cost.template_facts(Template(name, body))
        facts["custom_metrics"] = kept["custom_metrics"]  # the EMF metrics the run saw: not in a template
        floor = cost_model.floor(facts)
        assert facts["alarm_metrics"] == kept["alarm_metrics"], name
        assert floor.parts == pytest.approx(kept["parts"]), name
        assert floor.total == pytest.approx(kept["usd_month"]), name
