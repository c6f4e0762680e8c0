"""One call of the REST API: how it is described (``Call``, ``Paged``), made ready and retried
(``Exchange``, ``RetryPolicy``), and answered (the library's error classes). Shared by the blocking and
the asyncio clients of :mod:`agentmem.client`, which describe the routes and send the calls."""

from __future__ import annotations

import email.utils
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload
from urllib.parse import urlencode

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
UNREACHABLE = 0
"""The status a client records for a request that got no HTTP answer (refused, reset, timed out)."""

T = TypeVar("T")
U = TypeVar("U")
P = ParamSpec("P")


class ApiError(errors.MemoryServiceError):
    """Raised for a status without a more specific class."""


def _as_dict(payload: Any) -> dict[str, Any]:
    return payload  # type: ignore[no-any-return]


def present(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


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


class Exchange(Generic[T]):
    """A call made ready to send (URL, headers, body), the answers it got, and its outcome."""

    def __init__(self, client: Endpoint, call: Call[T]) -> None:
        params = present(call.query)
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
            raise error_from(self._status, self._raw)
        return self._call.read(json.loads(self._raw) if self._raw else None)


def error_from(status: int, raw: bytes) -> errors.MemoryServiceError:
    try:
        error = json.loads(raw)["error"]
        code, message, request_id = error["code"], error["message"], error.get("request_id")
    except (ValueError, KeyError, TypeError):
        code, message, request_id = "http_error", raw.decode("utf-8", "replace")[:500] or f"HTTP {status}", None
    cls = _BY_STATUS.get(status, ApiError)
    exc = cls(message, code=code, details={"status": status, "request_id": request_id})
    exc.http_status = status
    return exc


# -- sending, blocking or awaited -------------------------------------------------------------------


class Sync:
    """Sends calls and blocks for their answers."""

    def send(self, call: Call[T]) -> T:
        raise NotImplementedError

    def pages(self, paged: Paged[T]) -> Iterator[T]:
        call: Call[dict[str, Any]] | None = paged.page(None)
        while call is not None:
            page = self.send(call)
            yield from paged.items(page)
            call = paged.after(page)


class Async:
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


class Route(Generic[P, T]):
    """A route method: on a sync client it answers ``T``, on an async client an awaitable of ``T``."""

    def __init__(self, build: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, owner: Sync, kind: type[Any] | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(self, owner: Async, kind: type[Any] | None = None) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, owner: Sync | Async, kind: type[Any] | None = None) -> Callable[P, Any]:
        def send(*args: P.args, **kwargs: P.kwargs) -> Any:
            return owner.send(self._build(owner, *args, **kwargs))

        return send


class Listing(Generic[P, T]):
    """A paged route method: an iterator of ``T`` on a sync client, an async iterator on an async one."""

    def __init__(self, build: Callable[Concatenate[Any, P], Paged[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, owner: Sync, kind: type[Any] | None = None) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(self, owner: Async, kind: type[Any] | None = None) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, owner: Sync | Async, kind: type[Any] | None = None) -> Callable[P, Any]:
        def pages(*args: P.args, **kwargs: P.kwargs) -> Any:
            return owner.pages(self._build(owner, *args, **kwargs))

        return pages


class Endpoint(Protocol):
    """What an exchange reads of its client."""

    base_url: str
    api_key: str | None
    retry: RetryPolicy
    idempotency_keys: bool
