"""Python clients for the REST API: ``MemoryClient`` (standard library only) and ``AsyncMemoryClient`` (httpx).

    from agentmem.client import AsyncMemoryClient, MemoryClient

    memory = MemoryClient("http://127.0.0.1:8000", api_key=None).user("my-app", "alice")
    memory.add_session("chat-1", ["I prefer dark mode", "My dog is called Pixel"])
    hits = memory.search("what is my dog called", top_k=3, where={"channel": "chat"})

    async with AsyncMemoryClient("http://127.0.0.1:8000") as client:
        hits = await client.user("my-app", "alice").search("what is my dog called")

Both clients share one description of every route (``_UserRoutes``, ``_ServiceRoutes``): a route
method builds a ``Call`` (method, path, body, query, how to read the answer) and each client sends it
its own way, blocking or awaited. Entries may be plain strings (stored as user text) or ADK
``MemoryEntry`` dicts; ``where`` is the API's ``filter`` document. Writes carry an ``Idempotency-Key``
(a fresh one per call unless given), so a request answered 429 or 503, or not answered at all, is sent
again after a jittered exponential backoff (at least ``Retry-After`` when the server sends one).
Errors raise the library's error classes (``NotFound``, ``InvalidInput``, ...) carrying the API's code
and request id.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote, urlencode

from agentmem import errors

if TYPE_CHECKING:
    import httpx

_BY_STATUS: dict[int, type[errors.MemoryServiceError]] = {
    400: errors.MalformedRequest,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    409: errors.Conflict,
    413: errors.PayloadTooLarge,
    422: errors.InvalidInput,
    429: errors.RateLimited,
    503: errors.Unavailable,
}
UNREACHABLE = 0
"""The status a client records for a request that got no HTTP answer (refused, reset, timed out)."""

EntryLike = str | Mapping[str, Any]
Filter = Mapping[str, Any]
T = TypeVar("T")
U = TypeVar("U")
P = ParamSpec("P")


class ApiError(errors.MemoryServiceError):
    """Raised for a status without a more specific class."""


def as_entry(entry: EntryLike) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"content": {"role": "user", "parts": [{"text": entry}]}, "author": "user"}
    return dict(entry)


def _as_dict(payload: Any) -> dict[str, Any]:
    return payload  # type: ignore[no-any-return]


def _present(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _segment(value: str) -> str:
    return quote(value, safe="")


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request of the API and how to read its decoded JSON answer (None for 204)."""

    method: str
    path: str
    read: Callable[[Any], T]
    body: Any = None
    query: Mapping[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None

    def then(self, read: Callable[[T], U]) -> Call[U]:
        first = self.read
        return Call(
            self.method, self.path, lambda payload: read(first(payload)), self.body, self.query, self.idempotency_key
        )


def call(
    method: str, path: str, body: Any = None, *, query: Mapping[str, Any] | None = None, key: str | None = None
) -> Call[dict[str, Any]]:
    return Call(method, path, _as_dict, body, query or {}, key)


@dataclass(frozen=True, slots=True)
class Paged(Generic[T]):
    """A listing followed page by page: ``page(cursor)`` asks for one, ``items`` reads a page's items."""

    page: Callable[[str | None], Call[dict[str, Any]]]
    items: Callable[[dict[str, Any]], Iterable[T]]

    def after(self, page: dict[str, Any]) -> Call[dict[str, Any]] | None:
        cursor = page.get("next_cursor")
        return None if cursor is None else self.page(cursor)


# -- retries ---------------------------------------------------------------------------------------


def retry_after_seconds(header: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds, or an HTTP date) as seconds from now; None when absent or unreadable."""
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before sending a request again.

    Only a request that is safe to repeat is retried: a GET, or a write carrying an Idempotency-Key.
    The wait is full-jitter exponential backoff (``uniform(0, min(cap, base * 2**attempt))``), or the
    server's ``Retry-After`` plus a little jitter; a ``Retry-After`` beyond ``max_retry_after`` is not
    waited for (the error is raised at once). ``RetryPolicy(retries=0)`` never retries.
    """

    retries: int = 4
    base: float = 0.25
    cap: float = 8.0
    max_retry_after: float = 60.0
    statuses: frozenset[int] = frozenset({UNREACHABLE, 429, 503})

    def delay(self, attempt: int, status: int, retry_after: str | None, *, safe: bool) -> float | None:
        """Seconds to wait before retry number ``attempt + 1``, or None to stop and answer."""
        if not safe or status not in self.statuses or attempt >= self.retries:
            return None
        jitter = random.uniform(0.0, min(self.cap, self.base * 2**attempt))
        asked = retry_after_seconds(retry_after)
        if asked is None:
            return jitter
        return None if asked > self.max_retry_after else asked + jitter * 0.1


# -- one exchange, shared by both clients ----------------------------------------------------------


class _Exchange(Generic[T]):
    """A call made ready to send (URL, headers, body), the answers it got, and its outcome."""

    def __init__(self, client: _ClientBase, call: Call[T]) -> None:
        params = _present(call.query)
        self.url = client.base_url + call.path + (f"?{urlencode(params, doseq=True)}" if params else "")
        self.method = call.method
        self.headers = {"Accept": "application/json"}
        self.data: bytes | None = None
        if call.body is not None:
            self.data = json.dumps(call.body).encode("utf-8")
            self.headers["Content-Type"] = "application/json"
        if client.api_key:
            self.headers["x-api-key"] = client.api_key
        key = call.idempotency_key
        if key is None and call.method != "GET" and client.idempotency_keys:
            key = uuid.uuid4().hex
        if key is not None:
            self.headers["Idempotency-Key"] = key
        self._call = call
        self._retry = client.retry
        self._safe = call.method == "GET" or key is not None
        self._attempt = 0
        self._status = UNREACHABLE
        self._raw = b""

    def retry_in(self, status: int, retry_after: str | None, raw: bytes) -> float | None:
        """Record an answer; the seconds to wait before sending again, or None when it is final."""
        self._status, self._raw = status, raw
        delay = self._retry.delay(self._attempt, status, retry_after, safe=self._safe)
        self._attempt += 1
        return delay

    def result(self) -> T:
        if self._status == UNREACHABLE:
            reason = self._raw.decode("utf-8", "replace")
            raise errors.Unavailable(f"the memory API at {self.url} is unreachable: {reason}")
        if self._status >= 400:
            raise _error_from(self._status, self._raw)
        return self._call.read(json.loads(self._raw) if self._raw else None)


def _error_from(status: int, raw: bytes) -> errors.MemoryServiceError:
    try:
        error = json.loads(raw)["error"]
        code, message, request_id = error["code"], error["message"], error.get("request_id")
    except (ValueError, KeyError, TypeError):
        code, message, request_id = "http_error", raw.decode("utf-8", "replace")[:500] or f"HTTP {status}", None
    cls = _BY_STATUS.get(status, ApiError)
    exc = cls(message, code=code, details={"status": status, "request_id": request_id})
    exc.http_status = status
    return exc


# -- the routes, described once --------------------------------------------------------------------


class _Sync:
    """Sends calls and blocks for their answers."""

    def send(self, call: Call[T]) -> T:
        raise NotImplementedError

    def pages(self, paged: Paged[T]) -> Iterator[T]:
        call: Call[dict[str, Any]] | None = paged.page(None)
        while call is not None:
            page = self.send(call)
            yield from paged.items(page)
            call = paged.after(page)


class _Async:
    """Sends calls and awaits their answers."""

    async def send(self, call: Call[T]) -> T:
        raise NotImplementedError

    async def pages(self, paged: Paged[T]) -> AsyncIterator[T]:
        call: Call[dict[str, Any]] | None = paged.page(None)
        while call is not None:
            page = await self.send(call)
            for item in paged.items(page):
                yield item
            call = paged.after(page)


class _Route(Generic[P, T]):
    """A route method: on a sync client it answers ``T``, on an async client an awaitable of ``T``."""

    def __init__(self, build: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, owner: _Sync, kind: type[Any] | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(self, owner: _Async, kind: type[Any] | None = None) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, owner: _Sync | _Async, kind: type[Any] | None = None) -> Callable[P, Any]:
        def send(*args: P.args, **kwargs: P.kwargs) -> Any:
            return owner.send(self._build(owner, *args, **kwargs))

        return send


class _Listing(Generic[P, T]):
    """A paged route method: an iterator of ``T`` on a sync client, an async iterator on an async one."""

    def __init__(self, build: Callable[Concatenate[Any, P], Paged[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, owner: _Sync, kind: type[Any] | None = None) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(self, owner: _Async, kind: type[Any] | None = None) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, owner: _Sync | _Async, kind: type[Any] | None = None) -> Callable[P, Any]:
        def pages(*args: P.args, **kwargs: P.kwargs) -> Any:
            return owner.pages(self._build(owner, *args, **kwargs))

        return pages


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
        return call("POST", self._scope + path, _present(body), key=key)

    def _delete(self, path: str, project_id: str | None = None) -> Call[dict[str, Any]]:
        return call("DELETE", self._scope + path, query={"project_id": project_id})

    # -- memory entries ----------------------------------------------------------------------------

    @_Route
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
        body = _present(
            {"entries": [as_entry(e) for e in entries], "project_id": project_id, "ttl_seconds": ttl_seconds}
        )
        return call("PUT", f"{self._scope}/sessions/{_segment(session_id)}/memories", body, key=idempotency_key)

    @_Route
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
        stored = as_entry(entry) | _present({"metadata": metadata, "expires_at": _timestamp(expires_at)})
        body = {"entry": stored, "project_id": project_id, "session_id": session_id, "ttl_seconds": ttl_seconds}
        return self._post("/memories", body, key=idempotency_key)

    @_Route
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

    @_Route
    def list_recent(
        self, *, limit: int = 20, project_id: str | None = None, cursor: str | None = None
    ) -> Call[dict[str, Any]]:
        """One page of entries, newest first: ``{"entries", "next_cursor"}``."""
        return self._get("/memories", project_id, limit=limit, cursor=cursor)

    @_Listing
    def iter_entries(self, *, project_id: str | None = None, page_size: int = 100) -> Paged[dict[str, Any]]:
        """Every visible entry, newest first, following cursors."""
        return Paged(lambda cursor: self._get("/memories", project_id, limit=page_size, cursor=cursor), _entries)

    @_Route
    def query(
        self, where: Filter, *, project_id: str | None = None, limit: int = 20, cursor: str | None = None
    ) -> Call[dict[str, Any]]:
        """One page of the entries matching the filter, newest first: ``{"entries", "next_cursor"}``."""
        return self._post(
            "/memories/query", {"filter": where, "project_id": project_id, "limit": limit, "cursor": cursor}
        )

    @_Listing
    def iter_query(
        self, where: Filter, *, project_id: str | None = None, page_size: int = 100
    ) -> Paged[dict[str, Any]]:
        """Every entry matching the filter, newest first, following cursors."""
        body = {"filter": where, "project_id": project_id, "limit": page_size}
        return Paged(lambda cursor: self._post("/memories/query", body | {"cursor": cursor}), _entries)

    @_Route
    def get_entry(self, entry_id: str) -> Call[dict[str, Any]]:
        return self._get(f"/memories/{_segment(entry_id)}")

    @_Route
    def delete_entry(self, entry_id: str) -> Call[None]:
        return self._delete(f"/memories/{_segment(entry_id)}").then(_nothing)

    @_Route
    def delete_entries(
        self, query: str | None = None, *, where: Filter | None = None, project_id: str | None = None
    ) -> Call[int]:
        """Delete the entries matching ``query`` and/or the filter ``where``: how many were deleted."""
        return self._post("/memories/delete", {"query": query, "filter": where, "project_id": project_id}).then(
            _deleted
        )

    @_Route
    def delete_session(self, session_id: str, *, project_id: str | None = None) -> Call[int]:
        return self._delete(f"/sessions/{_segment(session_id)}", project_id).then(_deleted)

    @_Route
    def delete_project(self, project_id: str) -> Call[int]:
        return self._delete(f"/projects/{_segment(project_id)}").then(_deleted)

    # -- knowledge graph ---------------------------------------------------------------------------

    @_Route
    def create_entities(
        self, entities: Sequence[Mapping[str, Any]], *, project_id: str | None = None
    ) -> Call[list[dict[str, Any]]]:
        """Create or update entities (``{"name", "entity_type"?, "observations"?}``): the entities as stored."""
        body = {"entities": [dict(e) for e in entities], "project_id": project_id}
        return self._post("/graph/entities", body).then(lambda reply: reply["entities"])

    @_Route
    def delete_entity(self, name: str, *, project_id: str | None = None) -> Call[None]:
        return self._delete(f"/graph/entities/{_segment(name)}", project_id).then(_nothing)

    @_Route
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

    @_Route
    def history(self, entity: str, *, project_id: str | None = None) -> Call[dict[str, Any]]:
        """The entity with every observation and relation, current and past."""
        return self._get(f"/graph/entities/{_segment(entity)}/history", project_id)

    @_Route
    def invalidate_observation(
        self, observation_id: str, *, valid_to: str | datetime | None = None, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        body = {"valid_to": _timestamp(valid_to), "project_id": project_id}
        return self._post(f"/graph/observations/{_segment(observation_id)}/invalidate", body)

    @_Route
    def supersede_observation(
        self, observation_id: str, content: str, *, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        """Replace an observation: ``{"invalidated", "created"}``."""
        body = {"content": content, "project_id": project_id}
        return self._post(f"/graph/observations/{_segment(observation_id)}/supersede", body)

    @_Route
    def delete_observation(self, observation_id: str, *, project_id: str | None = None) -> Call[None]:
        return self._delete(f"/graph/observations/{_segment(observation_id)}", project_id).then(_nothing)

    @_Route
    def create_relations(
        self, relations: Sequence[Mapping[str, Any]], *, project_id: str | None = None
    ) -> Call[list[dict[str, Any]]]:
        """Create relations (``{"source", "relation_type", "target"}``): the relations as stored."""
        body = {"relations": [dict(r) for r in relations], "project_id": project_id}
        return self._post("/graph/relations", body).then(lambda reply: reply["relations"])

    @_Route
    def invalidate_relation(
        self, relation_id: str, *, valid_to: str | datetime | None = None, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        body = {"valid_to": _timestamp(valid_to), "project_id": project_id}
        return self._post(f"/graph/relations/{_segment(relation_id)}/invalidate", body)

    @_Route
    def delete_relation(self, relation_id: str, *, project_id: str | None = None) -> Call[None]:
        return self._delete(f"/graph/relations/{_segment(relation_id)}", project_id).then(_nothing)

    @_Route
    def search_nodes(self, query: str, *, limit: int = 10, project_id: str | None = None) -> Call[list[dict[str, Any]]]:
        return self._get("/graph/search", project_id, q=query, limit=limit).then(lambda reply: reply["results"])

    @_Route
    def open_nodes(self, names: Sequence[str], *, project_id: str | None = None) -> Call[dict[str, Any]]:
        return self._get("/graph/nodes", project_id, name=list(names))

    @_Route
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

    @_Route
    def profile_card(
        self, *, max_entities: int = 12, max_observations: int = 5, project_id: str | None = None
    ) -> Call[str]:
        """The compact summary of what is known about the user, for a system prompt ("" when nothing)."""
        card = self._get(
            "/graph/profile-card", project_id, max_entities=max_entities, max_observations=max_observations
        )
        return card.then(lambda reply: str(reply["text"]))

    @_Route
    def add_episodes(
        self, session_id: str, entries: Sequence[EntryLike], *, project_id: str | None = None
    ) -> Call[int]:
        """Store a session's turns as episodes (replacing the session's): how many were stored."""
        body = {"session_id": session_id, "entries": [as_entry(e) for e in entries], "project_id": project_id}
        return self._post("/graph/episodes", body).then(lambda reply: int(reply["stored"]))

    @_Route
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

    @_Route
    def remember(
        self, entity: str, facts: Sequence[str], *, entity_type: str | None = None, project_id: str | None = None
    ) -> Call[dict[str, Any]]:
        """The ``remember`` agent tool: facts about an entity (created if new)."""
        body = {"entity": entity, "facts": list(facts), "entity_type": entity_type, "project_id": project_id}
        return self._post("/graph/tools/remember", body)

    @_Route
    def relate(self, source: str, relation: str, target: str, *, project_id: str | None = None) -> Call[dict[str, Any]]:
        """The ``relate`` agent tool: a typed edge between two entities (created if new)."""
        body = {"source": source, "relation": relation, "target": target, "project_id": project_id}
        return self._post("/graph/tools/relate", body)

    # -- erasure and export ------------------------------------------------------------------------

    @_Route
    def delete_user(self) -> Call[dict[str, Any]]:
        """Start the GDPR erasure of everything the user has: ``{"deletion_id", "status"}``."""
        return self._delete("")

    @_Route
    def deletion_status(self, deletion_id: str) -> Call[dict[str, Any]]:
        return self._get(f"/deletions/{_segment(deletion_id)}")

    @_Listing
    def export(self) -> Paged[dict[str, Any]]:
        """Every page of the user's export (entries, graph, episodes), following cursors."""
        return Paged(lambda cursor: self._get("/export", cursor=cursor), lambda page: [page])


def _entries(page: dict[str, Any]) -> list[dict[str, Any]]:
    return page["entries"]  # type: ignore[no-any-return]


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

    @_Route
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

    @_Route
    def health(self) -> Call[dict[str, Any]]:
        return call("GET", "/v1/health")

    @_Route
    def capabilities(self) -> Call[dict[str, Any]]:
        """What this deployment supports (search modes, ``relevance_threshold``, ...)."""
        return call("GET", "/v1/capabilities")

    @_Route
    def openapi(self) -> Call[dict[str, Any]]:
        return call("GET", "/v1/openapi.json")

    @_Route
    def usage(self, app: str, *, days: int = 31) -> Call[dict[str, Any]]:
        """The caller's own app's metering per UTC day: ``{"app", "days": [...]}``."""
        return call("GET", f"/v1/apps/{_segment(app)}/usage", query={"days": days})

    @_Route
    def store_batch(self, app: str, ops: Sequence[Mapping[str, Any]]) -> Call[list[Any]]:
        """Run store operations (get, put, search, list_namespaces) in one round trip: a result per op
        (``agentmem.langgraph`` builds on it)."""
        return call("POST", f"/v1/apps/{_segment(app)}/store/batch", {"ops": list(ops)}).then(_results)


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


class MemoryClient(_ClientBase, _ServiceRoutes, _Sync):
    """The blocking client (standard library only)."""

    def user(self, app: str, user: str) -> UserMemory:
        return UserMemory(self, app, user)

    def send(self, call: Call[T]) -> T:
        exchange = _Exchange(self, call)
        while (delay := exchange.retry_in(*self._transmit(exchange))) is not None:
            time.sleep(delay)
        return exchange.result()

    def _transmit(self, exchange: _Exchange[Any]) -> tuple[int, str | None, bytes]:
        request = urllib.request.Request(exchange.url, exchange.data, exchange.headers, method=exchange.method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, response.headers.get("Retry-After"), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("Retry-After"), exc.read()
        except (urllib.error.URLError, OSError) as exc:
            return UNREACHABLE, None, str(getattr(exc, "reason", exc)).encode()


class UserMemory(_UserRoutes, _Sync):
    """The memory of one user of one app, through a ``MemoryClient``."""

    def __init__(self, client: MemoryClient, app: str, user: str) -> None:
        super().__init__(app, user)
        self._client = client

    def send(self, call: Call[T]) -> T:
        return self._client.send(call)


class AsyncMemoryClient(_ClientBase, _ServiceRoutes, _Async):
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
        exchange = _Exchange(self, call)
        while (delay := exchange.retry_in(*await self._transmit(exchange))) is not None:
            await asyncio.sleep(delay)
        return exchange.result()

    async def _transmit(self, exchange: _Exchange[Any]) -> tuple[int, str | None, bytes]:
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


class AsyncUserMemory(_UserRoutes, _Async):
    """The memory of one user of one app, through an ``AsyncMemoryClient``."""

    def __init__(self, client: AsyncMemoryClient, app: str, user: str) -> None:
        super().__init__(app, user)
        self._client = client

    async def send(self, call: Call[T]) -> T:
        return await self._client.send(call)


__all__ = [
    "ApiError",
    "AsyncMemoryClient",
    "AsyncUserMemory",
    "Call",
    "MemoryClient",
    "RetryPolicy",
    "UserMemory",
    "as_entry",
]
