"""Google ADK's own Session, Event and MemoryEntry types through AgentMemoryService to the real server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest
from google.adk.agents import Agent
from google.adk.events import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
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
        # (without an id there is nothing it could delete: it says so instead of doing nothing)
        with pytest.raises(ValueError, match="memory_id"):
            await service.delete_memory(app_name="adk-app", user_id=user)
        after = (await service.search_memory(app_name="adk-app", user_id=user, query="penicillin")).memories
        return found, after

    found, after = asyncio.run(scenario())
    # Then it is gone
    assert [m.content.parts[0].text for m in found] == ["Allergic to penicillin"]
    assert after == []


class _Scripted(BaseLlm):  # type: ignore[misc]
    """A model that answers "ok" and keeps the system instruction of every request it is sent."""

    model: str = "scripted"
    instructions: list[str] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[Any, None]:
        self.instructions.append(str(llm_request.config.system_instruction or ""))
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="ok")]))


def test_an_adk_agent_gets_the_profile_card_with_its_relations_in_its_instruction(live_server: LiveServer) -> None:
    # Given the README's graph for a user: Pixel the dog, and the user owning Pixel
    user = f"adk-card-{uuid.uuid4().hex}"
    scope = f"{live_server.url}/v1/apps/adk-app/users/{user}/graph/tools"
    facts = {"entity": "Pixel", "entity_type": "dog", "facts": ["likes the beach"]}
    assert httpx.post(f"{scope}/remember", json=facts).status_code == 200
    assert (
        httpx.post(f"{scope}/relate", json={"source": user, "relation": "owns", "target": "Pixel"}).status_code == 200
    )
    service = AgentMemoryService(live_server.url)
    model = _Scripted()
    agent = Agent(name="assistant", model=model, instruction=service.with_profile_card("You are a helpful assistant."))
    sessions = InMemorySessionService()
    runner = Runner(agent=agent, app_name="adk-app", session_service=sessions, memory_service=service)

    async def turn() -> None:
        await sessions.create_session(app_name="adk-app", user_id=user, session_id="s1")
        message = types.Content(role="user", parts=[types.Part(text="What's my dog called?")])
        async for _ in runner.run_async(user_id=user, session_id="s1", new_message=message):
            pass

    # When the agent runs a turn
    asyncio.run(turn())
    # Then the model was told the card, relations included, after the agent's own instruction
    (instruction,) = model.instructions
    assert instruction.startswith("You are a helpful assistant.\n\n[Known about the user]\n")
    assert f"• {user}: owns Pixel" in instruction
    assert "• Pixel (dog): likes the beach" in instruction
    # And the card alone is there too, for whoever builds the prompt another way
    card = asyncio.run(service.profile_card(app_name="adk-app", user_id=user))
    assert f"You are a helpful assistant.\n\n{card}\n" in instruction
