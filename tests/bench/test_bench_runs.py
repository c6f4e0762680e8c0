"""`make bench` keeps running: every section, at a hundredth of its workload (``BENCH_SCALE=0.01``), runs to
its figures. Figures are not checked here (speed is the bench's business, not a test's); that each
section still runs is, since a section that only ``make bench`` calls breaks silently when the code
under it changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = sorted(path.stem for path in (ROOT / "bench").glob("bench_*.py"))


@pytest.mark.slow
@pytest.mark.xdist_group("bench-cost-synth")  # the cost bench's synthesis cache, shared with test_cost_figures.py
def test_every_bench_section_runs_at_a_hundredth_of_its_workload() -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "BENCH_"))}
    result = subprocess.run(
        [sys.executable, "bench/run.py"],
        cwd=ROOT,
        env={**environment, "BENCH_SCALE": "0.01"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert [section for section in SECTIONS if f"({section} took" not in result.stdout] == [], output
    assert result.returncode == 0, output
