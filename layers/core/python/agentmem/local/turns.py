"""Whose request a local worker runs next (issue 41, point 7): tenants take turns, and none takes every thread.

A worker of the local server runs the handler for one request at a time (as a Lambda execution environment does)
and reads requests with a few threads. First come, first served, one tenant's burst of slow requests (a dozen
session uploads) queued ahead of every other tenant's, and took every thread, so another tenant's search waited
for all of them or was never read. Here, while other tenants are about (holding threads, or seen in the last
:data:`CONTENTION_SECONDS`), each tenant (its key, or the app its path names) holds at most ``per_tenant`` of the
worker's threads, waiting or running; one more is answered 429 ``too_many_in_flight`` at once (its body read and
dropped, never handed to the handler). A tenant alone uses every thread (the usual local server: one app, many
concurrent requests). And the handler goes to the tenants in turn, oldest request first within each: a request
waits for the one running and at most one of each other tenant waiting before it.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator, Mapping

_APP = re.compile(r"^/(?:v1/apps|agentcore/memories)/([^/?]+)")


def tenant_of(path: str, headers: Mapping[str, str]) -> str:
    """Who a request is for: its key (``x-api-key`` or ``Authorization``), else the app its path names, else
    nobody in particular (the public routes)."""
    key = headers.get("x-api-key") or headers.get("authorization")
    if key:
        return "key:" + key
    match = _APP.match(path)
    return "app:" + match.group(1) if match else ""


CONTENTION_SECONDS = 30.0
"""How long after its last request a tenant still counts as about (a steady light load has gaps)."""


class TenantBusy(Exception):
    """The tenant already holds as many of the worker's threads as it may."""


class FairTurns:
    def __init__(self, per_tenant: int) -> None:
        self.per_tenant = per_tenant
        self._changed = threading.Condition()
        self._running: str | None = None
        """The tenant whose request has the handler."""
        self._held: Counter[str] = Counter()
        """Tenant -> its requests waiting or running."""
        self._waiting: dict[str, deque[object]] = {}
        """Tenant -> its waiting requests, oldest first (only tenants with some)."""
        self._order: deque[str] = deque()
        """The tenants with waiting requests, in the order their turns come."""
        self._seen: dict[str, float] = {}
        """Tenant -> when its last request ended (monotonic)."""

    @contextlib.contextmanager
    def admitted(self, tenant: str) -> Iterator[None]:
        """Within, the request holds one of the tenant's threads. TenantBusy at once when it holds ``per_tenant``
        while another tenant is about."""
        with self._changed:
            if self._held[tenant] >= self.per_tenant and self._others_about(tenant):
                raise TenantBusy(tenant)
            self._held[tenant] += 1
        try:
            yield
        finally:
            with self._changed:
                self._held[tenant] -= 1
                if not self._held[tenant]:
                    del self._held[tenant]
                self._seen[tenant] = time.monotonic()

    def _others_about(self, tenant: str) -> bool:
        """Whether a tenant other than ``tenant`` holds a thread or was seen lately (the public routes, which
        name no tenant, count as none)."""
        if any(other not in (tenant, "") for other in self._held):
            return True
        recent = time.monotonic() - CONTENTION_SECONDS
        self._seen = {t: at for t, at in self._seen.items() if at >= recent}
        return any(other not in (tenant, "") for other in self._seen)

    @contextlib.contextmanager
    def turn(self, tenant: str) -> Iterator[None]:
        """Within, the handler is this request's. A tenant joins the line behind those waiting when its first
        request arrives, or when its running request ends and it has more: every other waiting tenant's turn comes
        before its next one."""
        ticket = object()
        with self._changed:
            queue = self._waiting.setdefault(tenant, deque())
            if not queue and self._running != tenant:
                self._order.append(tenant)
            queue.append(ticket)
            while self._running is not None or self._order[0] != tenant or queue[0] is not ticket:
                self._changed.wait()
            self._running = tenant
            queue.popleft()
            self._order.popleft()
            if not queue:
                del self._waiting[tenant]
        try:
            yield
        finally:
            with self._changed:
                self._running = None
                if tenant in self._waiting and tenant not in self._order:
                    self._order.append(tenant)  # its next request, behind every other waiting tenant
                self._changed.notify_all()

    def held(self) -> dict[str, int]:
        with self._changed:
            return dict(self._held)
