"""The synthesized stacks (``synthesized`` is a session fixture of tests/conftest.py; see tests/synthesis.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.synthesis import CDK_PROVIDERS, DEV_TABLE, PROD_OPENSEARCH, Synthesized, mark_group

__all__ = ["DEV_TABLE", "PROD_OPENSEARCH", "Synthesized", "cdk_providers", "function_ids", "resources"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_group(items, Path(__file__).resolve().parent)


@pytest.fixture(scope="session")
def prod(synthesized: Synthesized) -> Any:
    return synthesized.template(PROD_OPENSEARCH)


@pytest.fixture(scope="session")
def dev(synthesized: Synthesized) -> Any:
    return synthesized.template(DEV_TABLE)


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """The template's resources of ``kind``, CDK's custom-resource providers left out (tests/synthesis.py
    ``CDK_PROVIDERS``: :func:`cdk_providers` lists them)."""
    return {
        name: r for name, r in template["Resources"].items() if r["Type"] == kind and not name.startswith(CDK_PROVIDERS)
    }


def cdk_providers(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """CDK's custom-resource providers of the template (tests/synthesis.py ``CDK_PROVIDERS``)."""
    return {name: r for name, r in template["Resources"].items() if name.startswith(CDK_PROVIDERS)}


def function_ids(template: dict[str, Any]) -> dict[str, str]:
    """Handler module (``api``, ``authorizer``, ``snapshots``, ...) -> the function's logical id."""
    return {
        f["Properties"]["Handler"].split(".", 1)[0]: logical
        for logical, f in resources(template, "AWS::Lambda::Function").items()
    }
