"""Which users have a request in flight, across the local server's worker processes: what lets a local
erasure begin its sweep as soon as no request that could still write for the user is running, instead of
always waiting out the drain (MEMORY_DELETION_DRAIN_SECONDS, the API's timeout).

A request holds a shared ``flock`` on its user's lock file from its first write check for that user (before it
reads the deletion mark) until it has been answered; an erasure, once its mark is written, waits until it can
take the lock exclusively (then no request that passed a check before the mark is still running, and every
later one sees the mark), at most for the drain. The files live in a folder named by the store, one of
:data:`BUCKETS` per user hash: two users of one bucket at most wait for each other's requests, within the
drain. The operating system releases a dead process's locks.

Only the local server installs this (:func:`track`); Lambda has no shared file system between its execution
environments, and the workflow there waits the whole drain.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import IO

from agentmem.keys import UserRef

BUCKETS = 4096
POLL_SECONDS = 0.02


class UserLocks:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def for_store(cls, identity: str) -> UserLocks:
        """The locks of one store (its SQLite path, or its DynamoDB endpoint and table) on this machine."""
        digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
        return cls(Path(tempfile.gettempdir()) / "agentmem-requests" / digest)

    def _path(self, user: UserRef) -> Path:
        digest = hashlib.sha256(f"{len(user.app)}:{user.app}:{user.user}".encode()).digest()
        return self.directory / f"{int.from_bytes(digest[:4], 'big') % BUCKETS:04d}.lock"

    def _open(self, user: UserRef) -> IO[bytes]:
        self.directory.mkdir(parents=True, exist_ok=True)
        return open(self._path(user), "ab")  # held for the request: closed by release

    def hold(self, user: UserRef) -> IO[bytes]:
        """A shared hold on the user's lock, until :meth:`release` (waits only while an erasure probes)."""
        handle = self._open(user)
        try:
            fcntl.flock(handle, fcntl.LOCK_SH)
        except BaseException:
            handle.close()
            raise
        return handle

    @staticmethod
    def release(handle: IO[bytes]) -> None:
        handle.close()  # closing the file releases its lock

    def wait_idle(self, user: UserRef, timeout: float) -> bool:
        """Wait until no request holds the user's lock, at most ``timeout`` seconds; True if none did then."""
        deadline = time.monotonic() + timeout
        with self._open(user) as handle:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        return False
                    time.sleep(POLL_SECONDS)
                    continue
                fcntl.flock(handle, fcntl.LOCK_UN)
                return True


_tracker: UserLocks | None = None


def track(locks: UserLocks | None) -> None:
    """Install the locks this process's requests hold (the local server's workers); None: no tracking."""
    global _tracker
    _tracker = locks


def tracker() -> UserLocks | None:
    return _tracker


def store_identity(store: str, sqlite_path: str, table_name: str, endpoint: str | None) -> str:
    if store == "sqlite":
        return "sqlite:" + os.path.abspath(sqlite_path)
    return f"dynamodb:{endpoint or ''}:{table_name}"
