"""Google ADK's own Session, Event and MemoryEntry types through AgentMemoryService to the real server."""

from __future__ import annotations

import asyncio
import uuid

from google.adk.events import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from agentmem.adk import AgentMemoryService
from tests.e2e.conftest import LiveServer


def _event(author: str, text: str, at: float) -> Event:
    return Event(author=author, content=types.Content(role="user", parts=[types.Part(text=text)]), timestamp=at)


def test_adk_sessions_events_and_memories_round_trip(live_server: LiveServer) -> None:
    service = AgentMemoryService(live_server.url, project_id="assistant")
    user = f"adk-{uuid.uuid4().hex}"
    session = Session(
        id="s1",
        app_name="adk-app",
        user_id=user,
        events=[
            _event("user", "My favourite city is Lisbon", 1780300000.0),
            Event(author="model", timestamp=1780300001.0),  # no content: not stored
            _event("user", "I work as a nurse on night shifts", 1780300002.0),
        ],
    )

    async def scenario() -> tuple[list[MemoryEntry], list[MemoryEntry], list[MemoryEntry]]:
        # Given a session, one extra turn and one explicit memory added the ADK way
        await service.add_session_to_memory(session)
        await service.add_events_to_memory(
            app_name="adk-app", user_id=user, events=[_event("user", "I am learning Portuguese", 1780300003.0)]
        )
        fact = MemoryEntry(content=types.Content(role="user", parts=[types.Part(text="Allergic to penicillin")]))
        await service.add_memory(app_name="adk-app", user_id=user, memories=[fact])
        # When ADK's tools search it
        city = await service.search_memory(app_name="adk-app", user_id=user, query="Lisbon city")
        allergy = await service.search_memory(app_name="adk-app", user_id=user, query="penicillin allergy")
        other = await AgentMemoryService(live_server.url).search_memory(
            app_name="adk-app", user_id=user, query="Lisbon"
        )
        return city.memories, allergy.memories, other.memories

    city, allergy, global_only = asyncio.run(scenario())
    # Then the answers are ADK MemoryEntry objects with content, author, time and score
    assert city[0].content.parts[0].text == "My favourite city is Lisbon"
    assert city[0].author == "user"
    assert city[0].timestamp == "2026-06-01T07:46:40.000Z"  # the event's own time (1780300000 s)
    assert 0 < city[0].custom_metadata["score"] <= 1
    assert city[0].custom_metadata["project_id"] == "assistant"
    assert allergy[0].content.parts[0].text == "Allergic to penicillin"
    # And a service without the project does not see the project's memories
    assert global_only == []


def test_adk_delete_memory_removes_the_memory_a_search_returned(live_server: LiveServer) -> None:
    service = AgentMemoryService(live_server.url)
    user = f"adk-del-{uuid.uuid4().hex}"

    async def scenario() -> tuple[list[MemoryEntry], list[MemoryEntry]]:
        fact = MemoryEntry(content=types.Content(role="user", parts=[types.Part(text="Allergic to penicillin")]))
        await service.add_memory(app_name="adk-app", user_id=user, memories=[fact])
        found = (await service.search_memory(app_name="adk-app", user_id=user, query="penicillin")).memories
        # When ADK deletes it by the id the search returned (twice: the second finds nothing to do)
        await service.delete_memory(app_name="adk-app", user_id=user, memory_id=found[0].id)
        await service.delete_memory(app_name="adk-app", user_id=user, memory_id=found[0].id)
        await service.delete_memory(app_name="adk-app", user_id=user)
        after = (await service.search_memory(app_name="adk-app", user_id=user, query="penicillin")).memories
        return found, after

    found, after = asyncio.run(scenario())
    # Then it is gone
    assert [m.content.parts[0].text for m in found] == ["Allergic to penicillin"]
    assert after == []
