"""The local server over real sockets against clients that trickle a request (issue 24, point 5): a request's
head and body have one deadline (``--read-timeout``), however steadily they trickle, so a few slow clients
cannot hold every request thread of a worker."""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from tests.e2e.conftest import ServerFactory

REQUEST_DEADLINE_SECONDS = 2
TRICKLE_INTERVAL_SECONDS = 0.5
SLOW_CLIENTS = 12
"""More than a worker's 8 request threads (agentmem.local.server.REQUEST_THREADS)."""
CLOSED_WITHIN_SECONDS = 20.0
"""Generous for a deadline of 2 s on a busy machine, and well under the 50 s each trickle would take."""

_BODY = b'{"query": "' + b"q" * 88 + b'"}'
SLOW_HEAD = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"p" * 60 + b"\r\n\r\n"
"""A valid request whose head alone takes a minute to trickle."""
SLOW_BODY_HEAD = (
    b"POST /v1/apps/demo/users/alice/memories/search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: " + str(len(_BODY)).encode() + b"\r\n\r\n"
)
"""Sent at once; then its body (a valid search of 100 bytes) trickles for 50 s."""


@dataclass
class Trickled:
    closed_after: float | None
    """Seconds from the first byte until the server closed the connection (None: still open at the bound)."""
    answer: bytes


def _trickle(address: tuple[str, int], at_once: bytes, trickled: bytes) -> Trickled:
    """Send ``at_once``, then ``trickled`` one byte every half second, until the server answers or closes."""
    with socket.create_connection(address, timeout=CLOSED_WITHIN_SECONDS) as sock:
        started = time.monotonic()
        if at_once:
            sock.sendall(at_once)
        for byte in trickled:
            if time.monotonic() - started > CLOSED_WITHIN_SECONDS:
                return Trickled(None, b"")
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # reset: the server has closed it
                return Trickled(time.monotonic() - started, b"")
            if select.select([sock], [], [], TRICKLE_INTERVAL_SECONDS)[0]:
                break  # the server answered or closed before the request was complete
        answer = b""
        try:
            while chunk := sock.recv(65536):  # until the server closes it
                answer += chunk
        except OSError:
            pass
        return Trickled(time.monotonic() - started, answer)


def test_clients_trickling_a_request_are_cut_off_at_its_deadline_and_health_is_answered(
    live_server_factory: ServerFactory,
) -> None:
    server = live_server_factory(args=("--workers", "1", "--read-timeout", str(REQUEST_DEADLINE_SECONDS)))
    parts = urlsplit(server.url)
    address = (str(parts.hostname), int(parts.port or 80))
    # Given more clients than the worker has request threads, each trickling a valid request (half its
    # head, half its body), a byte every half second: each request would take about a minute to arrive
    outcomes: list[Trickled | None] = [None] * SLOW_CLIENTS

    def run(index: int) -> None:
        at_once, trickled = (b"", SLOW_HEAD) if index % 2 else (SLOW_BODY_HEAD, _BODY)
        outcomes[index] = _trickle(address, at_once, trickled)

    clients = [threading.Thread(target=run, args=(i,)) for i in range(SLOW_CLIENTS)]
    for client in clients:
        client.start()
    time.sleep(1.5)  # every client has sent its first bytes
    # When another client asks for /v1/health meanwhile
    asked = time.monotonic()
    try:
        health = httpx.get(f"{server.url}/v1/health", timeout=CLOSED_WITHIN_SECONDS - 5)
    finally:
        for client in clients:
            client.join(CLOSED_WITHIN_SECONDS + 30)
    # Then it is answered while the slow requests are still trickling
    assert health.status_code == 200
    assert time.monotonic() - asked < CLOSED_WITHIN_SECONDS - 5
    # And the server closed each slow connection at the request's deadline, long before it would have
    # been sent in full, telling it why (408 request_timeout)
    for outcome in outcomes:
        assert outcome is not None
        assert outcome.closed_after is not None, "the server kept a trickling request open"
        assert outcome.closed_after < CLOSED_WITHIN_SECONDS
        assert outcome.answer.startswith(b"HTTP/1.1 408 "), outcome.answer
        assert b'"code": "request_timeout"' in outcome.answer or b'"code":"request_timeout"' in outcome.answer


def _answer_status(sock: socket.socket) -> int:
    """The status of the one answer the server sends next on ``sock`` (its body read to the end)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        body += chunk
    return int(head.split(b" ")[1])


def test_a_kept_alive_connection_gets_a_new_deadline_for_each_request(live_server_factory: ServerFactory) -> None:
    server = live_server_factory(args=("--workers", "1", "--read-timeout", str(REQUEST_DEADLINE_SECONDS)))
    parts = urlsplit(server.url)
    with socket.create_connection((str(parts.hostname), int(parts.port or 80)), timeout=CLOSED_WITHIN_SECONDS) as sock:
        # Given a connection that was answered, then kept idle for longer than a request's deadline
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _answer_status(sock) == 200
        time.sleep(REQUEST_DEADLINE_SECONDS + 1.5)
        # When it sends its next request, then that request is answered on the same connection
        sock.sendall(SLOW_BODY_HEAD + _BODY)
        assert _answer_status(sock) == 200
