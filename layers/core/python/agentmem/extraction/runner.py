"""Who runs extraction's steps, and when: the same :class:`Steps` in the cloud and locally.

In the cloud, the table's stream carries every pending row written (a write into a session of an app that
learns) to the extraction function, which runs a step for its session; a step that has to look again later
(the idle trigger, a retry's backoff) asks a :class:`Waker` to bring the session back then: an SQS message
delayed until that moment (at most 15 minutes; an earlier wake just asks again).

Locally, the server's :class:`LocalRunner` is told of each pending row its process writes, keeps the
moments to look again in memory, and runs the steps in a background thread. Pending rows are in the table,
so after a restart it finds them again (:meth:`LocalRunner.resume`).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from agentmem.errors import MemoryServiceError
from agentmem.extraction import work
from agentmem.extraction.service import ExtractionService, Outcome
from agentmem.keys import scope_of_partition, unescape
from agentmem.observability import logger
from agentmem.stores.table import Table
from agentmem.tenancy import metering


class Waker(Protocol):
    def wake(self, partition: str, session: str, at_ms: int) -> None:
        """Bring the session back to a step at ``at_ms`` (epoch milliseconds), or somewhat earlier."""
        ...


class Steps:
    """Runs one step for a session, meters what it used to the app, and schedules the next look."""

    def __init__(self, service: ExtractionService, table: Table, waker: Waker) -> None:
        self._service = service
        self._table = table
        self._waker = waker

    def run(self, partition: str, session: str, *, force: bool = False) -> Outcome:
        scope = scope_of_partition(partition)
        with metering.counting() as meter:
            outcome = self._service.step(partition, session, force=force)
        if scope is not None:
            try:
                metering.record_meter(self._table, scope.app, meter)
            except MemoryServiceError:
                logger.warning("metering failed", app=scope.app)
        if outcome.at_ms is not None and outcome.state != "done":
            self._waker.wake(partition, session, outcome.at_ms)
        return outcome


NOTIFY_DELAY_MS = 1_000
"""How long the background thread lets a session's writes gather before it looks (one step for a burst of
writes, not one per write: the step shares the process with the requests)."""


class LocalRunner:
    """The local server's runner: a heap of (when, partition, session), worked by one background thread
    (or, with ``background=False``, by whoever calls :meth:`drain`: the tests). A session already due no
    later than asked is not queued again."""

    def __init__(
        self,
        steps: Callable[[Waker], Steps],
        table: Table,
        *,
        background: bool = True,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._steps = steps(self)
        self._table = table
        self._background = background
        self._clock_ms = clock_ms
        self._due: list[tuple[int, str, str]] = []
        self._earliest: dict[tuple[str, str], int] = {}
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def wake(self, partition: str, session: str, at_ms: int) -> None:
        with self._lock:
            if self._earliest.get((partition, session), at_ms + 1) <= at_ms:
                return
            self._earliest[(partition, session)] = at_ms
            heapq.heappush(self._due, (at_ms, partition, session))
            self._lock.notify()
        self._ensure_thread()

    def notify(self, partition: str, session: str) -> None:
        """A write into the session landed (its pending row with it): look at it shortly (at once when
        drained by hand)."""
        self.wake(partition, session, self._clock_ms() + (NOTIFY_DELAY_MS if self._background else 0))

    def resume(self) -> int:
        """Look again at every session with a pending row (after a restart); the number found."""
        scan = getattr(self._table, "scan_keys", None)
        if not callable(scan):
            return 0
        found = 0
        for pk, sk in scan(work.PENDING):
            if scope_of_partition(pk) is not None:
                self.wake(pk, unescape(sk[len(work.PENDING) :]), self._clock_ms())
                found += 1
        return found

    def drain(self, *, until_ms: int | None = None) -> list[Outcome]:
        """Run every step due by ``until_ms`` (now by default), including those they schedule in that time."""
        outcomes: list[Outcome] = []
        for partition, session in self._due_now(until_ms):
            outcomes.append(self._run(partition, session))
        return outcomes

    def pending(self) -> list[tuple[int, str, str]]:
        with self._lock:
            return sorted(self._due)

    def stop(self, timeout: float = 30.0) -> bool:
        """End the background thread after the step it runs (at most ``timeout``): the table it reads must
        outlive it. True when it has ended; nothing starts it again."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
            thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _due_now(self, until_ms: int | None) -> Iterator[tuple[str, str]]:
        while True:
            limit = self._clock_ms() if until_ms is None else until_ms
            with self._lock:
                if not self._due or self._due[0][0] > limit:
                    return
                _, partition, session = heapq.heappop(self._due)
                # the same session queued twice (two writes): one step does both
                self._due = [d for d in self._due if (d[1], d[2]) != (partition, session)]
                heapq.heapify(self._due)
                self._earliest.pop((partition, session), None)
            yield partition, session

    def _run(self, partition: str, session: str) -> Outcome:
        try:
            return self._steps.run(partition, session)
        except Exception as error:  # one session's failure must not stop the runner
            logger.exception("extraction step failed", extra={"error": type(error).__name__})
            self.wake(partition, session, self._clock_ms() + 30_000)
            return Outcome("retry", reason=type(error).__name__)

    def _ensure_thread(self) -> None:
        if not self._background or (self._thread is not None and self._thread.is_alive()):
            return
        with self._lock:
            if self._stopping or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(target=self._loop, name="extraction", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._stopping:
                    return
                wait = (self._due[0][0] - self._clock_ms()) / 1000 if self._due else 60.0
                if wait > 0:
                    self._lock.wait(timeout=min(wait, 60.0))
                    continue
            for partition, session in self._due_now(None):
                self._run(partition, session)
                if self._stopping:
                    return
