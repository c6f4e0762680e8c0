"""A dependency-free Python client for the REST API (standard library only).

    from agentmem.client import MemoryClient

    memory = MemoryClient("http://127.0.0.1:8000", api_key=None).user("my-app", "alice")
    memory.add_session("chat-1", ["I prefer dark mode", "My dog is called Pixel"])
    hits = memory.search("what is my dog called", top_k=3)

Entries may be plain strings (stored as user text) or ADK ``MemoryEntry`` dicts. Errors raise the
library's error classes (``NotFound``, ``InvalidInput``, ...) carrying the API's code and request id.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from agentmem import errors

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

EntryLike = str | Mapping[str, Any]


class ApiError(errors.MemoryServiceError):
    """Raised for a status without a more specific class."""


def as_entry(entry: EntryLike) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"content": {"role": "user", "parts": [{"text": entry}]}, "author": "user"}
    return dict(entry)


class MemoryClient:
    def __init__(self, base_url: str = "http://127.0.0.1:8000", *, api_key: str | None = None, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def user(self, app: str, user: str) -> UserMemory:
        return UserMemory(self, app, user)

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/v1/health")  # type: ignore[no-any-return]

    def capabilities(self) -> dict[str, Any]:
        return self.request("GET", "/v1/capabilities")  # type: ignore[no-any-return]

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON body (None for 204); raise on 4xx/5xx."""
        params = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.base_url + path + (f"?{urlencode(params, doseq=True)}" if params else "")
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["x-api-key"] = self.api_key
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise _error_from(exc.code, exc.read()) from None
        except urllib.error.URLError as exc:
            raise errors.Unavailable(f"the memory API at {self.base_url} is unreachable: {exc.reason}") from None
        return json.loads(raw) if raw else None


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


class UserMemory:
    """The memory of one user of one app: every route under ``/v1/apps/{app}/users/{user}``."""

    def __init__(self, client: MemoryClient, app: str, user: str) -> None:
        self._client = client
        self.app = app
        self.user = user
        self._scope = f"/v1/apps/{quote(app, safe='')}/users/{quote(user, safe='')}"

    def _call(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        return self._client.request(method, self._scope + path, body, **kw)

    def add_session(
        self, session_id: str, entries: Sequence[EntryLike], *, project_id: str | None = None
    ) -> dict[str, Any]:
        body = {"entries": [as_entry(e) for e in entries], "project_id": project_id}
        return self._call("PUT", f"/sessions/{quote(session_id, safe='')}/memories", body)  # type: ignore[no-any-return]

    def add_entry(
        self,
        entry: EntryLike,
        *,
        project_id: str | None = None,
        session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"entry": as_entry(entry), "project_id": project_id}
        if session_id is not None:
            body["session_id"] = session_id
        return self._call("POST", "/memories", body, idempotency_key=idempotency_key)  # type: ignore[no-any-return]

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        min_score: float | None = None,
        project_id: str | None = None,
        mode: str | None = None,
    ) -> list[dict[str, Any]]:
        body = {"query": query, "top_k": top_k, "min_score": min_score, "project_id": project_id, "mode": mode}
        reply = self._call("POST", "/memories/search", {k: v for k, v in body.items() if v is not None})
        return reply["entries"]  # type: ignore[no-any-return]

    def list_recent(
        self, *, limit: int = 20, project_id: str | None = None, cursor: str | None = None
    ) -> dict[str, Any]:
        query = {"limit": limit, "project_id": project_id, "cursor": cursor}
        return self._call("GET", "/memories", query=query)  # type: ignore[no-any-return]

    def iter_entries(self, *, project_id: str | None = None, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every visible entry, newest first, following cursors."""
        cursor = None
        while True:
            page = self.list_recent(limit=page_size, project_id=project_id, cursor=cursor)
            yield from page["entries"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def get_entry(self, entry_id: str) -> dict[str, Any]:
        return self._call("GET", f"/memories/{quote(entry_id, safe='')}")  # type: ignore[no-any-return]

    def delete_entry(self, entry_id: str) -> None:
        self._call("DELETE", f"/memories/{quote(entry_id, safe='')}")

    def delete_entries(self, query: str, *, project_id: str | None = None) -> int:
        return int(self._call("POST", "/memories/delete", {"query": query, "project_id": project_id})["deleted"])

    def delete_session(self, session_id: str, *, project_id: str | None = None) -> int:
        reply = self._call("DELETE", f"/sessions/{quote(session_id, safe='')}", query={"project_id": project_id})
        return int(reply["deleted"])

    def delete_project(self, project_id: str) -> int:
        return int(self._call("DELETE", f"/projects/{quote(project_id, safe='')}")["deleted"])

    # -- knowledge graph ---------------------------------------------------------------------------

    def remember(
        self, entity: str, facts: Sequence[str], *, entity_type: str | None = None, project_id: str | None = None
    ) -> dict[str, Any]:
        """The ``remember`` agent tool: facts about an entity (created if new)."""
        body: dict[str, Any] = {"entity": entity, "facts": list(facts), "project_id": project_id}
        if entity_type is not None:
            body["entity_type"] = entity_type
        return self._call("POST", "/graph/tools/remember", body)  # type: ignore[no-any-return]

    def relate(self, source: str, relation: str, target: str, *, project_id: str | None = None) -> dict[str, Any]:
        """The ``relate`` agent tool: a typed edge between two entities (created if new)."""
        body = {"source": source, "relation": relation, "target": target, "project_id": project_id}
        return self._call("POST", "/graph/tools/relate", body)  # type: ignore[no-any-return]

    def search_nodes(self, query: str, *, limit: int = 10, project_id: str | None = None) -> list[dict[str, Any]]:
        reply = self._call("GET", "/graph/search", query={"q": query, "limit": limit, "project_id": project_id})
        return reply["results"]  # type: ignore[no-any-return]

    def open_nodes(self, names: Sequence[str], *, project_id: str | None = None) -> dict[str, Any]:
        return self._call("GET", "/graph/nodes", query={"name": list(names), "project_id": project_id})  # type: ignore[no-any-return]

    def read_graph(
        self, *, as_of: str | None = None, recorded_as_of: str | None = None, project_id: str | None = None
    ) -> dict[str, Any]:
        query = {"as_of": as_of, "recorded_as_of": recorded_as_of, "project_id": project_id}
        return self._call("GET", "/graph", query=query)  # type: ignore[no-any-return]

    def history(self, entity: str, *, project_id: str | None = None) -> dict[str, Any]:
        path = f"/graph/entities/{quote(entity, safe='')}/history"
        return self._call("GET", path, query={"project_id": project_id})  # type: ignore[no-any-return]

    def profile_card(self, *, max_entities: int = 12, max_observations: int = 5, project_id: str | None = None) -> str:
        """The compact summary of what is known about the user, for a system prompt ("" when nothing)."""
        query = {"max_entities": max_entities, "max_observations": max_observations, "project_id": project_id}
        return str(self._call("GET", "/graph/profile-card", query=query)["text"])

    # -- erasure and export ------------------------------------------------------------------------

    def delete_user(self) -> dict[str, Any]:
        """Start the GDPR erasure of everything the user has; returns ``{"deletion_id", "status"}``."""
        return self._call("DELETE", "")  # type: ignore[no-any-return]

    def deletion_status(self, deletion_id: str) -> dict[str, Any]:
        return self._call("GET", f"/deletions/{quote(deletion_id, safe='')}")  # type: ignore[no-any-return]

    def export(self) -> Iterator[dict[str, Any]]:
        """Every page of the user's export (entries, graph, episodes), following cursors."""
        cursor = None
        while True:
            page = self._call("GET", "/export", query={"cursor": cursor})
            yield page
            cursor = page.get("next_cursor")
            if cursor is None:
                return
