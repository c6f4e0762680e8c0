"""The AgentCore Memory data plane on this service's memory (the mapping is agentmem/agentcore/records.py's).

Each method takes the app a memory id names and answers the operation's output shape as botocore reads it
(camelCase members, timestamps in epoch seconds). Events and records are memory entries, written, read,
searched, metered, exported and erased by :class:`~agentmem.memory.service.MemoryService`, except the events
that hold no conversational item, kept as events only (agentmem/agentcore/state_events.py); this package adds
the event views and sessions (events.py), the record views (record_operations.py), the actor index
(actors.py), the wire shapes (wire.py), the metadata filters (metadata_filters.py) and the paging of
AgentCore's list operations (page_tokens.py), sharing the clientToken replay (plane.py).
"""

from __future__ import annotations

from typing import Any

from agentmem.agentcore import models
from agentmem.agentcore.events import EventOperations
from agentmem.agentcore.record_operations import RecordOperations
from agentmem.keys import UserRef


class AgentCoreService(EventOperations, RecordOperations):
    def list_actors(self, memory_id: str, body: models.ListActorsRequest) -> dict[str, Any]:
        return self._actors.list_actors(memory_id, body)

    def actor_ref(self, user: UserRef) -> str:
        """The user's ref in the app's actor index (what its record ids end with), written on first use."""
        return self._actors.register(user)

    def known_ref(self, user: UserRef) -> str | None:
        """The user's ref, or None when the user has none yet (no record was ever written for them)."""
        return self._actors.ref_or_none(user)
