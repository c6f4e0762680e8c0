"""Synthesize the CDK app once per test session (both deployment shapes in one app).

The two shapes: ``prod`` with OpenSearch reached through a VPC endpoint only and extraction on (a
cross-Region inference profile, so the Bedrock grant's widest form is the one checked), and ``dev``
table-only without extraction (the default ``extraction_model``: nothing of extraction deployed).

Shared by the infra tier (assertions, cdk-nag, cfn-lint) and the cloud rehearsal tier (the template
driven against moto). Both tiers are put in one xdist group (``make test`` runs ``--dist loadgroup``),
so one worker synthesizes once and runs them all. Bundling is off (``aws:cdk:bundling-stacks``: ``[]``):
the dependency layer is not built, nothing is downloaded, synthesis is offline; ``dependency_layer=source``
keeps a local ``make layer`` build (120 MB) out of the test's assembly.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

SYNTH_GROUP = "cdk-synth"
PROD_OPENSEARCH = "AgentMemory-prod"
DEV_TABLE = "AgentMemory-dev"
EXTRACTION_MODEL = "us.amazon.nova-micro-v1:0"
"""The extraction model of the prod shape (a US inference profile: its Regions are the stack's defaults)."""
ALARM_EMAIL = "oncall@example.com"
"""Who the prod shape's alarms email (prod refuses to synthesize without one; dev has none)."""
BACKUP_COPY_VAULT = "arn:aws:backup:us-east-1:210987654321:backup-vault:agentmem-copies"
"""Where the prod shape copies its backups: a vault of another account."""
PRIVATE_NETWORK = ("vpc-0a1b2c3d4e5f60718", ("subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c4b5a69788"))
"""The prod shape reaches its vector collection only through a VPC endpoint in these (made-up) subnets."""
PRIVATE_ROUTE_TABLES = ("rtb-0a1b2c3d4e5f60718", "rtb-0f1e2d3c4b5a69788")
"""Their route tables: the stack adds the DynamoDB gateway endpoint to them."""
CDK_PROVIDERS = ("CustomS3AutoDeleteObjectsCustomResourceProvider",)
"""Logical-id prefixes of CDK's own custom-resource providers: dev's bucket auto-delete (a Node.js function of CDK's
and its role, run when the stack is deleted; infra/components/storage.py ``private_bucket``). They are not the
stack's functions nor roles, whose rules both tiers check (tests/infra/test_first_deploy.py checks what they are)."""


def mark_group(items: list[pytest.Item], folder: Path) -> None:
    """Put every collected test under ``folder`` in the synthesizing xdist group."""
    for item in items:
        if folder in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.xdist_group(SYNTH_GROUP))


@dataclass
class Synthesized:
    outdir: Path
    templates: dict[str, dict[str, Any]]
    """Stack name -> CloudFormation template (dict)."""
    stacks: dict[str, Any]
    """Stack name -> the MemoryServiceStack object."""
    account: dict[str, Any] | None = None
    """The account-level stack's template (infra/account.py), which both stages depend on."""

    def template(self, name: str) -> Any:
        from aws_cdk.assertions import Template

        return Template.from_json(self.templates[name])

    def template_path(self, name: str) -> Path:
        return self.outdir / f"{name}.template.json"

    def asset(self, name: str, object_key: str) -> Path:
        """The staged file of the asset a template names by its S3 object key."""
        manifest = json.loads((self.outdir / f"{name}.assets.json").read_text())
        for asset in manifest["files"].values():
            if any(d["objectKey"] == object_key for d in asset["destinations"].values()):
                return self.outdir / asset["source"]["path"]
        raise KeyError(f"{name}: no asset with object key {object_key}")


def synthesize(outdir: Path) -> Synthesized:
    """prod + OpenSearch + extraction and dev + table-only, with cdk-nag's AwsSolutions checks: synth raises on a
    finding."""
    from aws_cdk import App, Validations
    from cdk_nag import AwsSolutionsChecks

    from infra.account import ACCOUNT_STACK, AccountSettingsStack
    from infra.stack import DeploymentOptions, MemoryServiceStack

    app = App(outdir=str(outdir), context={"aws:cdk:bundling-stacks": [], "dependency_layer": "source"})
    account = AccountSettingsStack(app)
    stacks = {
        PROD_OPENSEARCH: MemoryServiceStack(
            app,
            PROD_OPENSEARCH,
            options=DeploymentOptions(
                stage="prod",
                search_backend="opensearch",
                extraction_model=EXTRACTION_MODEL,
                alarm_email=ALARM_EMAIL,
                backup_copy_vault=BACKUP_COPY_VAULT,
                opensearch_vpc=PRIVATE_NETWORK[0],
                opensearch_subnets=PRIVATE_NETWORK[1],
                opensearch_route_tables=PRIVATE_ROUTE_TABLES,
            ),
        ),
        DEV_TABLE: MemoryServiceStack(app, DEV_TABLE, options=DeploymentOptions(stage="dev", search_backend="table")),
    }
    for stack in stacks.values():
        stack.add_stack_dependency(account)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    templates = {name: json.loads((outdir / f"{name}.template.json").read_text()) for name in stacks}
    return Synthesized(outdir, templates, stacks, json.loads((outdir / f"{ACCOUNT_STACK}.template.json").read_text()))
