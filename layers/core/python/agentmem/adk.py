"""Google ADK integration: a ``BaseMemoryService`` backed by this memory API.

    from agentmem.adk import AgentMemoryService

    memory_service = AgentMemoryService("https://<api>/v1", api_key="...")   # or http://127.0.0.1:8000
    runner = Runner(agent=agent, app_name="my-app", session_service=..., memory_service=memory_service)

ADK's ``load_memory`` / ``preload_memory`` tools then search this service. Sessions are stored with
``add_session_to_memory`` (re-adding a session replaces it), single turns with
``add_events_to_memory``, explicit facts with ``add_memory``, and ``delete_memory`` removes one by the
id a search returned; ``project_id`` scopes everything the instance writes and reads.

``custom_metadata`` of a write (and a ``MemoryEntry``'s own, which wins) becomes the entries' metadata:
its ``metadata`` mapping and every other key, except ``ttl`` (seconds, ``"600s"`` or a ``timedelta``:
the entries expire that long after the write) and ``expire_time`` / ``expires_at`` (a ``datetime`` or
an RFC 3339 string). Search hits carry their metadata back in ``custom_metadata``, with ``score``,
``session_id``, ``project_id`` and ``expires_at``. Needs the ``adk`` extra (``pip install "agentmem[adk]"``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.events import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from agentmem.client import AsyncMemoryClient, AsyncUserMemory, RetryPolicy
from agentmem.errors import NotFound

EVENT_ID = "adk_event_id"
"""The metadata key holding the id of the ADK event an entry was stored from (an event is stored once)."""
HIT_FIELDS = ("score", "session_id", "project_id", "expires_at")
"""What a search hit adds to ``custom_metadata`` beside the entry's metadata (never stored as metadata)."""
_EXPIRY_KEYS = ("expire_time", "expires_at")


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _ttl_seconds(value: object) -> int:
    """ADK's ``ttl``: seconds (a number or ``"600"`` / ``"600s"``, as Vertex takes it) or a ``timedelta``."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = float(value.strip().removesuffix("s"))
    else:
        raise ValueError(f"custom_metadata['ttl'] must be seconds or a timedelta, not {value!r}")
    return max(1, math.ceil(seconds))


def _metadata_value(value: object) -> object:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)


def write_options(*layers: Mapping[str, object] | None) -> dict[str, Any]:
    """``add_entry`` keyword arguments (metadata, ttl_seconds, expires_at) from ADK ``custom_metadata``
    layers, later layers overriding earlier ones."""
    metadata: dict[str, object] = {}
    options: dict[str, Any] = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            if value is None or key in HIT_FIELDS:
                continue
            if key == "ttl":
                options["ttl_seconds"] = _ttl_seconds(value)
            elif key in _EXPIRY_KEYS:
                options["expires_at"] = value
            elif key == "metadata" and isinstance(value, Mapping):
                metadata.update({str(k): _metadata_value(v) for k, v in value.items() if v is not None})
            else:
                metadata[key] = _metadata_value(value)
    if metadata:
        options["metadata"] = metadata
    return options


def event_entry(event: Event) -> dict[str, Any] | None:
    """An ADK event as a memory entry (its id kept as ``adk_event_id`` metadata); None without content."""
    if event.content is None or not event.content.parts:
        return None
    entry: dict[str, Any] = {
        "content": event.content.model_dump(mode="json", exclude_none=True),
        "author": event.author,
        "timestamp": _timestamp(event.timestamp),
    }
    if event.id:
        entry["metadata"] = {EVENT_ID: event.id}
    return entry


def _options_of(entry: dict[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """``add_entry`` options for an event's entry: the write's, with the entry's own metadata (its event id)
    moved into them (``add_entry``'s ``metadata`` replaces the entry's)."""
    own = entry.pop("metadata", {})
    return {**options, "metadata": {**options.get("metadata", {}), **own}} if own else dict(options)


def memory_entry(memory: MemoryEntry) -> dict[str, Any]:
    entry: dict[str, Any] = {"content": memory.content.model_dump(mode="json", exclude_none=True)}
    if memory.author:
        entry["author"] = memory.author
    if memory.timestamp:
        entry["timestamp"] = memory.timestamp
    return entry


def hit_memory(hit: Mapping[str, Any]) -> MemoryEntry:
    """A search hit as an ADK ``MemoryEntry``: its metadata and the hit's fields in ``custom_metadata``."""
    return MemoryEntry(
        id=hit["id"],
        content=types.Content.model_validate(hit["content"]),
        author=hit.get("author"),
        timestamp=hit["timestamp"],
        custom_metadata={**(hit.get("metadata") or {}), **{name: hit.get(name) for name in HIT_FIELDS}},
    )


class AgentMemoryService(BaseMemoryService):  # type: ignore[misc]
    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        project_id: str | None = None,
        top_k: int = 10,
        min_score: float | Literal["relevant"] | None = "relevant",
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        """``min_score`` ``"relevant"`` (the default) is the server's ``relevance_threshold``, read once from
        /v1/capabilities: as with ADK's own memory services, a query about nothing stored finds nothing.
        None returns the ``top_k`` best whatever their score."""
        self._client = AsyncMemoryClient(base_url, api_key=api_key, timeout=timeout, retry=retry)
        self.project_id = project_id
        self.top_k = top_k
        self.min_score = min_score

    async def aclose(self) -> None:
        await self._client.aclose()

    async def add_session_to_memory(self, session: Session) -> None:
        entries = [e for e in map(event_entry, session.events) if e is not None]
        memory = self._client.user(session.app_name, session.user_id)
        await memory.add_session(session.id, entries, project_id=self.project_id)

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
        options = write_options(custom_metadata)
        entries: dict[object, dict[str, Any]] = {}
        for entry in filter(None, map(event_entry, events)):  # an event id once, as ADK keeps it
            entries.setdefault(entry.get("metadata", {}).get(EVENT_ID) or id(entry), entry)
        stored = await self._stored_events(memory, [key for key in entries if isinstance(key, str)])
        await asyncio.gather(
            *(
                memory.add_entry(e, project_id=self.project_id, session_id=session_id, **_options_of(e, options))
                for key, e in entries.items()
                if key not in stored
            )
        )

    async def _stored_events(self, memory: AsyncUserMemory, event_ids: Sequence[str]) -> set[str]:
        """Which of these event ids this user's memory (in this service's project) holds already."""
        found: set[str] = set()
        for start in range(0, len(event_ids), 40):
            chunk = list(event_ids[start : start + 40])
            page = await memory.query({EVENT_ID: {"$in": chunk}}, limit=100, project_id=self.project_id)
            found.update(hit.get("metadata", {}).get(EVENT_ID) for hit in page["entries"])
        return found

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        memory = self._client.user(app_name, user_id)
        await asyncio.gather(
            *(
                memory.add_entry(
                    memory_entry(item),
                    project_id=self.project_id,
                    **write_options(custom_metadata, item.custom_metadata),
                )
                for item in memories
            )
        )

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        memory = self._client.user(app_name, user_id)
        if self.min_score == "relevant":
            self.min_score = float((await self._client.capabilities())["relevance_threshold"])
        hits = await memory.search(query, top_k=self.top_k, min_score=self.min_score, project_id=self.project_id)
        return SearchMemoryResponse(memories=[hit_memory(hit) for hit in hits])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Delete the memory a search returned with this id (nothing when it is already gone).

        Without an id there is nothing to delete, and that is said (ValueError) rather than done silently:
        to erase all of a user's memory, ``DELETE /v1/apps/{app}/users/{user}`` (``UserMemory.delete_user``)."""
        if not memory_id:
            raise ValueError(
                "delete_memory needs the memory_id a search returned (MemoryEntry.id); to erase everything of "
                "the user, use the client's delete_user() (DELETE /v1/apps/{app}/users/{user})"
            )
        try:
            await self._client.user(app_name, user_id).delete_entry(memory_id)
        except NotFound:
            return

    async def profile_card(
        self, *, app_name: str, user_id: str, max_entities: int = 12, max_observations: int = 5
    ) -> str:
        """The user's profile card (``GET .../graph/profile-card``): the newest entities of the knowledge graph
        with their facts and relations, ready for a system prompt ("" when the graph is empty)."""
        memory = self._client.user(app_name, user_id)
        return str(
            await memory.profile_card(
                max_entities=max_entities, max_observations=max_observations, project_id=self.project_id
            )
        )

    def with_profile_card(self, instruction: str = "") -> Callable[[ReadonlyContext], Awaitable[str]]:
        """An ADK instruction provider: ``instruction`` followed by the profile card of the session's user,
        read at every turn (``Agent(instruction=memory_service.with_profile_card("You are ..."))``)."""

        async def provide(context: ReadonlyContext) -> str:
            card = await self.profile_card(app_name=context.session.app_name, user_id=context.user_id)
            return "\n\n".join(part for part in (instruction, card) if part)

        return provide
