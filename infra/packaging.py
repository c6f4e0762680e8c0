"""Lambda layers without Docker.

- The core layer is ``layers/core`` as it is (its ``python/agentmem`` is the layer's ``python/``).
- The dependency layer is ``pip install --platform manylinux2014_aarch64 --only-binary=:all:
  --python-version 3.14 --implementation cp --target <out>/python -r layers/deps/requirements.txt``:
  only prebuilt arm64 wheels, so no compiler and no container.

Where the dependency layer comes from, in this order:
1. ``.layer-build/deps`` when it holds a build (``make layer`` writes it; ``make deploy`` runs it),
   unless the context ``dependency_layer=source`` says not to (the tests do: no 120 MB asset copy);
2. otherwise CDK *local bundling* of ``layers/deps`` that runs the pip command above. CDK runs it only for
   stacks selected by the ``aws:cdk:bundling-stacks`` context; ``make synth`` and the tests set it to
   ``[]``, so they synthesize offline and never call pip.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

REPO_ROOT = Path(__file__).resolve().parent.parent
CORE_LAYER_DIR = REPO_ROOT / "layers" / "core"
DEPS_DIR = REPO_ROOT / "layers" / "deps"
DEPS_REQUIREMENTS = DEPS_DIR / "requirements.txt"
PREBUILT_DEPS_DIR = REPO_ROOT / ".layer-build" / "deps"
FUNCTIONS_DIR = REPO_ROOT / "functions"
PYTHON_VERSION = "3.14"
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
_STAMP = ".requirements-sha256"
_EXCLUDES = ["**/__pycache__", "**/*.pyc", "*.egg-info", "**/*.egg-info", "build", "pyproject.toml"]


def pip_install_command(target: Path, requirements: Path = DEPS_REQUIREMENTS) -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    return [
        *command,
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--target",
        str(target / "python"),
        "-r",
        str(requirements),
    ]


def requirements_digest(requirements: Path = DEPS_REQUIREMENTS) -> str:
    return hashlib.sha256(requirements.read_bytes() + PYTHON_VERSION.encode()).hexdigest()


def build_dependency_layer(out_dir: Path = PREBUILT_DEPS_DIR) -> bool:
    """Build the layer into ``out_dir`` unless a build of the same requirements is there. True if built."""
    stamp = out_dir / _STAMP
    digest = requirements_digest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return False
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    subprocess.run(pip_install_command(out_dir), check=True)
    for cache in (out_dir / "python").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    stamp.write_text(digest)
    return True


@jsii.implements(ILocalBundling)
class PipLocalBundling:
    """CDK local bundling: install the arm64 wheels with pip into the asset's output directory."""

    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        subprocess.run(pip_install_command(Path(output_dir)), check=True)
        return True


def core_layer_code() -> lambda_.Code:
    return lambda_.Code.from_asset(str(CORE_LAYER_DIR), exclude=_EXCLUDES)


def dependency_layer_code(*, use_prebuilt: bool = True) -> lambda_.Code:
    if use_prebuilt and (PREBUILT_DEPS_DIR / _STAMP).exists() and (PREBUILT_DEPS_DIR / "python").is_dir():
        return lambda_.Code.from_asset(str(PREBUILT_DEPS_DIR), exclude=[_STAMP])
    return lambda_.Code.from_asset(
        str(DEPS_DIR),
        bundling=BundlingOptions(
            # Never used: local bundling always succeeds first, but CDK requires an image in the options.
            image=DockerImage.from_registry("local-bundling-only"),
            local=PipLocalBundling(),
        ),
    )


def functions_code() -> lambda_.Code:
    """One asset for every handler under functions/ (each handler is a few lines)."""
    return lambda_.Code.from_asset(str(FUNCTIONS_DIR), exclude=_EXCLUDES)


if __name__ == "__main__":
    built = build_dependency_layer()
    print(f"dependency layer {'built' if built else 'up to date'} in {PREBUILT_DEPS_DIR}")
