"""The CDK app: ``python3 infra/app.py`` (cdk.json) or ``make synth`` / ``make deploy``.

Context: ``stage`` (dev|prod), ``search_backend`` (table, the default, or opensearch: its
monthly floor is printed before the synth), ``extraction_model`` (a Bedrock model id
or inference profile id; unset: no extraction), ``extraction_concurrency``, ``extraction_model_regions``,
``opensearch_vpc``, ``opensearch_subnets``, ``opensearch_route_tables``, ``opensearch_vpc_endpoints``,
``account_concurrency``, ``tenants``, ``backup_copy_vault``, ``embedder`` (with ``embedder_url``,
``embedder_model``, ``embedder_dimensions``, ``embedder_api_key_secret``) and ``alarm_email`` (required for prod);
see infra/stack.py.
cdk-nag's AwsSolutions checks run on every synth (``Validations.of(app).add_plugins``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


def _reexec_in_venv() -> None:
    """cdk.json runs ``python3``: switch to the project's virtualenv when the CDK is only installed there."""
    venv_python = REPO_ROOT / ".venv" / "bin" / "python"
    try:
        import aws_cdk  # noqa: F401
    except ImportError:
        if venv_python.exists() and Path(sys.executable) != venv_python:
            os.execv(str(venv_python), [str(venv_python), *sys.argv])
        raise


def build_app(context: dict[str, object] | None = None) -> object:
    from aws_cdk import App, Environment, Validations
    from cdk_nag import AwsSolutionsChecks

    from infra.account import AccountSettingsStack
    from infra.stack import MemoryServiceStack

    app = App(context=context, outdir=os.environ.get("CDK_OUTDIR") or str(REPO_ROOT / "cdk.out"))
    options = deployment_options(app.node.try_get_context)
    if options.search_backend == "opensearch":
        from infra.components.search import floor_notice

        print(floor_notice(options.stage == "prod"), file=sys.stderr)
    env = Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION"))
    account = AccountSettingsStack(app, env=env)
    stage = MemoryServiceStack(app, f"AgentMemory-{options.stage}", options=options, env=env)
    stage.add_stack_dependency(account, "API Gateway's execution logging role of the account")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


def deployment_options(context: Callable[[str], Any]) -> Any:
    """The stack's options from the context values (``context(key)``: None when unset). ``-c key=value`` gives
    strings, cdk.json may give numbers and lists; an empty ``extraction_model`` (what ``make synth`` passes
    when EXTRACTION_MODEL is unset) or ``none`` means no extraction."""
    from infra.components.compute import context_list
    from infra.components.extraction import DEFAULT_RESERVED_CONCURRENCY
    from infra.components.throttling import parse_tenants
    from infra.stack import DeploymentOptions

    model = str(context("extraction_model") or "").strip()
    concurrency = str(context("extraction_concurrency") or DEFAULT_RESERVED_CONCURRENCY).strip()
    if not concurrency.isdigit():
        raise ValueError(f"context extraction_concurrency must be a whole number, not {concurrency!r}")
    account = str(context("account_concurrency") or 1000).strip()
    if not account.isdigit():
        raise ValueError(f"context account_concurrency must be a whole number, not {account!r}")
    return DeploymentOptions(
        stage=str(context("stage") or "dev"),
        search_backend=str(context("search_backend") or "table"),
        extraction_model=model if model not in ("", "none") else None,
        extraction_concurrency=int(concurrency),
        extraction_model_regions=tuple(context_list(context("extraction_model_regions"))),
        account_concurrency=int(account),
        alarm_email=str(context("alarm_email") or "").strip() or None,
        backup_copy_vault=str(context("backup_copy_vault") or "").strip() or None,
        tenants=parse_tenants(context("tenants"), str(context("stage") or "dev")),
        opensearch_vpc=str(context("opensearch_vpc") or "").strip() or None,
        opensearch_subnets=tuple(context_list(context("opensearch_subnets"))),
        opensearch_route_tables=tuple(context_list(context("opensearch_route_tables"))),
        opensearch_vpc_endpoints=_flag(context("opensearch_vpc_endpoints"), "opensearch_vpc_endpoints", default=True),
        embedder=embedder_settings(context),
    )


def embedder_settings(context: Callable[[str], Any]) -> Any:
    """The ``embedder`` context and its endpoint's (infra/components/embeddings.py); unset: Bedrock."""
    from infra.components.embeddings import EmbedderSettings

    def text(key: str) -> str | None:
        return str(context(key) or "").strip() or None

    dimensions = text("embedder_dimensions")
    if dimensions is not None and not dimensions.isdigit():
        raise ValueError(f"context embedder_dimensions must be a whole number, not {dimensions!r}")
    return EmbedderSettings(
        kind=text("embedder") or "bedrock",
        url=text("embedder_url"),
        model=text("embedder_model"),
        dimensions=int(dimensions) if dimensions is not None else None,
        api_key_secret=text("embedder_api_key_secret"),
    )


def _flag(value: object, name: str, *, default: bool) -> bool:
    """A yes/no context value: a boolean (cdk.json) or true/false (``-c``); unset or empty: ``default``."""
    if value in (None, ""):
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"context {name} must be true or false, not {value!r}")
    return text == "true"


def main() -> None:
    _reexec_in_venv()
    sys.path.insert(0, str(REPO_ROOT))
    app = build_app()
    app.synth()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
