"""`agentmem serve` pointed at a DynamoDB endpoint (a real moto server over HTTP) instead of SQLite."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.e2e.conftest import MotoEndpoint, start_server


def test_the_local_server_stores_and_searches_in_dynamodb(moto_endpoint: MotoEndpoint, tmp_path: Path) -> None:
    # Given the local server started with a DynamoDB endpoint URL (it creates the table)
    server = start_server(tmp_path / "unused.db", {"MEMORY_DYNAMODB_ENDPOINT_URL": moto_endpoint.url})
    try:
        scope = f"{server.url}/v1/apps/a/users/u"
        # When a memory is stored and searched over HTTP
        stored = httpx.post(f"{scope}/memories", json={"entry": {"content": {"parts": [{"text": "likes sailing"}]}}})
        assert stored.status_code == 201
        found = httpx.post(f"{scope}/memories/search", json={"query": "sailing"}).json()["entries"]
        assert [e["id"] for e in found] == [stored.json()["id"]]
    finally:
        server.stop()
    # Then the entry is in DynamoDB, and nothing went to the SQLite file
    import boto3

    client = boto3.client("dynamodb", endpoint_url=moto_endpoint.url, region_name="us-east-1")
    items = client.scan(TableName="agent-memory")["Items"]
    assert any(item["sk"]["S"] == f"E#{stored.json()['id']}" for item in items)
    assert not (tmp_path / "unused.db").exists()
