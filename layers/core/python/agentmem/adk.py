"""Google ADK integration: a ``BaseMemoryService`` backed by this memory API.

    from agentmem.adk import AgentMemoryService

    memory_service = AgentMemoryService("https://<api>/v1", api_key="...")   # or http://127.0.0.1:8000
    runner = Runner(agent=agent, app_name="my-app", session_service=..., memory_service=memory_service)

ADK's ``load_memory`` / ``preload_memory`` tools then search this service. Sessions are stored with
``add_session_to_memory`` (re-adding a session replaces it), single turns with
``add_events_to_memory``, explicit facts with ``add_memory``; ``project_id`` scopes everything the
instance writes and reads. Needs the ``adk`` extra (``pip install "agentmem[adk]"``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.events import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from agentmem.client import MemoryClient


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def event_entry(event: Event) -> dict[str, Any] | None:
    """An ADK event as a memory entry; None for events without content."""
    if event.content is None or not event.content.parts:
        return None
    return {
        "content": event.content.model_dump(mode="json", exclude_none=True),
        "author": event.author,
        "timestamp": _timestamp(event.timestamp),
    }


def memory_entry(memory: MemoryEntry) -> dict[str, Any]:
    entry: dict[str, Any] = {"content": memory.content.model_dump(mode="json", exclude_none=True)}
    if memory.author:
        entry["author"] = memory.author
    if memory.timestamp:
        entry["timestamp"] = memory.timestamp
    return entry


class AgentMemoryService(BaseMemoryService):  # type: ignore[misc]
    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        project_id: str | None = None,
        top_k: int = 10,
        timeout: float = 30.0,
    ) -> None:
        self._client = MemoryClient(base_url, api_key=api_key, timeout=timeout)
        self.project_id = project_id
        self.top_k = top_k

    async def add_session_to_memory(self, session: Session) -> None:
        entries = [e for e in map(event_entry, session.events) if e is not None]
        memory = self._client.user(session.app_name, session.user_id)
        await asyncio.to_thread(memory.add_session, session.id, entries, project_id=self.project_id)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        memory = self._client.user(app_name, user_id)
        for entry in (e for e in map(event_entry, events) if e is not None):
            await asyncio.to_thread(memory.add_entry, entry, project_id=self.project_id, session_id=session_id)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        memory = self._client.user(app_name, user_id)
        for item in memories:
            await asyncio.to_thread(memory.add_entry, memory_entry(item), project_id=self.project_id)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        memory = self._client.user(app_name, user_id)
        hits = await asyncio.to_thread(memory.search, query, top_k=self.top_k, project_id=self.project_id)
        return SearchMemoryResponse(
            memories=[
                MemoryEntry(
                    id=hit["id"],
                    content=types.Content.model_validate(hit["content"]),
                    author=hit.get("author"),
                    timestamp=hit["timestamp"],
                    custom_metadata={
                        "score": hit.get("score"),
                        "session_id": hit.get("session_id"),
                        "project_id": hit.get("project_id"),
                    },
                )
                for hit in hits
            ]
        )
