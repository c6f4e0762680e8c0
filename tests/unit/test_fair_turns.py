"""A local worker's handler goes to the tenants in turn, and no tenant holds more than its threads (issue 41,
point 7; agentmem/local/turns.py). Real threads; each "request" holds the handler until the test lets it go."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from agentmem.local.turns import FairTurns, TenantBusy, tenant_of


class Requests:
    """Requests that wait for their turn in threads of their own, and run until released."""

    def __init__(self, turns: FairTurns) -> None:
        self.turns = turns
        self.ran: list[str] = []
        self._release: dict[str, threading.Event] = {}
        self._threads: list[threading.Thread] = []

    def send(self, tenant: str, name: str) -> None:
        release = self._release[name] = threading.Event()
        arrived = threading.Event()

        def run() -> None:
            with self.turns.admitted(tenant):
                arrived.set()
                with self.turns.turn(tenant):
                    self.ran.append(name)
                    release.wait(30)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self._threads.append(thread)
        assert arrived.wait(30)
        _wait_until(lambda: self.turns.held().get(tenant, 0) >= 1)
        time.sleep(0.02)  # (it is waiting on the condition, or running, by now; the order below does not rely on it)

    def finish(self, name: str) -> None:
        """Let the running request end, and wait until the next one (if any) has taken the handler."""
        assert self.ran[-1] == name, self.ran
        before = len(self.ran)
        self._release[name].set()
        _wait_until(lambda: len(self.ran) > before or not any(t.is_alive() for t in self._threads))

    def join(self) -> None:
        for event in self._release.values():
            event.set()
        for thread in self._threads:
            thread.join(30)


def _wait_until(condition: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.005)


def test_a_tenant_waits_for_at_most_one_request_of_a_busy_tenant() -> None:
    turns = FairTurns(per_tenant=4)
    requests = Requests(turns)
    try:
        # Given tenant A running one request and three more of its own waiting
        requests.send("A", "a1")
        _wait_until(lambda: requests.ran == ["a1"])
        for name in ("a2", "a3", "a4"):
            requests.send("A", name)
        # When tenant B sends one
        requests.send("B", "b1")
        # Then B's runs as soon as A's running one ends, before A's waiting ones
        requests.finish("a1")
        assert requests.ran == ["a1", "b1"]
        requests.finish("b1")
        requests.finish("a2")
        assert requests.ran == ["a1", "b1", "a2", "a3"]
    finally:
        requests.join()


def test_a_tenant_past_its_threads_is_refused_at_once_while_others_are_about() -> None:
    turns = FairTurns(per_tenant=2)
    requests = Requests(turns)
    try:
        # Given tenant B about (a request of its own running), and A holding its two threads
        requests.send("B", "b1")
        requests.send("A", "a1")
        requests.send("A", "a2")
        # Then a third of A's is refused at once, and B is let in
        with pytest.raises(TenantBusy), turns.admitted("A"):
            pass
        with turns.admitted("B"):
            assert turns.held() == {"A": 2, "B": 2}
        # And once one of A's was answered, A may send again
        _wait_until(lambda: requests.ran == ["b1"])
        requests.finish("b1")
        requests.finish("a1")
        with turns.admitted("A"):
            assert turns.held()["A"] == 2
    finally:
        requests.join()
    assert turns.held() == {}


def test_a_tenant_alone_uses_every_thread() -> None:
    turns = FairTurns(per_tenant=2)
    with contextlib.ExitStack() as held:
        for _ in range(6):
            held.enter_context(turns.admitted("A"))
        assert turns.held() == {"A": 6}


def test_the_tenant_is_the_key_else_the_app_of_the_path() -> None:
    assert tenant_of("/v1/apps/shop/users/u/memories", {"x-api-key": "amk_x"}) == "key:amk_x"
    assert tenant_of("/v1/apps/shop/users/u/mcp", {"authorization": "Bearer amk_y"}) == "key:Bearer amk_y"
    assert tenant_of("/v1/apps/shop/users/u/memories", {}) == "app:shop"
    assert tenant_of("/agentcore/memories/mem-1/events", {}) == "app:mem-1"
    assert tenant_of("/v1/health", {}) == ""
