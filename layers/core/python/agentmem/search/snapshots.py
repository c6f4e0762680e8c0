"""Where partition snapshots are kept (agentmem/search/snapshot.py), and who writes them.

A process that does not hold a user's partition starts from its snapshot, one request, and catches up
from the change log; without a usable one it reads the partition whole and asks for a snapshot to be
written. Snapshots are written off the request path, by a :class:`Snapshotter`: in the cloud a function fed
by a queue (``SqsSnapshotRequests``), locally a background thread (:class:`LocalSnapshotter`). They are
derived data: an erasure deletes a user's after their items are gone (a snapshot written meanwhile checks,
once stored, that its partition still has its epoch, and deletes itself if not), and a snapshot the log no
longer reaches is ignored.

The object's key is a digest of the partition, so no user id appears in a key.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from agentmem.observability import logger

SNAPSHOT_LAG = 25
"""Log rows a load may catch up by from a snapshot before it asks for a newer one. The cost bench simulated
100, 50, 25 and 10 at the 1,000,000-user workload: 25 costs least all in (a catch-up reads about one read unit a
row; a snapshot written costs a PUT and the writer's run)."""


def snapshot_key(partition: str) -> str:
    return f"partitions/{hashlib.sha256(partition.encode('utf-8', 'surrogatepass')).hexdigest()}.snap"


class SnapshotStore(Protocol):
    def get(self, partition: str) -> bytes | None:
        """The partition's snapshot, or None."""
        ...

    def put(self, partition: str, data: bytes) -> None: ...

    def delete(self, partitions: Iterable[str]) -> None:
        """Remove the partitions' snapshots (those that exist)."""
        ...

    def exists(self, partition: str) -> bool: ...


class FileSnapshots:
    """Snapshots as files in a folder (the local server: beside its SQLite file)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def _path(self, partition: str) -> Path:
        return self._folder / snapshot_key(partition)

    def get(self, partition: str) -> bytes | None:
        try:
            return self._path(partition).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, partition: str, data: bytes) -> None:
        path = self._path(partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
        partial.write_bytes(data)
        partial.replace(path)  # readers see the old snapshot or the new one, never part of one

    def delete(self, partitions: Iterable[str]) -> None:
        for partition in partitions:
            self._path(partition).unlink(missing_ok=True)

    def exists(self, partition: str) -> bool:
        return self._path(partition).exists()


class S3Snapshots:
    """Snapshots as objects of an S3 bucket (encrypted with the bucket's key)."""

    def __init__(self, bucket: str, *, client: Any = None, region_name: str | None = None) -> None:
        self.bucket = bucket
        self._client = client
        self._region_name = region_name

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("s3", region_name=self._region_name)
        return self._client

    def get(self, partition: str) -> bytes | None:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=snapshot_key(partition))
        except self.client.exceptions.NoSuchKey:
            return None
        return bytes(response["Body"].read())

    def put(self, partition: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=snapshot_key(partition), Body=data)

    def delete(self, partitions: Iterable[str]) -> None:
        keys = [{"Key": snapshot_key(p)} for p in partitions]
        for start in range(0, len(keys), 1000):
            batch = {"Objects": keys[start : start + 1000], "Quiet": True}
            self.client.delete_objects(Bucket=self.bucket, Delete=batch)

    def exists(self, partition: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=snapshot_key(partition))
        except self.client.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True


class Snapshotter:
    """Writes a partition's snapshot from the index of it held here (started from the last snapshot and
    caught up, or read whole), when the stored one is missing or :data:`SNAPSHOT_LAG` writes behind."""

    def __init__(
        self,
        store: SnapshotStore,
        *,
        version_of: Callable[[str], tuple[str | None, int]],
        encoded: Callable[[str], tuple[bytes, str | None, int]],
    ) -> None:
        """``version_of(partition)``: the partition's (epoch, version) in its change log now;
        ``encoded(partition)``: its index here, brought to now, as a snapshot, with its (epoch, version)."""
        self._store = store
        self._version_of = version_of
        self._encoded = encoded

    def refresh(self, partition: str) -> str:
        """``written``, ``fresh`` (the stored one is close enough), ``empty`` (nothing to snapshot) or
        ``withdrawn`` (the partition was erased or refilled while it was written)."""
        from agentmem.search.snapshot import SnapshotError, place_of

        epoch, version = self._version_of(partition)
        if epoch is None:
            return "empty"
        stored = self._store.get(partition)
        if stored is not None:
            try:
                held_epoch, held_version, _ = place_of(stored)
            except SnapshotError:
                held_epoch, held_version = None, 0
            if held_epoch == epoch and 0 <= version - held_version < SNAPSHOT_LAG:
                return "fresh"
        data, data_epoch, _ = self._encoded(partition)
        self._store.put(partition, data)
        if self._version_of(partition)[0] != data_epoch:  # erased (or erased and written again) meanwhile
            self._store.delete([partition])
            return "withdrawn"
        return "written"


_STOP = "\0stop"
"""What tells the local writer to end (no partition key holds a NUL)."""


class LocalSnapshotter:
    """The local server's writer: the partitions asked for are written by one background thread, one at a
    time (a partition asked for again while queued is written once)."""

    def __init__(self, snapshotter: Snapshotter) -> None:
        self._snapshotter = snapshotter
        self._asked: queue.Queue[str] = queue.Queue()
        self._queued: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def ask(self, partition: str) -> None:
        with self._lock:
            if partition in self._queued:
                return
            self._queued.add(partition)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="snapshots", daemon=True)
                self._thread.start()
        self._asked.put(partition)

    def wait(self, timeout: float = 30.0) -> bool:
        """Until every partition asked for is written (tests); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._queued:
                    return True
            time.sleep(0.01)
        return False

    def close(self, timeout: float = 30.0) -> bool:
        """Stop the writer once what was asked before is written, and wait for it (at most ``timeout``): the
        table it reads must outlive it. True when it has stopped."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return True
        self._asked.put(_STOP)
        thread.join(timeout)
        return not thread.is_alive()

    def _work(self) -> None:
        while True:
            partition = self._asked.get()
            if partition is _STOP:
                return
            try:
                self._snapshotter.refresh(partition)
            except Exception as error:  # a snapshot is an optimisation: the next load reads whole and asks again
                logger.warning("snapshot not written", extra={"error": type(error).__name__})
            finally:
                with self._lock:
                    self._queued.discard(partition)


class SqsSnapshotRequests:
    """The cloud's asking: one message per partition to the snapshot function's queue."""

    def __init__(self, queue_url: str, *, client: Any = None, region_name: str | None = None) -> None:
        self._queue_url = queue_url
        self._client = client
        self._region_name = region_name

    def ask(self, partition: str) -> None:
        if self._client is None:
            import boto3

            self._client = boto3.client("sqs", region_name=self._region_name)
        try:
            self._client.send_message(QueueUrl=self._queue_url, MessageBody=partition)
        except Exception as error:  # the answer stands; the next cold load asks again
            logger.warning("snapshot request not sent", extra={"error": type(error).__name__})
