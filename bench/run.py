"""`make bench`: run every bench/bench_*.py module's main() and print its figures (figures on stdout,
progress on stderr). Arguments (``make bench ONLY="adk mcp"``) select modules by name without ``bench_``."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def main() -> int:
    sys.path[:0] = [str(ROOT), str(HERE)]
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    only = set(sys.argv[1:])
    failed = []
    for path in sorted(HERE.glob("bench_*.py")):
        if only and path.stem.removeprefix("bench_") not in only:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ImportError(path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
        print(f"\n## {path.stem}", flush=True)
        started = time.perf_counter()
        try:
            module.main()
        except Exception:  # one section failing leaves the others' figures
            traceback.print_exc()
            failed.append(path.stem)
            print(f"({path.stem} FAILED after {time.perf_counter() - started:.1f} s)", flush=True)
            continue
        print(f"({path.stem} took {time.perf_counter() - started:.1f} s)", flush=True)
    if failed:
        print(f"failed sections: {', '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
