"""Metadata, filters, query and expiry through both Python clients against the real local server."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from agentmem.client import AsyncMemoryClient, MemoryClient
from agentmem.errors import InvalidInput, MalformedRequest, NotFound
from tests.e2e.conftest import LiveServer


def test_the_async_client_tags_filters_queries_and_expires(live_server: LiveServer) -> None:
    async def scenario() -> None:
        async with AsyncMemoryClient(live_server.url) as client:
            memory = client.user("meta-app", f"u-{uuid.uuid4().hex}")
            # Given tagged entries, one with a TTL and one already expired
            billing = await memory.add_entry("Invoice 88 was paid twice", metadata={"category": "billing", "n": 2})
            await memory.add_entry("Wants a refund for invoice 88", metadata={"category": "billing", "n": 5})
            await memory.add_entry("Likes the new dashboard", metadata={"category": "feedback"}, ttl_seconds=3600)
            gone = await memory.add_entry("Invoice 12 is overdue", expires_at=datetime.now(UTC) - timedelta(seconds=1))
            assert billing["metadata"] == {"category": "billing", "n": 2}
            # When searching with a filter, in every mode
            for mode in ("keyword", "semantic", "hybrid"):
                hits = await memory.search("invoice", mode=mode, where={"category": "billing", "n": {"$gte": 3}})
                assert [h["metadata"]["n"] for h in hits] == [5]
            # Then query pages through the matches newest first, and the expired entry is nowhere
            page = await memory.query({"category": "billing"}, limit=1)
            assert [e["metadata"]["n"] for e in page["entries"]] == [5]
            assert [e["metadata"]["n"] async for e in memory.iter_query({"category": "billing"}, page_size=1)] == [5, 2]
            feedback = [e async for e in memory.iter_query({"category": {"$in": ["feedback"]}})]
            assert feedback[0]["expires_at"] is not None
            with pytest.raises(NotFound):
                await memory.get_entry(gone["id"])
            # And delete by filter (and by query and filter together) reports what it removed
            assert await memory.delete_entries("refund", where={"category": "billing"}) == 1
            assert await memory.delete_entries(where={"category": "billing"}) == 1
            assert [e["metadata"] async for e in memory.iter_entries()] == [{"category": "feedback"}]
            with pytest.raises(MalformedRequest):
                await memory.delete_entries()
            with pytest.raises(InvalidInput):
                await memory.query({"n": {"$regex": "x"}})

    asyncio.run(scenario())


def test_the_sync_client_sends_a_session_ttl_and_filters(live_server: LiveServer) -> None:
    memory = MemoryClient(live_server.url).user("meta-app", f"s-{uuid.uuid4().hex}")
    tagged = {"content": {"parts": [{"text": "Flight to Oslo on Friday"}]}, "metadata": {"trip": "oslo"}}
    assert memory.add_session("plans", [tagged, "Hotel booked near the station"], ttl_seconds=600)["stored"] == 2
    assert all(e["expires_at"] is not None for e in memory.iter_entries())
    assert [e["content"]["parts"][0]["text"] for e in memory.search("trip", where={"trip": "oslo"})] == [
        "Flight to Oslo on Friday"
    ]
    assert [e["session_id"] for e in memory.query({"session_id": "plans"})["entries"]] == ["plans", "plans"]
