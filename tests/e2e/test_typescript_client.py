"""The TypeScript client (clients/typescript): its own tests, run by Node's test runner against the real
local server, which they start with this interpreter (AGENTMEM_PYTHON). `make test` installs the
package's pinned dev dependencies first (npm ci); `npm test` builds it (tsc) and runs test/*.test.mjs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"


@pytest.mark.slow
def test_the_typescript_client_passes_its_node_tests() -> None:
    npm = shutil.which("npm")
    assert npm is not None, "npm is not installed: the TypeScript client's tests need Node.js 20 or later"
    assert (PACKAGE / "node_modules" / "typescript").is_dir(), (
        f"the TypeScript client's dev dependencies are not installed: run `make test` (or npm ci --prefix {PACKAGE})"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")} | {"AGENTMEM_PYTHON": sys.executable}
    run = subprocess.run(
        [npm, "test", "--silent", "--prefix", str(PACKAGE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"npm test failed ({run.returncode}):\n{output[-20000:]}"
    assert "# fail 0" in output, output[-5000:]
