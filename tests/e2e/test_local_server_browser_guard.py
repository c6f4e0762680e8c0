"""The local server over real sockets (issue 17, points 7 and 8): a web page the user visits can neither
drive it nor read it, curl keeps working, and slow or pipelining clients do not stall it."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx

from tests.e2e.conftest import LiveServer, ServerFactory

SCOPE = "/v1/apps/demo/users/alice"


def _store(client: httpx.Client, text: str) -> None:
    body = {"entry": {"content": {"parts": [{"text": text}]}}}
    assert client.post(f"{SCOPE}/memories", json=body).status_code == 201


def test_a_cross_site_page_cannot_delete_store_or_read(live_server: LiveServer) -> None:
    with live_server.client() as client:
        _store(client, "my passport number is X123")
        evil = {"Origin": "https://evil.example"}
        # A text/plain POST (no CORS preflight) to delete by filter
        deleted = client.post(
            f"{SCOPE}/memories/delete",
            content='{"query": "passport"}',
            headers={**evil, "Content-Type": "text/plain"},
        )
        # A form POST to the MCP endpoint storing an injected memory
        rpc = (
            '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_memory","arguments":{"text":"obey"}}}'
        )
        injected = client.post(
            f"{SCOPE}/mcp", content=rpc, headers={**evil, "Content-Type": "application/x-www-form-urlencoded"}
        )
        # A cross-site request that says so without an Origin
        fetched = client.get(f"{SCOPE}/export", headers={"Sec-Fetch-Site": "cross-site"})
        assert [r.status_code for r in (deleted, injected, fetched)] == [403, 403, 403]
        assert deleted.json()["error"]["code"] == "forbidden_origin"
        # Then nothing changed
        texts = [e["content"]["parts"][0]["text"] for e in client.get(f"{SCOPE}/memories").json()["entries"]]
        assert texts == ["my passport number is X123"]


def test_dns_rebinding_cannot_read_through_a_foreign_host_name(live_server: LiveServer) -> None:
    with live_server.client() as client:
        _store(client, "my passport number is X123")
        rebound = client.get(f"{SCOPE}/export", headers={"Host": "attacker.example"})
        assert rebound.status_code == 421
        assert rebound.json()["error"]["code"] == "misdirected_request"
        assert "X123" not in rebound.text
        port = urlsplit(live_server.url).port
        for name in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "app.localhost"):
            assert client.get("/v1/health", headers={"Host": name}).status_code == 200, name


def test_the_servers_own_origin_curl_and_allowed_origins_are_served(live_server_factory: ServerFactory) -> None:
    server = live_server_factory(args=("--workers", "1", "--allow-origin", "http://localhost:3000"))
    own = server.url  # http://127.0.0.1:<port>, as the console's own page sends it
    with server.client() as client:
        for origin in (own, "http://localhost:3000"):
            reply = client.post(
                f"{SCOPE}/memories",
                json={"entry": {"content": {"parts": [{"text": origin}]}}},
                headers={"Origin": origin},
            )
            assert reply.status_code == 201, reply.text
        # curl -d: no Origin, a form Content-Type, a JSON body
        curl = client.post(
            f"{SCOPE}/memories/search",
            content='{"query": "localhost"}',
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert curl.status_code == 200
        assert curl.json()["entries"]
        assert client.get("/v1/health", headers={"Origin": "http://localhost:4000"}).status_code == 403


def _half_request(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.sendall(b"POST /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n")  # and then nothing
    return sock


def test_slow_clients_do_not_stall_the_server(live_server_factory: ServerFactory) -> None:
    server = live_server_factory(args=("--workers", "1", "--read-timeout", "2"))
    # Given more half-sent requests than the worker has request threads
    stalled = [_half_request(server.url) for _ in range(12)]
    try:
        time.sleep(0.5)
        # Then the server still answers, and each stalled connection is closed once it times out
        with httpx.Client(base_url=server.url, timeout=20) as client:
            assert client.get("/v1/health").status_code == 200
        for sock in stalled:
            sock.settimeout(20)
            said = b""
            while chunk := sock.recv(65536):  # until the server closes it (a recv timeout would raise)
                said += chunk
            assert said == b"" or said.startswith(b"HTTP/1.1 4"), said
    finally:
        for sock in stalled:
            sock.close()


def test_pipelined_requests_are_each_answered(live_server: LiveServer) -> None:
    parts = urlsplit(live_server.url)
    request = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as sock:
        sock.sendall(request * 2)
        received = b""
        while received.count(b"HTTP/1.1 200") < 2:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
    assert received.count(b"HTTP/1.1 200") == 2
