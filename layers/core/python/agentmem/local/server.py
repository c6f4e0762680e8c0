"""The local server: gunicorn worker processes, each feeding the Lambda handler one event at a time.

Like Lambda execution environments, every worker is a process with its own container (table
connections, caches, embedding model) that runs the handler for one API Gateway REST proxy event at
a time (``gthread`` threads read requests, each within a deadline; the handler takes one at a time).
Gunicorn parses HTTP and sets ``TCP_NODELAY``; this module turns a request into the event of
:mod:`agentmem.local.events` and answers what never reaches the handler (a method API Gateway does
not route, a body without a length or over the limit, a request gunicorn cannot parse) with the
API's JSON error body.
"""

from __future__ import annotations

import errno
import http
import ipaddress
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from gunicorn.app.base import BaseApplication
from gunicorn.http import errors as http_errors
from gunicorn.util import write_nonblock
from gunicorn.workers.gthread import TConn, ThreadWorker

from agentmem.api.http import MAX_BODY_BYTES
from agentmem.console import assets as console
from agentmem.local.events import LocalContext, rest_event
from agentmem.local.turns import FairTurns, TenantBusy, tenant_of
from agentmem.models.responses import error_body as envelope

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
StartResponse = Callable[[str, list[tuple[str, str]]], Any]
_Read = TypeVar("_Read", bytes, int)

# The methods of API Gateway's ANY: anything else (TRACE, CONNECT, PROPFIND...) never reaches Lambda.
METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
ROOT_LINKS = {
    "console": "/console",
    "health": "/v1/health",
    "capabilities": "/v1/capabilities",
    "openapi": "/v1/openapi.json",
    "memories": "/v1/apps/{app}/users/{user}/memories",
    "mcp": "/v1/apps/{app}/users/{user}/mcp",
    "agentcore": "/agentcore",
}
"""What ``GET /`` answers on the local server (with a redirect to the console, which browsers follow)."""
_HOP_BY_HOP = {"connection", "content-length", "keep-alive", "transfer-encoding", "upgrade"}


def error_body(code: str, message: str) -> bytes:
    """The API's error envelope, for the answers given before the handler (no Lambda request id: a fresh one)."""
    return json.dumps(envelope(code, message, str(uuid.uuid4()))).encode()


def _status_line(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


def _unreadable_body(headers: Mapping[str, str]) -> tuple[int, str, str] | None:
    """Why a request's body will not be read (status, code, message), from its headers alone."""
    length = headers.get("CONTENT-LENGTH")
    if length is None:
        if "TRANSFER-ENCODING" in headers:
            return 411, "length_required", "a request body needs a Content-Length"
        return None
    # gunicorn has already rejected a length that is not a non-negative decimal integer.
    if int(length) > MAX_BODY_BYTES:
        return 413, "payload_too_large", f"the request body exceeds {MAX_BODY_BYTES} bytes"
    return None


def is_loopback_name(host: str) -> bool:
    """``localhost`` (or a name under it), a 127/8 address or ``::1``, with or without brackets."""
    name = host.strip().rstrip(".").lower().removeprefix("[").removesuffix("]")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    """The name of a ``Host`` header without its port (``[::1]:8000`` -> ``[::1]``)."""
    if host_header.startswith("["):
        return host_header.split("]", 1)[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


@dataclass(frozen=True, slots=True)
class BrowserGuard:
    """What a web page the user visits may not do to a server on the user's machine.

    - A request whose ``Origin`` is neither this server's own (``http://`` + its ``Host``) nor on
      ``allowed_origins`` is refused (403 ``forbidden_origin``): a cross-site form, a ``text/plain``
      fetch, a page's MCP call. Browsers send ``Origin`` on every such request; ``curl`` sends none.
      ``Sec-Fetch-Site: cross-site`` is refused likewise.
    - On a loopback bind, a request whose ``Host`` is not a loopback name is refused (421
      ``misdirected_request``): a page that points its own domain at 127.0.0.1 (DNS rebinding) cannot
      read the API through it.

    The console's files (``page=True``) are a page anyone may link to: a link followed from another site is
    served (its requests are same-origin; the files hold no data), the ``Host`` check still applies.
    """

    allowed_origins: frozenset[str] = frozenset()
    loopback: bool = True

    def refusal(self, headers: Mapping[str, str], *, page: bool = False) -> tuple[int, str, str] | None:
        host = headers.get("host", "")
        if self.loopback and host and not is_loopback_name(_host_name(host)):
            return 421, "misdirected_request", f"this server answers loopback names only, not {host!r}"
        if page:
            return None
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in {f"http://{host}", *self.allowed_origins}:
            return 403, "forbidden_origin", f"requests from {origin!r} are not allowed (agentmem serve --allow-origin)"
        if origin is None and headers.get("sec-fetch-site") == "cross-site":
            return 403, "forbidden_origin", "cross-site requests are not allowed"
        return None


class LambdaApp:
    """A WSGI application that hands each request to the Lambda handler as an API Gateway REST event,
    one at a time (a worker is one Lambda execution environment; its other threads only read requests), the
    tenants taking turns, none holding more than :data:`TENANT_THREADS` of the threads (agentmem/local/turns.py).

    As API Gateway does in the cloud, ``/console`` paths go to the console's handler instead (its static
    files, read by any thread: they do not wait for the API's request in progress)."""

    def __init__(self, lambda_handler: LambdaHandler, guard: BrowserGuard | None = None) -> None:
        self._handler = lambda_handler
        self._guard = guard or BrowserGuard()
        self._turns = FairTurns(TENANT_THREADS)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = str(environ["REQUEST_METHOD"]).upper()
        if method not in METHODS:
            message = f"{method} is not supported; use one of {', '.join(METHODS)}"
            return self._error(start_response, 405, "method_not_allowed", message, [("Allow", ", ".join(METHODS))])
        headers = _request_headers(environ)
        path, query = _raw_target(environ)
        if path == "/" and method in ("GET", "HEAD"):
            return self._root(start_response, method)
        page = console.is_console_path(path)
        refused = self._guard.refusal(headers, page=page) or _unreadable_body(
            {name.upper(): value for name, value in headers.items()}
        )
        if refused is not None:
            return self._error(start_response, *refused)
        tenant = tenant_of(path, headers)
        try:
            with self._turns.admitted(tenant):
                source_ip = str(environ.get("REMOTE_ADDR") or "")
                event = rest_event(method, path, query=query, headers=headers, body=_body(environ), source_ip=source_ip)
                if page:
                    result = console.handler(event, LocalContext())
                else:
                    with self._turns.turn(tenant):
                        result = self._handler(event, LocalContext())
        except _NotUtf8:
            return self._error(start_response, 400, "malformed_request", "the request body is not valid UTF-8")
        except TenantBusy:
            _drain(environ)  # (a client still sending its body would see the connection reset, not the answer)
            message = (
                f"this tenant already has {self._turns.per_tenant} requests waiting or running in this worker; "
                "retry when one has been answered"
            )
            return self._error(start_response, 429, "too_many_in_flight", message, [("Retry-After", "1")])
        reply: dict[str, str] = {k: str(v) for k, v in (result.get("headers") or {}).items()}
        for name, values in (result.get("multiValueHeaders") or {}).items():
            reply[name] = ", ".join(str(v) for v in values)
        body = (result.get("body") or "").encode("utf-8")
        kept = [(k, v) for k, v in reply.items() if k.lower() not in _HOP_BY_HOP]
        sent = self._reply(start_response, int(result.get("statusCode", 500)), kept, body)
        return [] if method == "HEAD" else sent

    @classmethod
    def _root(cls, start_response: StartResponse, method: str) -> Iterable[bytes]:
        """``GET /``: a browser is sent to the console; anything else reads where things are."""
        body = json.dumps(ROOT_LINKS).encode()
        headers = [("Content-Type", "application/json"), ("Location", console.PREFIX)]
        sent = cls._reply(start_response, 302, headers, body)
        return [] if method == "HEAD" else sent

    @classmethod
    def _error(
        cls, start: StartResponse, status: int, code: str, message: str, headers: Iterable[tuple[str, str]] = ()
    ) -> list[bytes]:
        """The API's error envelope, answered before the handler."""
        return cls._reply(start, status, [("Content-Type", "application/json"), *headers], error_body(code, message))

    @staticmethod
    def _reply(start_response: StartResponse, status: int, headers: list[tuple[str, str]], body: bytes) -> list[bytes]:
        start_response(_status_line(status), [*headers, ("Content-Length", str(len(body)))])
        return [body]


class _NotUtf8(Exception):
    pass


def _body(environ: Mapping[str, Any]) -> str | None:
    """The request's body as text (None when empty); _NotUtf8 when it is not UTF-8."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw: bytes = environ["wsgi.input"].read(length) if length else b""
    try:
        return raw.decode("utf-8") if raw else None
    except UnicodeDecodeError as error:
        raise _NotUtf8 from error


def _drain(environ: Mapping[str, Any]) -> None:
    """Read a refused request's body to its end (within the read timeout), so that its answer is read."""
    left = int(environ.get("CONTENT_LENGTH") or 0)
    while left > 0 and (chunk := environ["wsgi.input"].read(min(left, 65536))):
        left -= len(chunk)


def _request_headers(environ: Mapping[str, Any]) -> dict[str, str]:
    headers = {
        key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")
    }
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").lower()] = str(environ[key])
    return headers


def _raw_target(environ: Mapping[str, Any]) -> tuple[str, str]:
    """The path as the client sent it (still percent-encoded, as API Gateway passes it) and the query."""
    target = str(environ.get("RAW_URI") or environ.get("PATH_INFO") or "/")
    if not target.startswith("/"):  # the absolute form, http://host/path
        parts = urlsplit(target)
        return parts.path or "/", parts.query
    path, _, query = target.partition("?")
    return path, query


READ_TIMEOUT_SECONDS = 15.0
"""How long a request thread waits for a request's head and body, from its first byte, however they trickle."""
REQUEST_THREADS = 16
"""Threads a worker reads requests with; the handler runs one request at a time (:class:`LambdaApp`)."""
TENANT_THREADS = 4
"""The most of a worker's threads one tenant holds, waiting or running: three busy tenants leave a quarter."""


class RequestTimeout(http_errors.ParseException):  # type: ignore[misc]
    """A request's head and body did not arrive within ``read_timeout``: answered 408, then closed.

    Not an ``OSError`` (as a socket's own timeout is): gunicorn closes a connection whose read fails
    without an answer, and hands other errors to :meth:`LambdaWorker.handle_error`."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request did not arrive within {seconds:g} s")


class _TimedSocket(socket.socket):
    """A client socket that gives each request ``read_timeout`` seconds for its head and body, whatever it
    trickles (gunicorn sets its sockets blocking, with no timeout: a client that sent half a request, or a
    byte now and then, held a request thread for as long as it liked).

    gunicorn makes the socket blocking when a request thread takes the connection to read a request (a new
    connection with data, or a kept-alive one whose next request has begun): that starts the request's
    deadline. Each read then waits at most until the deadline, and one past it raises
    :class:`RequestTimeout`. The deadline ends when the request has been answered (:func:`_end_request`;
    gunicorn then drains a body left unread within its own bound), when the connection goes back to the
    poller (non-blocking), or when it is being closed (``shutdown``: gunicorn drains before it closes)."""

    read_timeout = READ_TIMEOUT_SECONDS
    _request_deadline: float | None = None

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(self.read_timeout)
            self._request_deadline = time.monotonic() + self.read_timeout
        else:
            self._request_deadline = None
            super().setblocking(flag)

    def end_request(self) -> None:
        """What is read from now on (an unread body drained, the close) is not the request's."""
        self._request_deadline = None

    def shutdown(self, how: int) -> None:
        self.end_request()
        super().shutdown(how)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        return self._before_deadline(super().recv, bufsize, flags)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        return self._before_deadline(super().recv_into, buffer, nbytes, flags)

    def _before_deadline(self, read: Callable[..., _Read], *args: Any) -> _Read:
        deadline = self._request_deadline
        if deadline is None:
            return read(*args)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RequestTimeout(self.read_timeout)
        timeout = self.gettimeout()
        self.settimeout(remaining if timeout is None else min(timeout, remaining))
        try:
            return read(*args)
        except TimeoutError:
            raise RequestTimeout(self.read_timeout) from None
        finally:
            self.settimeout(timeout)


class LambdaWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker, answering the requests it cannot parse with the API's error body and
    timing out clients that stop sending halfway."""

    def accept(self, listener: Any) -> None:
        try:
            client, address = listener.accept()
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        timed = _TimedSocket(client.family, client.type, client.proto, fileno=client.detach())
        timed.setblocking(True)
        self.enqueue_req(TConn(self.cfg, timed, address, listener.getsockname()))

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        status, code, message = _parse_error(exc)
        if status >= 500:
            self.log.exception("error handling a request")
        else:
            self.log.warning("invalid request from %s: %s", (addr or ("",))[0], exc)
        body = error_body(code, message)
        head = f"HTTP/1.1 {_status_line(status)}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        try:
            write_nonblock(client, f"{head}Content-Length: {len(body)}\r\n\r\n".encode("latin-1") + body)
        except OSError:
            self.log.debug("could not send the error response")


def _parse_error(exc: BaseException) -> tuple[int, str, str]:
    if isinstance(exc, RequestTimeout):
        return 408, "request_timeout", str(exc)
    if isinstance(exc, http_errors.InvalidResponseHeader | http_errors.InvalidResponseHeaderName):
        return 500, "internal_error", "the server could not build its response"
    if isinstance(exc, http_errors.LimitRequestLine):
        return 414, "uri_too_long", str(exc)
    if isinstance(exc, http_errors.LimitRequestHeaders):
        return 431, "headers_too_large", str(exc)
    if isinstance(exc, http_errors.ExpectationFailed):
        return 417, "expectation_failed", str(exc)
    if isinstance(exc, http_errors.InvalidHeader) and "CONTENT-LENGTH" in str(exc):
        return 400, "malformed_request", "Content-Length must be one non-negative decimal integer"
    if isinstance(exc, http_errors.ParseException) and not isinstance(exc, http_errors.ConfigurationProblem):
        return 400, "malformed_request", f"the request could not be parsed: {exc}"
    return 500, "internal_error", "the server failed to handle the request"


def _close_unread_bodies(worker: Any, req: Any) -> None:
    """A body the app will not read is not drained for keep-alive: the connection closes after the answer."""
    if _unreadable_body(dict(req.headers)) is not None or req.method.upper() not in METHODS:
        req.must_close = True


def _end_request(_worker: Any, _req: Any, environ: Mapping[str, Any]) -> None:
    """The request has been answered: its deadline no longer bounds the connection's reads."""
    sock = environ.get("gunicorn.socket")
    if isinstance(sock, _TimedSocket):
        sock.end_request()


def _stop_background_work(_server: Any, worker: Any) -> None:
    """A stopping worker lets the erasures it runs in the background finish and stops its extraction and
    snapshot threads (within gunicorn's grace), then closes its table: never under a thread still reading it."""
    from agentmem.container import get_container

    if not get_container().close(max(1.0, float(worker.cfg.graceful_timeout) - 5)):
        worker.log.warning("background work (an erasure, extraction or a snapshot) was still running at exit")


class LocalServer(BaseApplication):  # type: ignore[misc]
    """``agentmem serve``: gunicorn's master process, forking ``workers`` workers that each call ``load_app``."""

    def __init__(
        self,
        host: str,
        port: int,
        workers: int,
        load_app: Callable[[], LambdaHandler],
        *,
        banner: str = "",
        access_log: bool = False,
        allowed_origins: Iterable[str] = (),
        read_timeout: float = READ_TIMEOUT_SECONDS,
    ) -> None:
        self._options: dict[str, Any] = {
            "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            "workers": workers,
            "worker_class": "agentmem.local.server.LambdaWorker",
            "threads": REQUEST_THREADS,
            "keepalive": 75,
            "timeout": 120,
            "graceful_timeout": 30,
            "loglevel": "warning",
            "accesslog": "-" if access_log else None,
            "access_log_format": '%(p)s %(h)s "%(r)s" %(s)s %(b)s %(M)sms',
            "control_socket_disable": True,
            "proc_name": "agentmem",
            "pre_request": _close_unread_bodies,
            "post_request": _end_request,
            "worker_exit": _stop_background_work,
            "when_ready": self._ready,
        }
        _TimedSocket.read_timeout = read_timeout  # the workers are forked from this process: they inherit it
        self._load_app = load_app
        self._banner = banner
        self._guard = BrowserGuard(frozenset(o.rstrip("/") for o in allowed_origins), loopback=is_loopback_name(host))
        super().__init__()

    def _ready(self, arbiter: Any) -> None:
        host, port = arbiter.LISTENERS[0].sock.getsockname()[:2]
        workers = self._options["workers"]
        origin = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        print(f"agent memory API on {origin} ({workers} workers{self._banner})", flush=True)
        links = f"console: {origin}/console    health: {origin}/v1/health    OpenAPI: {origin}/v1/openapi.json"
        print(links, flush=True)

    def load_config(self) -> None:
        for name, value in self._options.items():
            self.cfg.set(name, value)

    def load(self) -> LambdaApp:
        return LambdaApp(self._load_app(), self._guard)


def address_in_use(host: str, port: int) -> bool:
    """Whether another process listens on ``host:port`` (a bind as gunicorn's, with SO_REUSEADDR, fails).

    Checked before gunicorn starts: it would retry for 5 s, printing its own errors, then exit."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return False  # gunicorn says what is wrong with the name
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            return error.errno == errno.EADDRINUSE
    return False


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
