"""The review's store batches through the real server, on SQLite and on a DynamoDB endpoint (moto over HTTP)
(issue 44): 100 searches without a query over 120 items, and 100 namespace listings over them, answer within
the 15 s a client can wait (they had no answer after 20 s on DynamoDB: a call per namespace, per operation).
What they read, call by call, is counted in tests/integration/test_store_calls.py; their time, on both tables,
is measured by `make bench` (bench/bench_store_batch.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.e2e.agentcore_support import TABLES, serving

CLIENT_WAIT_SECONDS = 15
"""What a client waits for an answer (API Gateway itself ends a request at 29 s)."""


@pytest.mark.parametrize("table", TABLES)
def test_a_hundred_searches_and_listings_over_120_items_answer_within_a_clients_wait(
    table: str, tmp_path: Path
) -> None:
    with serving(table, tmp_path) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        # Given 120 items, one a namespace
        puts = [
            {"op": "put", "user": "ana", "namespace": ["notes", f"n{i:03}"], "key": "k", "value": {"text": f"note {i}"}}
            for i in range(120)
        ]
        for start in range(0, 120, 40):
            assert http.post("/v1/apps/demo/store/batch", json={"ops": puts[start : start + 40]}).status_code == 200
        searches = [{"op": "search", "user": "ana", "namespace_prefix": ["notes"], "limit": 10}] * 100
        listings = [{"op": "list_namespaces", "user": "ana", "prefix": ["notes"]}] * 100
        for ops in (searches, listings):
            # When the batch is sent, by a client that waits 15 s
            reply = http.post(
                "/v1/apps/demo/store/batch", json={"ops": ops}, timeout=httpx.Timeout(CLIENT_WAIT_SECONDS)
            )
            # Then it answers in that time, every operation
            assert reply.status_code == 200, reply.text
            results = reply.json()["results"]
            assert len(results) == 100
            assert results[0] == results[-1]
        assert len(results[0]) == 120
        assert results[0][:2] == [["notes", "n000"], ["notes", "n001"]]
