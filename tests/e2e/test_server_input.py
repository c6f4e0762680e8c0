"""What the local server answers before the handler: methods, body framing, parse errors, the bind address.

The framing cases are sent over a raw socket: an HTTP client will not send a wrong Content-Length.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.e2e.conftest import REPO_ROOT, LiveServer, ServerFactory, free_port

SCOPE = "/v1/apps/e2e/users/framing"


def raw_exchange(
    server: LiveServer, head: str, body: bytes = b"", timeout: float = 10.0
) -> tuple[int, dict[str, str], bytes]:
    """Send one request as written and read the answer until the server closes or the body is complete."""
    host, port = server.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        status_line, _, rest = received.partition(b"\r\n")
        header_block, _, payload = rest.partition(b"\r\n\r\n")
        headers = {}
        for line in header_block.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(payload) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            payload += chunk
    return int(status_line.split()[1]), headers, payload


def assert_error_body(payload: bytes, code: str) -> None:
    error = json.loads(payload)["error"]
    assert error["code"] == code
    assert error["message"]
    assert error["request_id"]


def listed(http: httpx.Client) -> list[object]:
    entries: list[object] = http.get(f"{SCOPE}/memories").json()["entries"]
    return entries


def test_a_negative_content_length_is_a_400_with_the_error_body(live_server: LiveServer, http: httpx.Client) -> None:
    # Given a POST that says its body is -1 bytes long (the old server read until the client hung up)
    status, headers, payload = raw_exchange(
        live_server,
        f"POST {SCOPE}/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nContent-Length: -1\r\n",
        b'{"entry": {"content": {"role": "user", "parts": [{"text": "never stored"}]}, "author": "user"}}',
    )
    # Then 400 with the API's error body, the connection closes, and nothing is written
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert_error_body(payload, "malformed_request")
    assert listed(http) == []


def test_a_content_length_that_is_not_a_number_is_a_400_with_the_error_body(live_server: LiveServer) -> None:
    status, headers, payload = raw_exchange(
        live_server, f"POST {SCOPE}/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n", b"{}"
    )
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert_error_body(payload, "malformed_request")


def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent(live_server: LiveServer) -> None:
    # Given a request declaring 10 GiB and sending none of it: the answer cannot wait for the body
    status, headers, payload = raw_exchange(
        live_server, f"POST {SCOPE}/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {10 * 2**30}\r\n"
    )
    assert status == 413
    assert headers["connection"] == "close"
    assert_error_body(payload, "payload_too_large")


def test_a_body_without_a_length_is_a_411(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"entry": {"content": {"role": "user", "parts": [{"text": "chunked"}]}, '
        yield b'"author": "user"}}'

    # httpx sends a generator body with Transfer-Encoding: chunked
    reply = http.post(f"{SCOPE}/memories", content=chunks(), headers={"Content-Type": "application/json"})
    assert reply.status_code == 411
    assert reply.json()["error"]["code"] == "length_required"
    assert listed(http) == []


def test_trace_and_other_unrouted_methods_are_405_with_the_error_body(http: httpx.Client) -> None:
    for method in ("TRACE", "PROPFIND"):
        reply = http.request(method, "/v1/health")
        assert reply.status_code == 405, method
        assert reply.headers["content-type"] == "application/json"
        assert reply.json()["error"]["code"] == "method_not_allowed"
        assert "GET" in reply.headers["allow"]


def test_an_unparsable_request_line_is_a_400_with_the_error_body(live_server: LiveServer) -> None:
    status, _, payload = raw_exchange(live_server, "GET /v1/health HTTP/9.9\r\nHost: 127.0.0.1\r\n")
    assert status == 400
    assert_error_body(payload, "malformed_request")


def test_a_bad_request_does_not_break_the_next_one(live_server: LiveServer, http: httpx.Client) -> None:
    raw_exchange(live_server, f"POST {SCOPE}/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n")
    assert http.get("/v1/health").status_code == 200


def serve_command(tmp_path: Path, *options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agentmem.cli",
        "serve",
        "--port",
        str(free_port()),
        "--db",
        str(tmp_path / "memory.db"),
        "--workers",
        "1",
        *options,
    ]


def test_a_network_host_without_auth_is_refused(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "::", "192.0.2.10", "my-laptop.example"):
        # When serving a non-loopback address with --auth none, the default
        done = subprocess.run(
            serve_command(tmp_path, "--host", host), cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
        )
        # Then the command refuses, says why and how to proceed, and never binds
        assert done.returncode == 2, (host, done.stdout, done.stderr)
        assert "--allow-unauthenticated-network" in done.stderr
        assert "--auth required" in done.stderr
        assert "agent memory API on" not in done.stdout


def test_a_network_host_is_served_when_asked_explicitly_or_with_auth(live_server_factory: ServerFactory) -> None:
    # "0.0.0.0" binds every interface; the test talks to it on loopback only.
    for options in (("--allow-unauthenticated-network",), ("--auth", "required")):
        server = live_server_factory(args=("--workers", "1", "--host", "0.0.0.0", *options))
        assert httpx.get(f"{server.base_url}/v1/health").status_code == 200
        server.stop()


def test_a_negative_worker_count_is_refused(tmp_path: Path) -> None:
    command = [c if c != "1" else "-1" for c in serve_command(tmp_path, "--host", "127.0.0.1")]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--workers" in done.stderr
