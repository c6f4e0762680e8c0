"""An OpenAI-compatible embedder in the cloud (issue 43, point 3; infra/components/embeddings.py): the endpoint's
settings as the embedding functions' environment, its key only as a Secrets Manager ARN they may read (and nobody
else), no Bedrock grant for embedding, the VPC endpoints that follows, and the context refused when incomplete.

The two shapes of tests/synthesis.py keep Bedrock (the default deploy and its cost figures are unchanged); this
file synthesizes one stack of its own: prod, OpenSearch in private subnets, extraction on, embedding at an endpoint.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentmem.settings import Env
from infra.app import deployment_options
from infra.components.embeddings import EmbedderSettings
from tests.infra.conftest import resources
from tests.synthesis import EXTRACTION_MODEL, PRIVATE_NETWORK, PRIVATE_ROUTE_TABLES

SECRET = "arn:aws:secretsmanager:us-east-1:111122223333:secret:agentmem/embedder-key-AbC123"
URL = "https://api.openai.com/v1"
EMBEDDING_FUNCTIONS = {"api", "indexer", "extraction"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    from aws_cdk import App, Validations
    from aws_cdk.assertions import Annotations, Match, Template
    from cdk_nag import AwsSolutionsChecks

    from infra.stack import DeploymentOptions, MemoryServiceStack

    app = App(context={"aws:cdk:bundling-stacks": [], "dependency_layer": "source"})
    options = DeploymentOptions(
        stage="prod",
        search_backend="opensearch",
        extraction_model=EXTRACTION_MODEL,
        alarm_email="oncall@example.com",
        opensearch_vpc=PRIVATE_NETWORK[0],
        opensearch_subnets=PRIVATE_NETWORK[1],
        opensearch_route_tables=PRIVATE_ROUTE_TABLES,
        embedder=EmbedderSettings("openai", URL, "text-embedding-3-small", 512, SECRET),
    )
    stack = MemoryServiceStack(app, "AgentMemory-prod", options=options)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    synthesized = Template.from_stack(stack).to_json()
    warnings = Annotations.from_stack(stack).find_warning("*", Match.any_value())
    synthesized["warnings"] = [str(w.entry.data) for w in warnings]
    return synthesized  # type: ignore[no-any-return]


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["Handler"].split(".", 1)[0]: r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
    }


def _statements(template: dict[str, Any], role: dict[str, Any]) -> list[dict[str, Any]]:
    role_id = role["Fn::GetAtt"][0]
    return [
        s
        for policy in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def test_the_embedding_functions_get_the_endpoint_and_the_secrets_arn_never_a_key(template: dict[str, Any]) -> None:
    functions = _functions(template)
    assert set(functions) >= EMBEDDING_FUNCTIONS
    for name in EMBEDDING_FUNCTIONS:
        environment = functions[name]["Environment"]["Variables"]
        assert environment[Env.EMBEDDER] == "openai", name
        assert environment[Env.EMBEDDER_URL] == URL
        assert environment[Env.EMBEDDER_MODEL] == "text-embedding-3-small"
        assert environment[Env.EMBEDDER_DIMENSIONS] == "512"
        assert environment[Env.EMBEDDER_API_KEY_SECRET_ARN] == SECRET
    for name, props in functions.items():
        assert Env.EMBEDDER_API_KEY not in props.get("Environment", {}).get("Variables", {}), name


def test_only_the_embedding_functions_read_the_key_and_none_invokes_bedrock_to_embed(template: dict[str, Any]) -> None:
    functions = _functions(template)
    for name, props in functions.items():
        statements = _statements(template, props["Role"])
        reads = [s for s in statements if SECRET in str(s["Resource"])]
        if name in EMBEDDING_FUNCTIONS:
            # GetSecretValue on that one secret, nothing more of it
            assert [(_actions(s), s["Resource"]) for s in reads] == [(["secretsmanager:GetSecretValue"], SECRET)]
        else:
            assert reads == [], name
        invoked = [str(s["Resource"]) for s in statements if "bedrock:InvokeModel" in _actions(s)]
        assert not any("titan-embed" in r for r in invoked), name
        if name != "extraction":  # (extraction still asks its chat model on Bedrock)
            assert invoked == [], name


def test_the_private_subnets_reach_secrets_manager_and_the_endpoint_is_a_warning(template: dict[str, Any]) -> None:
    from infra.components.compute import VPC_CALLS

    calls = EmbedderSettings("openai", URL, "m", None, SECRET).vpc_calls(VPC_CALLS)
    assert calls["api"] == ("dynamodb", "secretsmanager", "states")
    assert calls["indexer"] == ("dynamodb", "secretsmanager")
    assert calls["extraction"] == ("bedrock-runtime", "dynamodb", "secretsmanager", "sqs")
    services = {
        e["Properties"]["ServiceName"]["Fn::Join"][1][-1].lstrip(".")
        for e in resources(template, "AWS::EC2::VPCEndpoint").values()
    }
    assert services == {"dynamodb", "secretsmanager", "states", "bedrock-runtime", "sqs"}
    assert any("agentmem:embedder-egress" in w and URL in w for w in template["warnings"])


def test_the_context_chooses_the_embedder_and_refuses_an_incomplete_one() -> None:
    base = {"stage": "dev", "search_backend": "table"}

    def options(**context: str) -> Any:
        return deployment_options({**base, **context}.get)

    assert options().embedder == EmbedderSettings()  # unset: Bedrock, as before
    chosen = options(
        embedder="openai",
        embedder_url=URL,
        embedder_model="m",
        embedder_dimensions="256",
        embedder_api_key_secret=SECRET,
    ).embedder
    assert chosen == EmbedderSettings("openai", URL, "m", 256, SECRET)
    with pytest.raises(ValueError, match="needs embedder_url and embedder_model"):
        options(embedder="openai", embedder_model="m")
    with pytest.raises(ValueError, match="must be an https:// URL"):
        options(embedder="openai", embedder_url="http://10.0.0.5:8000/v1", embedder_model="m")
    with pytest.raises(ValueError, match="whole number"):
        options(embedder="openai", embedder_url=URL, embedder_model="m", embedder_dimensions="wide")
    with pytest.raises(ValueError, match="full ARN"):
        options(embedder="openai", embedder_url=URL, embedder_model="m", embedder_api_key_secret="agentmem/key")
    with pytest.raises(ValueError, match="are for embedder=openai"):
        options(embedder_url=URL)
    with pytest.raises(ValueError, match="context embedder must be one of"):
        options(embedder="cohere")
