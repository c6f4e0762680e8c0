"""Start and stop the real OpenSearch k-NN node of tools/opensearch-node (the tests' fixture and the bench).

The node is built by the Makefile (`make opensearch-node`, which says that Java 17 and Maven are needed
when they are missing); a missing Java is a failure, never a skip. Each node gets free HTTP and
transport ports and a temporary home, and stops when its standard input closes, so a test process that
dies never leaves a JVM behind.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = ROOT / "tools" / "opensearch-node"
TARGET = NODE_DIR / "target"
CLASSPATH = ":".join(str(TARGET / part) for part in ("classes", "lib/*", "knn/*"))
JVM_OPTIONS = ("-Xms512m", "-Xmx1g")
READY = "OpenSearch ready"
TEST_DIMENSION = 64
"""The vectors of the integration tests on the node (the hashing embedder's, at this size)."""
NEEDS = "the OpenSearch tests need Java 17 and Maven (tools/opensearch-node is built with Maven)"


class NodeError(RuntimeError):
    pass


class OpenSearchNode:
    """One running node: ``url`` is its HTTP endpoint; ``started_in`` how long it took to turn green (s)."""

    def __init__(self, process: subprocess.Popen[str], home: Path, url: str, started_in: float) -> None:
        self.process = process
        self.home = home
        self.url = url
        self.started_in = started_in

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # SIGTERM: the node's shutdown hook closes it
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdin is not None:
            self.process.stdin.close()
        shutil.rmtree(self.home, ignore_errors=True)


def on_node(endpoint: str, dimension: int, index: str | None = None) -> dict[str, Any]:
    """The settings of a deployment embedding with the hashing embedder (``dimension``) into ``index`` of
    the node at ``endpoint`` (a fresh name if None), on the Lucene engine: pass them to ``Settings``."""
    return {
        "embedder": "hashing",
        "embedding_dimension": dimension,
        "vector_index": "opensearch",
        "opensearch_endpoint": endpoint,
        "opensearch_index": index or f"vectors-{uuid.uuid4().hex[:12]}",
        "opensearch_engine": "lucene",
    }


def build() -> None:
    """Build the launcher when it is missing or older than its sources (the Makefile's stamp target)."""
    if shutil.which("make") is None:
        raise NodeError(f"{NEEDS}; `make` is missing too")
    result = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "opensearch-node"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise NodeError(f"{NEEDS}: `make opensearch-node` failed:\n{result.stderr.strip()}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(*, timeout: float = 120.0) -> OpenSearchNode:
    """Start a node on free ports and return once its cluster is green."""
    build()
    java = shutil.which("java")
    if java is None:
        raise NodeError(f"{NEEDS}: `java` is not on PATH")
    last_error = ""
    for _attempt in range(3):  # a free port can be taken between the probe and the bind: try again
        http_port, transport_port = _free_port(), _free_port()
        home = Path(tempfile.mkdtemp(prefix="opensearch-node-"))
        started = time.monotonic()
        process = subprocess.Popen(
            [java, *JVM_OPTIONS, "-cp", CLASSPATH, "OpenSearchNode", "--exit-with-stdin"],
            env={
                **os.environ,
                "OPENSEARCH_PORT": str(http_port),
                "OPENSEARCH_TRANSPORT_PORT": str(transport_port),
                "OPENSEARCH_HOME": str(home),
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        errors: list[str] = []
        drain = threading.Thread(target=_collect, args=(process.stderr, errors), daemon=True)
        drain.start()
        line = _ready_line(process, timeout)
        if line is not None:
            return OpenSearchNode(process, home, f"http://127.0.0.1:{http_port}", time.monotonic() - started)
        node = OpenSearchNode(process, home, "", 0.0)
        node.stop()
        drain.join(5)
        last_error = "".join(errors[-20:])
    raise NodeError(f"the OpenSearch node did not turn green:\n{last_error}")


def _collect(stream: IO[str] | None, lines: list[str]) -> None:
    for line in stream or []:
        lines.append(line)


def _ready_line(process: subprocess.Popen[str], timeout: float) -> str | None:
    found: list[str] = []

    def read() -> None:
        for line in process.stdout or []:
            if line.startswith(READY):
                found.append(line)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    return found[0] if found else None


@contextmanager
def running() -> Iterator[OpenSearchNode]:
    node = start()
    try:
        yield node
    finally:
        node.stop()
