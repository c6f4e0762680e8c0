"""Python clients for the REST API: ``MemoryClient`` (standard library only) and ``AsyncMemoryClient`` (httpx).

    from agentmem.client import AsyncMemoryClient, MemoryClient

    memory = MemoryClient("http://127.0.0.1:8000", api_key=None).user("my-app", "alice")
    memory.add_session("chat-1", ["I prefer dark mode", "My dog is called Pixel"])
    hits = memory.search("what is my dog called", top_k=3, where={"channel": "chat"})

    async with AsyncMemoryClient("http://127.0.0.1:8000") as client:
        hits = await client.user("my-app", "alice").search("what is my dog called")

Both clients share one description of every route (``_UserRoutes``, ``_ServiceRoutes``): a route
method builds a ``Call`` (method, path, body, query, how to read the answer, :mod:`agentmem.calls`) and
each client sends it its own way, blocking or awaited. Entries may be plain strings (stored as user text) or ADK
``MemoryEntry`` dicts; ``where`` is the API's ``filter`` document. Writes carry an ``Idempotency-Key``
(a fresh one per call unless given), so a request answered 429 or 503, or not answered at all, is sent
again after a jittered exponential backoff (at least ``Retry-After`` when the server sends one).
Errors raise the library's error classes (``NotFound``, ``InvalidInput``, ...) carrying the API's code
and request id.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from agentmem.calls import (
    UNREACHABLE,
    ApiError,
    Async,
    Call,
    Exchange,
    Listing,
    Paged,
    RetryPolicy,
    Route,
    Sync,
    call,
    present,
    retry_after_seconds,
)

if TYPE_CHECKING:
    import httpx

EntryLike = str | Mapping[str, Any]
KEEP: Any = object()
"""``metadata`` of ``update`` left out: the entry keeps its metadata."""
Filter = Mapping[str, Any]
T = TypeVar("T")


def as_entry(entry: EntryLike) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"content": {"role": "user", "parts": [{"text": entry}]}, "author": "user"}
    return dict(entry)


def _segment(value: str) -> str:
    return quote(value, safe="")


def _timestamp(value: str | datetime | None) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return value


class _UserRoutes:
    """Every route under ``/v1/apps/{app}/users/{user}`` (API.md)."""

    def __init__(self, app: str, user: str) -> None:
        self.app = app
        self.user = user
        self._scope = f"/v1/apps/{_segment(app)}/users/{_segment(user)}"

    def _get(self, path: str, project_id: str | None = None, **query: Any) -> Call[dict[str, Any]]:
        return call("GET", self._scope + path, query={"project_id": project_id, **query})

    def _post(self, path: str, body: Mapping[str, Any], *, key: str | None = None) -> Call[dict[str, Any]]:
        return call("POST", self._scope + path, present(body), key=key)

    def _delete(self, path: str, project_id: str | None = None) -> Call[dict[str, Any]]:
        return call("DELETE", self._scope + path, query={"project_id": project_id})

    # -- memory entries ----------------------------------------------------------------------------

    @Route
    def add_session(
        self,
        session_id: str,
        entries: Sequence[EntryLike],
        *,
        project_id: str | None = None,
        ttl_seconds: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[dict[str, Any]]:
        """Store a session's entries, replacing what the session held: ``{"session_id", "stored", "skipped"}``."""
        body = present(
            {"entries": [as_entry(e) for e in entries], "project_id": project_id, "ttl_seconds": ttl_seconds}
        )
        return call("PUT", f"{self._scope}/sessions/{_segment(session_id)}/memories", body, key=idempotency_key)

    @Route
    def add_entry(
        self,
        entry: EntryLike,
        *,
        project_id: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        expires_at: str | datetime | None = None,
        ttl_seconds: int | None = None,
        idempotency_key: str | None = None,
    ) -> Call[dict[str, Any]]:
        """Store one entry (``metadata`` and ``expires_at`` are set on it): the stored entry."""
        stored = as_entry(entry) | present({"metadata": metadata, "expires_at": _timestamp(expires_at)})
        body = {"entry": stored, "project_id": project_id, "session_id": session_id, "ttl_seconds": ttl_seconds}
        return self._post("/memories", body, key=idempotency_key)

    @Route
    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        min_score: float | None = None,
        project_id: str | None = None,
        mode: str | None = None,
        where: Filter | None = None,
    ) -> Call[list[dict[str, Any]]]:
        """The entries best matching ``query`` (and the filter ``where``), best first, each with its score."""
        body = {"query": query, "top_k": top_k, "min_score": min_score, "project_id": project_id, "mode": mode}
        return self._post("/memories/search", body | {"filter": where}).then(lambda reply: reply["entries"])

    @Route
    def list_recent(
        self, *, limit: int = 20, project_id: str | None = None, cursor: str | None = None
    ) -> Call[dict[str, Any]]:
        """One page of entries, newest first: ``{"entries", "next_cursor"}``."""
        return self._get("/memories", project_id, limit=limit, cursor=cursor)

    @Listing
    def iter_entries(self, *, project_id: str | None = None, page_size: int = 100) -> Paged[dict[str, Any]]:
        """Every visible entry, newest first, following cursors."""
        return Paged(lambda cursor: self._get("/memories", project_id, limit=page_size, cursor=cursor), _entries)

    @Route
    def query(
        self, where: Filter, *, project_id: str | None = None, limit: int = 20, cursor: str | None = None
    ) -> Call[dict[str, Any]]:
        """One page of the entries matching the filter, newest first: ``{"entries", "next_cursor"}``."""
        return self._post(
            "/memories/query", {"filter": where, "project_id": project_id, "limit": limit, "cursor": cursor}
        )

    @Listing
    def iter_query(
        self, where: Filter, *, project_id: str | None = None, page_size: int = 100
    ) -> Paged[dict[str, Any]]:
        """Every entry matching the filter, newest first, following cursors."""
        body = {"filter": where, "project_id": project_id, "limit": page_size}
        return Paged(lambda cursor: self._post("/memories/query", body | {"cursor": cursor}), _entries)

    @Route
    def get_entry(self, entry_id: str) -> Call[dict[str, Any]]:
        return self._get(f"/memories/{_segment(entry_id)}")

    @Route
    def update(
        self,
        memory_id: str,
        text_or_content: str | Mapping[str, Any] | None = None,
        *,
        metadata: Mapping[str, Any] | object | None = KEEP,
        revision: int | None = None,
        project_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[dict[str, Any]]:
        """Correct an entry in place (mem0's ``update``): new text (or ADK content), new ``metadata`` (None
        removes it; left out, it is kept), or both; with ``revision``, only if the entry is still at it
        (``Conflict`` with code ``revision_conflict`` otherwise). The entry as stored, with its new revision."""
        body: dict[str, Any] = present({"revision": revision, "project_id": project_id})
        if text_or_content is not None:
            body["content"] = (
                as_entry(text_or_content)["content"] if isinstance(text_or_content, str) else dict(text_or_content)
            )
        if metadata is not KEEP:
            body["metadata"] = metadata
        return call("PATCH", f"{self._scope}/memories/{_segment(memory_id)}", body, key=idempotency_key)

    @Route
    def memory_history(self, memory_id: str, *, project_id: str | None = None) -> Call[list[dict[str, Any]]]:
        """The entry's versions, oldest first, the current one last (mem0's ``history``; ``history`` here is
        a graph entity's): each ``{"revision", "content", "metadata", "valid_from", "valid_to", "recorded_at"}``."""
        return self._get(f"/memories/{_segment(memory_id)}/history", project_id).then(lambda reply: reply["versions"])

    @Route
    def delete_entry(self, entry_id: str) -> Call[None]:
        return self._delete(f"/memories/{_segment(entry_id)}").then(_nothing)

    @Route
    def delete_entries(
        self, query: str | None = None, *, where: Filter | None = None, project_id: str | None = None
    ) -> Call[int]:
        """Delete the entries matching ``query`` and/or the filter ``where``: how many were deleted."""
        return self._post("/memories/delete", {"query": query, "filter": where, "project_id": project_id}).then(
            _deleted
        )

    @Route
    def delete_session(self, session_id: str, *, project_id: str | None = None) -> Call[int]:
        return self._delete(f"/sessions/{_segment(session_id)}", project_id).then(_deleted)

    @Route
    def extract_session(self, session_id: str, *, project_id: str | None = None) -> Call[dict[str, Any]]:
        """Learn from a session now (docs/extraction.md): ``{"session_id", "status": "queued"|"off"}``."""
        return self._post(f"/sessions/{_segment(session_id)}/extract", {"project_id": project_id})

    @Route
    def delete_project(self, project_id: str) -> Call[int]:
        return self._delete(f"/projects/{_segment(project_id)}").then(_deleted)

    # -- knowledge graph ---------------------------------------------------------------------------

    @Route
    def create_entities(
        self, entities: Sequence[Mapping[str, Any]], *, project_id: str | None = None
    ) -> Call[list[dict[str, Any]]]:
        """Create or update entities (``{"name", "entity_type"?, "observations"?}``): the entities as stored."""
        body = {"entities": [dict(e) for e in entities], "project_id": project_id}
        return self._post("/graph/entities", body).then(lambda reply: reply["entities"])

    @Route
    def delete_entity(self, name: str, *, project_id: str | None = None) -> Call[None]:
        return self._delete(f"/graph/entities/{_segment(name)}", project_id).then(_nothing)

    @Route
    def add_observations(
        self,
        name: str,
        observations: Sequence[str],
        *,
        valid_from: str | datetime | None = None,
        project_id: str | None = None,
    ) -> Call[list[dict[str, Any]]]:
        body = {"observations": list(observations), "valid_from": _timestamp(valid_from), "project_id": project_id}
        return self._post(f"/graph/entities/{_segment(name)}/observations", body).then(_observations)

    @Route
    def history(self, entity: str, *, project_id: str | None = None) -> Call[dict[str, Any]]:
        """The entity with every observation and relation, current and past."""
        return self._get(f"/graph/entities/{_segment(entity)}/history", project_id)

    @Route
    def invalidate_observation(
        self, observation_id: str, *, valid_to: str | datetime | None = None, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        body = {"valid_to": _timestamp(valid_to), "project_id": project_id}
        return self._post(f"/graph/observations/{_segment(observation_id)}/invalidate", body)

    @Route
    def supersede_observation(
        self, observation_id: str, content: str, *, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        """Replace an observation: ``{"invalidated", "created"}``."""
        body = {"content": content, "project_id": project_id}
        return self._post(f"/graph/observations/{_segment(observation_id)}/supersede", body)

    @Route
    def delete_observation(self, observation_id: str, *, project_id: str | None = None) -> Call[None]:
        return self._delete(f"/graph/observations/{_segment(observation_id)}", project_id).then(_nothing)

    @Route
    def create_relations(
        self, relations: Sequence[Mapping[str, Any]], *, project_id: str | None = None
    ) -> Call[list[dict[str, Any]]]:
        """Create relations (``{"source", "relation_type", "target"}``): the relations as stored."""
        body = {"relations": [dict(r) for r in relations], "project_id": project_id}
        return self._post("/graph/relations", body).then(lambda reply: reply["relations"])

    @Route
    def invalidate_relation(
        self, relation_id: str, *, valid_to: str | datetime | None = None, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        body = {"valid_to": _timestamp(valid_to), "project_id": project_id}
        return self._post(f"/graph/relations/{_segment(relation_id)}/invalidate", body)

    @Route
    def delete_relation(self, relation_id: str, *, project_id: str | None = None) -> Call[None]:
        return self._delete(f"/graph/relations/{_segment(relation_id)}", project_id).then(_nothing)

    @Route
    def search_nodes(self, query: str, *, limit: int = 10, project_id: str | None = None) -> Call[list[dict[str, Any]]]:
        return self._get("/graph/search", project_id, q=query, limit=limit).then(lambda reply: reply["results"])

    @Route
    def open_nodes(self, names: Sequence[str], *, project_id: str | None = None) -> Call[dict[str, Any]]:
        return self._get("/graph/nodes", project_id, name=list(names))

    @Route
    def read_graph(
        self,
        *,
        as_of: str | datetime | None = None,
        recorded_as_of: str | datetime | None = None,
        cursor: str | None = None,
        project_id: str | None = None,
    ) -> Call[dict[str, Any]]:
        """One page of the graph (current, or as of a valid and/or recorded time): ``{"entities", "relations"}``."""
        moments = {"as_of": _timestamp(as_of), "recorded_as_of": _timestamp(recorded_as_of)}
        return self._get("/graph", project_id, cursor=cursor, **moments)

    @Route
    def profile_card(
        self, *, max_entities: int = 12, max_observations: int = 5, project_id: str | None = None
    ) -> Call[str]:
        """The compact summary of what is known about the user, for a system prompt ("" when nothing)."""
        card = self._get(
            "/graph/profile-card", project_id, max_entities=max_entities, max_observations=max_observations
        )
        return card.then(lambda reply: str(reply["text"]))

    @Route
    def add_episodes(
        self, session_id: str, entries: Sequence[EntryLike], *, project_id: str | None = None
    ) -> Call[int]:
        """Store a session's turns as episodes (replacing the session's): how many were stored."""
        body = {"session_id": session_id, "entries": [as_entry(e) for e in entries], "project_id": project_id}
        return self._post("/graph/episodes", body).then(lambda reply: int(reply["stored"]))

    @Route
    def list_episodes(
        self,
        *,
        session_id: str | None = None,
        query: str | None = None,
        limit: int = 20,
        project_id: str | None = None,
    ) -> Call[list[dict[str, Any]]]:
        episodes = self._get("/graph/episodes", project_id, session_id=session_id, q=query, limit=limit)
        return episodes.then(lambda reply: reply["episodes"])

    @Route
    def remember(
        self, entity: str, facts: Sequence[str], *, entity_type: str | None = None, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        """The ``remember`` agent tool: facts about an entity (created if new)."""
        body = {"entity": entity, "facts": list(facts), "entity_type": entity_type, "project_id": project_id}
        return self._post("/graph/tools/remember", body)

    @Route
    def relate(self, source: str, relation: str, target: str, *, project_id: str | None = None) -> Call[dict[str, Any]]:
        """The ``relate`` agent tool: a typed edge between two entities (created if new)."""
        body = {"source": source, "relation": relation, "target": target, "project_id": project_id}
        return self._post("/graph/tools/relate", body)

    # -- erasure and export ------------------------------------------------------------------------

    @Route
    def delete_user(self) -> Call[dict[str, Any]]:
        """Start the GDPR erasure of everything the user has: ``{"deletion_id", "status"}``."""
        return self._delete("")

    @Route
    def deletion_status(self, deletion_id: str) -> Call[dict[str, Any]]:
        return self._get(f"/deletions/{_segment(deletion_id)}")

    @Listing
    def export(self) -> Paged[dict[str, Any]]:
        """Every page of the user's export (entries, graph, episodes), following cursors."""
        return Paged(lambda cursor: self._get("/export", cursor=cursor), lambda page: [page])


def _entries(page: dict[str, Any]) -> list[dict[str, Any]]:
    return page["entries"]  # type: ignore[no-any-return]


def _users_page(app: str, limit: int, cursor: str | None) -> Call[dict[str, Any]]:
    return call("GET", f"/v1/apps/{_segment(app)}/users", query={"limit": limit, "cursor": cursor})


def _users(page: dict[str, Any]) -> list[dict[str, Any]]:
    return page["users"]  # type: ignore[no-any-return]


def _observations(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return reply["observations"]  # type: ignore[no-any-return]


def _deleted(reply: dict[str, Any]) -> int:
    return int(reply["deleted"])


def _results(reply: dict[str, Any]) -> list[Any]:
    return list(reply["results"])


def _nothing(reply: object) -> None:
    return None


class _ServiceRoutes:
    """The routes outside a user's scope, and any request at all."""

    @Route
    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Call[Any]:
        """Send one request; answer the decoded JSON body (None for 204); raise on 4xx/5xx."""
        return Call(method, path, lambda payload: payload, body, query or {}, idempotency_key)

    @Route
    def health(self) -> Call[dict[str, Any]]:
        return call("GET", "/v1/health")

    @Route
    def capabilities(self) -> Call[dict[str, Any]]:
        """What this deployment supports (search modes, ``relevance_threshold``, ...)."""
        return call("GET", "/v1/capabilities")

    @Route
    def openapi(self) -> Call[dict[str, Any]]:
        return call("GET", "/v1/openapi.json")

    @Route
    def usage(self, app: str, *, days: int = 31) -> Call[dict[str, Any]]:
        """The caller's own app's metering per UTC day: ``{"app", "days": [...]}``."""
        return call("GET", f"/v1/apps/{_segment(app)}/usage", query={"days": days})

    @Route
    def list_users(self, app: str, *, limit: int = 20, cursor: str | None = None) -> Call[dict[str, Any]]:
        """One page of ``app``'s users, in key order: ``{"users": [{"user_id", "entries", "last_write_at"}],
        "next_cursor"}`` (none being erased; docs/api.md)."""
        return _users_page(app, limit, cursor)

    @Listing
    def iter_users(self, app: str, *, page_size: int = 100) -> Paged[dict[str, Any]]:
        """Every user of ``app`` (``{"user_id", "entries", "last_write_at"}``), following cursors."""
        return Paged(lambda cursor: _users_page(app, page_size, cursor), _users)

    @Route
    def get_extraction(self, app: str) -> Call[dict[str, Any]]:
        """What ``app`` learns from its conversations (docs/extraction.md): strategies, triggers, budget, state."""
        return call("GET", f"/v1/apps/{_segment(app)}/extraction")

    @Route
    def put_extraction(
        self,
        app: str,
        strategies: Sequence[Mapping[str, Any]],
        *,
        trigger_messages: int | None = None,
        trigger_idle_seconds: int | None = None,
        token_budget: int | None = None,
    ) -> Call[dict[str, Any]]:
        """Set what ``app`` learns: ``strategies`` (``{"type", "name", "namespace"?, "instruction"?}``, replaced
        whole), its triggers and its monthly token budget."""
        body: dict[str, Any] = {"strategies": list(strategies), "token_budget": token_budget}
        if trigger_messages is not None:
            body["trigger_messages"] = trigger_messages
        if trigger_idle_seconds is not None:
            body["trigger_idle_seconds"] = trigger_idle_seconds
        return call("PUT", f"/v1/apps/{_segment(app)}/extraction", body)

    @Route
    def list_extraction_jobs(self, app: str, *, limit: int = 20, cursor: str | None = None) -> Call[dict[str, Any]]:
        """One page of ``app``'s parked extraction jobs, oldest first, each with why it failed:
        ``{"jobs": [{"job_id", "user", "session", "strategy", "entry_ids", "failure", ...}], "next_cursor"}``."""
        return call("GET", f"/v1/apps/{_segment(app)}/extraction/jobs", query={"limit": limit, "cursor": cursor})

    @Route
    def store_batch(self, app: str, ops: Sequence[Mapping[str, Any]]) -> Call[list[Any]]:
        """Run store operations (get, put, search, list_namespaces) in one round trip: a result per op
        (``agentmem.langgraph`` builds on it)."""
        return call("POST", f"/v1/apps/{_segment(app)}/store/batch", {"ops": list(ops)}).then(_results)

    @Route
    def store_batch_reply(self, app: str, ops: Sequence[Mapping[str, Any]]) -> Call[dict[str, Any]]:
        """:meth:`store_batch`'s whole answer: ``results``, and ``truncated`` (the indexes of searches cut to
        the response budget) when some were."""
        return call("POST", f"/v1/apps/{_segment(app)}/store/batch", {"ops": list(ops)})


# -- the two clients -------------------------------------------------------------------------------


class _ClientBase:
    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        idempotency_keys: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.idempotency_keys = idempotency_keys
        """Send a fresh Idempotency-Key with every write that has none (so writes are retried safely)."""


class MemoryClient(_ClientBase, _ServiceRoutes, Sync):
    """The blocking client (standard library only)."""

    def user(self, app: str, user: str) -> UserMemory:
        return UserMemory(self, app, user)

    def send(self, call: Call[T]) -> T:
        exchange = Exchange(self, call)
        while (delay := exchange.retry_in(*self._transmit(exchange))) is not None:
            time.sleep(delay)
        return exchange.result()

    def _transmit(self, exchange: Exchange[Any]) -> tuple[int, str | None, bytes]:
        request = urllib.request.Request(exchange.url, exchange.data, exchange.headers, method=exchange.method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, response.headers.get("Retry-After"), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("Retry-After"), exc.read()
        except (urllib.error.URLError, OSError) as exc:
            return UNREACHABLE, None, str(getattr(exc, "reason", exc)).encode()


class UserMemory(_UserRoutes, Sync):
    """The memory of one user of one app, through a ``MemoryClient``."""

    def __init__(self, client: MemoryClient, app: str, user: str) -> None:
        super().__init__(app, user)
        self._client = client

    def send(self, call: Call[T]) -> T:
        return self._client.send(call)


class AsyncMemoryClient(_ClientBase, _ServiceRoutes, Async):
    """The asyncio client (httpx); use it as ``async with`` or call ``aclose()``.

    Its connection pool belongs to the event loop that first used it; used from another loop (a new
    ``asyncio.run``), the client opens a new pool there.
    """

    _http: httpx.AsyncClient | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def user(self, app: str, user: str) -> AsyncUserMemory:
        return AsyncUserMemory(self, app, user)

    async def send(self, call: Call[T]) -> T:
        exchange = Exchange(self, call)
        while (delay := exchange.retry_in(*await self._transmit(exchange))) is not None:
            await asyncio.sleep(delay)
        return exchange.result()

    async def _transmit(self, exchange: Exchange[Any]) -> tuple[int, str | None, bytes]:
        import httpx

        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            self._http, self._loop = httpx.AsyncClient(timeout=self.timeout), loop
        try:
            response = await self._http.request(
                exchange.method, exchange.url, content=exchange.data, headers=exchange.headers
            )
        except httpx.TransportError as exc:
            return UNREACHABLE, None, str(exc).encode() or type(exc).__name__.encode()
        return response.status_code, response.headers.get("Retry-After"), response.content


class AsyncUserMemory(_UserRoutes, Async):
    """The memory of one user of one app, through an ``AsyncMemoryClient``."""

    def __init__(self, client: AsyncMemoryClient, app: str, user: str) -> None:
        super().__init__(app, user)
        self._client = client

    async def send(self, call: Call[T]) -> T:
        return await self._client.send(call)


__all__ = [
    "UNREACHABLE",
    "ApiError",
    "AsyncMemoryClient",
    "AsyncUserMemory",
    "Call",
    "MemoryClient",
    "RetryPolicy",
    "UserMemory",
    "as_entry",
    "retry_after_seconds",
]
