"""ADK's custom_metadata and TTL through AgentMemoryService to the real server's metadata and expiry."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from agentmem.adk import AgentMemoryService
from tests.e2e.conftest import LiveServer
from tests.e2e.test_adk_memory_service import _event


def test_adk_custom_metadata_becomes_metadata_and_its_ttl_expiry(live_server: LiveServer) -> None:
    service = AgentMemoryService(live_server.url)
    user = f"adk-meta-{uuid.uuid4().hex}"
    turn = _event("user", "My order number is 4417", 1780300000.0)
    past = datetime.now(UTC) - timedelta(minutes=1)

    async def scenario() -> tuple[list[MemoryEntry], list[MemoryEntry], list[MemoryEntry]]:
        # Given a turn added with ADK's custom_metadata: a TTL, a tag, and a metadata mapping
        await service.add_events_to_memory(
            app_name="adk-app",
            user_id=user,
            events=[turn],
            session_id="support-1",
            custom_metadata={"ttl": "3600s", "channel": "chat", "metadata": {"ticket": "T-1"}},
        )
        # And memories whose own custom_metadata overrides the call's, one of them already expired
        kept = MemoryEntry(
            content=types.Content(role="user", parts=[types.Part(text="Prefers email over phone calls")]),
            custom_metadata={"category": "preference", "source": "profile"},
        )
        gone = MemoryEntry(
            content=types.Content(role="user", parts=[types.Part(text="Temporary door code is 5521")]),
            custom_metadata={"expire_time": past},
        )
        await service.add_memory(
            app_name="adk-app", user_id=user, memories=[kept, gone], custom_metadata={"source": "intake"}
        )
        order = await service.search_memory(app_name="adk-app", user_id=user, query="order number")
        contact = await service.search_memory(app_name="adk-app", user_id=user, query="email or phone")
        code = await service.search_memory(app_name="adk-app", user_id=user, query="door code")
        return order.memories, contact.memories, code.memories

    order, contact, code = asyncio.run(scenario())
    # Then the hits carry the metadata back in custom_metadata, and the TTL became an expiry
    hit = next(m for m in order if m.content.parts[0].text == "My order number is 4417")
    assert {k: hit.custom_metadata[k] for k in ("channel", "ticket", "session_id")} == {
        "channel": "chat",
        "ticket": "T-1",
        "session_id": "support-1",
    }
    expires = datetime.fromisoformat(hit.custom_metadata["expires_at"])
    assert timedelta(minutes=55) < expires - datetime.now(UTC) <= timedelta(hours=1)
    email = next(m for m in contact if m.content.parts[0].text == "Prefers email over phone calls")
    assert (email.custom_metadata["category"], email.custom_metadata["source"]) == ("preference", "profile")
    assert email.custom_metadata["expires_at"] is None
    # And the memory that had already expired is never returned
    assert all("door code" not in m.content.parts[0].text for m in code + order + contact)
