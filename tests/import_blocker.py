"""A Python in which only the modules of some requirements' closure can be imported: every module of an
installed distribution outside it raises ModuleNotFoundError (a ``sitecustomize`` on the path). What
`make serve` or `make synth` installs is checked by running in such a Python."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
from pathlib import Path

from packaging.requirements import Requirement

BLOCKER = """
import importlib.abc, sys

BLOCKED = {blocked!r}


class OnlyThese(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        for name in BLOCKED:
            if fullname == name or fullname.startswith(name + "."):
                sys.stderr.write(f"blocked import of {{fullname}}\\n")
                raise ModuleNotFoundError(f"{{fullname}} is outside the requirements", name=fullname)
        return None


sys.meta_path.insert(0, OnlyThese())
"""


def requirements_of(path: Path) -> list[Requirement]:
    """The requirements a requirements file names; its editable ``./layers/core[extras]`` is agentmem."""
    found = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        core = re.fullmatch(r"-e\s+\./layers/core(\[.*\])?", line)
        found.append(Requirement(f"agentmem{core.group(1) or ''}" if core else line))
    return found


def closure(requirements: list[Requirement]) -> set[str]:
    """The installed distributions the requirements need, with their extras, transitively (normalised names)."""
    seen: set[str] = set()
    pending = list(requirements)  # (a requirement's marker is read where it is met, with its dependent's extras)
    while pending:
        requirement = pending.pop()
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        key = f"{name}[{','.join(sorted(requirement.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue
        for text in distribution.requires or []:
            inner = Requirement(text)
            if (
                inner.marker is None
                or inner.marker.evaluate({"extra": ""})
                or any(inner.marker.evaluate({"extra": e}) for e in requirement.extras)
            ):
                pending.append(inner)
    return {key.split("[")[0] for key in seen}


def modules_of(distribution: metadata.Distribution) -> set[str]:
    """The packages a distribution installs, two levels deep inside a namespace package (``google.adk``)."""
    names: set[str] = set()
    for file in distribution.files or []:
        parts = file.parts
        if not parts or parts[0].endswith((".dist-info", ".data")) or parts[0] in ("..", "bin", "__pycache__"):
            continue
        if len(parts) == 1:
            if parts[0].endswith((".py", ".so")):
                names.add(parts[0].split(".")[0])
            continue
        top = parts[0]
        names.add(
            f"{top}.{parts[1].split('.')[0]}"
            if not Path(distribution.locate_file(top), "__init__.py").exists()
            else top
        )
    return names


def blocked_modules(requirements: list[Requirement]) -> set[str]:
    allowed = closure(requirements)
    kept: set[str] = set()
    other: set[str] = set()
    for distribution in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", distribution.metadata["Name"]).lower()
        (kept if name in allowed else other).update(modules_of(distribution))
    return {m for m in other - kept if m.split(".")[0] not in kept or "." in m}


def only_these(requirements: list[Requirement], folder: Path) -> str:
    """A PYTHONPATH on which every module outside the requirements' closure is unimportable."""
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked_modules(requirements))))
    return os.pathsep.join(p for p in [str(site), os.environ.get("PYTHONPATH", "")] if p)
