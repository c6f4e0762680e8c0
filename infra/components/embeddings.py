"""The embedding model the functions call: Bedrock's Titan v2 (the default) or an OpenAI-compatible endpoint.

Context (``-c key=value``): ``embedder`` (``bedrock``, the default, or ``openai``); for ``openai``,
``embedder_url`` (the endpoint's https base URL, ending where its paths begin: ``https://api.openai.com/v1``),
``embedder_model``, ``embedder_dimensions`` (optional: the vector size asked for), and
``embedder_api_key_secret`` (optional: the full ARN of a Secrets Manager secret whose string is the API key,
created by the operator before the deploy, encrypted with the account's ``aws/secretsmanager`` key).

What each choice gives the functions that embed (the API, the stream indexer, extraction): Bedrock, its
``bedrock:InvokeModel`` on the one model; an endpoint, its settings as environment (never the key) and
``secretsmanager:GetSecretValue`` on the one secret, which they read at their first embedding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from agentmem.settings import Env

EMBEDDING_MODEL_ID = "amazon.titan-embed-text-v2:0"
EMBEDDERS = ("bedrock", "openai")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]+-[A-Za-z0-9]{6}$")
_URL = re.compile(r"^https://[^\s/?#]+(/[^\s?#]*)?$")


@dataclass(frozen=True)
class EmbedderSettings:
    kind: str = "bedrock"
    url: str | None = None
    model: str | None = None
    dimensions: int | None = None
    api_key_secret: str | None = None
    """The full ARN of the secret holding the endpoint's API key (None: the endpoint takes no key)."""

    def __post_init__(self) -> None:
        if self.kind not in EMBEDDERS:
            raise ValueError(f"context embedder must be one of {EMBEDDERS}, not {self.kind!r}")
        endpoint = (self.url, self.model, self.dimensions, self.api_key_secret)
        if self.kind == "bedrock":
            if any(value is not None for value in endpoint):
                raise ValueError(
                    "context embedder_url, embedder_model, embedder_dimensions and "
                    "embedder_api_key_secret are for embedder=openai"
                )
            return
        if not (self.url and self.model):
            raise ValueError("context embedder=openai needs embedder_url and embedder_model")
        if not _URL.match(self.url):
            raise ValueError(
                f"context embedder_url must be an https:// URL (the key travels in its requests, and the private "
                f"subnets allow HTTPS out only), not {self.url!r}"
            )
        if self.dimensions is not None and self.dimensions < 1:
            raise ValueError(f"context embedder_dimensions must be above 0, not {self.dimensions}")
        if self.api_key_secret is not None and not _SECRET_ARN.match(self.api_key_secret):
            raise ValueError(
                "context embedder_api_key_secret must be a secret's full ARN (arn:aws:secretsmanager:<region>:"
                f"<account>:secret:<name>-<6 characters>, as create-secret prints it), not {self.api_key_secret!r}"
            )

    @property
    def environment(self) -> Mapping[str, str]:
        """The functions' settings of the embedder (agentmem/settings.py reads them)."""
        if self.kind == "bedrock":
            return {Env.EMBEDDER: "bedrock"}
        assert self.url is not None
        assert self.model is not None
        environment = {Env.EMBEDDER: "openai", Env.EMBEDDER_URL: self.url, Env.EMBEDDER_MODEL: self.model}
        if self.dimensions is not None:
            environment[Env.EMBEDDER_DIMENSIONS] = str(self.dimensions)
        if self.api_key_secret is not None:
            environment[Env.EMBEDDER_API_KEY_SECRET_ARN] = self.api_key_secret
        return environment

    def allow(self, fn: lambda_.Function) -> None:
        """Let ``fn`` embed: invoke the one Bedrock model, or read the one secret holding the endpoint's key."""
        if self.kind == "bedrock":
            model_arn = Stack.of(fn).format_arn(
                service="bedrock", account="", resource="foundation-model", resource_name=EMBEDDING_MODEL_ID
            )
            fn.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[model_arn]))
        elif self.api_key_secret is not None:  # GetSecretValue only (grant_read adds DescribeSecret, never called)
            fn.add_to_role_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.api_key_secret])
            )

    def vpc_calls(self, calls: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        """``calls`` (each placed function's AWS APIs with Bedrock's embeddings: compute.py ``VPC_CALLS``) with
        this embedder's: an endpoint's functions call no Bedrock to embed (extraction still asks its chat model
        there) and read the key's secret."""
        if self.kind == "bedrock":
            return dict(calls)
        adapted: dict[str, tuple[str, ...]] = {}
        for name, services in calls.items():
            kept = set(services)
            if "bedrock-runtime" in kept and name != "extraction":
                kept.discard("bedrock-runtime")
            if "bedrock-runtime" in services and self.api_key_secret is not None:
                kept.add("secretsmanager")
            adapted[name] = tuple(sorted(kept))
        return adapted
