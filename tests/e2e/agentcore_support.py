"""The local server on either table for the AgentCore tests, and the AgentCore client as its users build it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import httpx

from tests.e2e.conftest import LiveServer, free_port, start_server
from tests.moto_support import serialise_moto_dynamodb

TABLES = ["sqlite", "dynamodb"]


@contextlib.contextmanager
def serving(table: str, folder: Path, env: Mapping[str, str] | None = None) -> Iterator[LiveServer]:
    """``agentmem serve`` (one worker, hashing embedder) on SQLite, or on DynamoDB in a moto server over HTTP."""
    with serving_many(table, folder, 1, env) as servers:
        yield servers[0]


@contextlib.contextmanager
def serving_many(
    table: str, folder: Path, count: int, env: Mapping[str, str] | None = None
) -> Iterator[list[LiveServer]]:
    """``count`` servers over one store (one SQLite file, or one moto server): what several Lambda
    containers over one table are."""
    environment = {"MEMORY_EMBEDDER": "hashing", **(env or {})}
    with contextlib.ExitStack() as stack:
        if table == "dynamodb":
            environment["MEMORY_DYNAMODB_ENDPOINT_URL"] = stack.enter_context(moto_endpoint())
        servers: list[LiveServer] = []
        for _ in range(count):
            running = start_server(folder / "memory.db", environment, args=("--workers", "1"))
            stack.callback(running.stop)
            servers.append(running)
        yield servers


@contextlib.contextmanager
def moto_endpoint() -> Iterator[str]:
    """A moto server that applies each request atomically, as DynamoDB does (tests/moto_support.py)."""
    from moto.server import ThreadedMotoServer

    serialise_moto_dynamodb()
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    moto.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"http://127.0.0.1:{port}/moto-api/reset", timeout=10)
        moto.stop()


def agentcore_client(server: LiveServer, api_key: str | None = None) -> Any:
    """boto3's ``bedrock-agentcore`` client as an AgentCore user builds it, but for the endpoint; with an API
    key, the documented hook adds it to every request (the SigV4 signature itself is not checked)."""
    client = boto3.client(
        "bedrock-agentcore",
        endpoint_url=f"{server.url}/agentcore",
        region_name="us-east-1",
        aws_access_key_id="unused",
        aws_secret_access_key="unused",
    )
    if api_key is not None:
        client.meta.events.register_first(
            "before-sign.bedrock-agentcore.*", lambda request, **_: request.headers.__setitem__("x-api-key", api_key)
        )
    return client
