"""Who runs the deletion workflow: Step Functions in the cloud, the ASL interpreter locally.

Both run the one definition ``delete_user.asl.json`` (shipped inside this package; CDK loads it
through ``infra/workflows/delete_user.asl.json``), whose Tasks all call the deletion-steps Lambda.
"""

from __future__ import annotations

import fcntl
import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from agentmem.deletion.asl import ExecutionFailed, Interpreter
from agentmem.errors import Unavailable
from agentmem.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient

    from agentmem.deletion.service import DeletionService, DeletionStart
    from agentmem.keys import UserRef

WORKFLOW_FILE = "delete_user.asl.json"
FUNCTION_PLACEHOLDER = "${DeletionStepsFunctionArn}"
LOCAL_FUNCTION = "local:deletion-steps"


def load_definition(path: str | Path | None = None) -> dict[str, Any]:
    """The workflow definition: the packaged file, or another one (trying a change locally)."""
    if path is not None:
        text = Path(path).read_text(encoding="utf-8")
    else:
        text = resources.files("agentmem.deletion").joinpath(WORKFLOW_FILE).read_text(encoding="utf-8")
    return json.loads(text.replace(FUNCTION_PLACEHOLDER, LOCAL_FUNCTION))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Attempt:
    """One run of an erasure's workflow (see :func:`execution_input`)."""

    number: int = 0
    redrive: int = 0
    delay_seconds: int = 0


def execution_input(deletion_id: str, app: str, attempt: Attempt | None = None) -> dict[str, Any]:
    """What an execution is given: the erasure's app and id, never the user (its history is kept 90 days; the
    steps read the user from the deletion request), and which attempt it is: ``attempt`` (0 for the first,
    counted across every attempt of the erasure), ``redrive`` (how many automatic re-drives led to it: an
    operator's retry starts again from 0) and ``delay_seconds`` (the workflow's first state waits that long)."""
    attempt = attempt or Attempt()
    return {
        "deletion_id": deletion_id,
        "app": app,
        "attempt": attempt.number,
        "redrive": attempt.redrive,
        "delay_seconds": attempt.delay_seconds,
    }


def execution_name(deletion_id: str, attempt: int) -> str:
    """The first attempt is named after the erasure; later ones ``<deletion id>-<attempt>`` (Step Functions keeps a
    name for 90 days: each attempt has its own, and starting one twice starts it once)."""
    return deletion_id if attempt == 0 else f"{deletion_id}-{attempt}"


class DeletionRunner(Protocol):
    name: str

    def start(self, deletion_id: str, app: str, attempt: Attempt | None = None) -> None:
        """Start the workflow (its first attempt, or ``attempt``); raise Unavailable when it cannot be started."""
        ...

    def is_active(self, deletion_id: str) -> bool:
        """Whether the run of ``deletion_id`` is still going (False lets a new request supersede it)."""
        ...


def start_erasure(deletion: DeletionService, runner: DeletionRunner, user: UserRef) -> DeletionStart:
    """Begin the erasure of ``user`` (or find the one running) and start its workflow; Unavailable (and the
    request abandoned) when the workflow cannot be started."""
    started = deletion.begin(user, is_active=runner.is_active)
    if started.started:
        try:
            runner.start(started.deletion_id, user.app)
        except Exception as exc:
            logger.warning("deletion workflow not started", deletion_id=started.deletion_id, runner=runner.name)
            deletion.abandon(user, started.deletion_id, "WorkflowNotStarted", type(exc).__name__)
            raise Unavailable("the deletion workflow could not be started; retry the request") from exc
    return started


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "agentmem-deletions"


class _RunLock:
    """An exclusive lock file held for as long as a run goes on: the local server's worker processes
    (and any other process on the machine) see another's run as active, and a run whose process died
    is not, since the operating system releases the lock with the process."""

    def __init__(self, directory: Path, deletion_id: str) -> None:
        self.path = directory / f"{deletion_id}.lock"

    def acquire(self) -> IO[str]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("w")
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return handle

    def release(self, handle: IO[str]) -> None:
        self.path.unlink(missing_ok=True)
        handle.close()

    def held(self) -> bool:
        try:
            handle = self.path.open("r")
        except FileNotFoundError:
            return False
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False


class LocalRunner:
    """Interprets the workflow in this process, in a background thread (or inline). A run holds a lock
    file in ``lock_dir`` so that every process sharing the store knows it is going on."""

    name = "local"

    def __init__(
        self,
        run_step: Callable[[dict[str, Any]], Any],
        *,
        definition_path: str | Path | None = None,
        background: bool = True,
        sleep: Callable[[float], None] | None = None,
        lock_dir: Path | None = None,
    ) -> None:
        self._run_step = run_step
        self._definition = load_definition(definition_path)
        self._background = background
        self._sleep = sleep
        self._lock_dir = lock_dir or default_lock_dir()
        self._active: dict[str, IO[str]] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, deletion_id: str, app: str, attempt: Attempt | None = None) -> None:
        handle = _RunLock(self._lock_dir, deletion_id).acquire()
        with self._lock:
            self._active[deletion_id] = handle
        payload = execution_input(deletion_id, app, attempt)
        if not self._background:
            self._execute(deletion_id, payload)
            return
        thread = threading.Thread(target=self._execute, args=(deletion_id, payload), name=f"deletion-{deletion_id}")
        thread.daemon = True
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def wait(self, timeout: float = 60.0) -> bool:
        """Wait for the deletions running in the background; True when none is left (a clean shutdown)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads)

    def is_active(self, deletion_id: str) -> bool:
        with self._lock:
            if deletion_id in self._active:
                return True
        return _RunLock(self._lock_dir, deletion_id).held()

    def _execute(self, deletion_id: str, payload: dict[str, Any]) -> None:
        kwargs = {} if self._sleep is None else {"sleep": self._sleep}
        interpreter = Interpreter(self._definition, lambda _resource, event: self._run_step(event), **kwargs)
        try:
            interpreter.run(payload, execution_name=deletion_id)
            logger.info("deletion finished", deletion_id=deletion_id)
        except ExecutionFailed as failure:
            logger.warning("deletion failed", deletion_id=deletion_id, error=failure.error)
        except Exception:
            logger.exception("deletion runner crashed", deletion_id=deletion_id)
        finally:
            with self._lock:
                handle = self._active.pop(deletion_id)
            _RunLock(self._lock_dir, deletion_id).release(handle)


class StepFunctionsRunner:
    """Starts a Standard execution named after the deletion id (a retried start cannot run twice)."""

    name = "stepfunctions"

    def __init__(self, state_machine_arn: str, *, region_name: str | None = None, client: Any = None) -> None:
        self._arn = state_machine_arn
        self._region = region_name
        if client is not None:
            self.__dict__["_client"] = client

    @cached_property
    def _client(self) -> SFNClient:
        import boto3

        return boto3.client("stepfunctions", region_name=self._region)

    @property
    def client(self) -> SFNClient:
        return self._client

    @property
    def state_machine_arn(self) -> str:
        return self._arn

    def execution_arn(self, deletion_id: str) -> str:
        return self._arn.replace(":stateMachine:", ":execution:", 1) + ":" + deletion_id

    def start(self, deletion_id: str, app: str, attempt: Attempt | None = None) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=execution_name(deletion_id, attempt.number if attempt else 0),
                input=json.dumps(execution_input(deletion_id, app, attempt), ensure_ascii=False),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return
            raise Unavailable("the deletion workflow could not be started") from exc
        except BotoCoreError as exc:
            raise Unavailable("the deletion workflow could not be started") from exc

    def is_active(self, deletion_id: str) -> bool:
        """Whether an attempt of the erasure runs: its first execution, or a later attempt (a re-drive's,
        ``<deletion id>-<n>``) among the running ones. True when Step Functions cannot say."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            status = self._client.describe_execution(executionArn=self.execution_arn(deletion_id))["status"]
            if status in ("RUNNING", "PENDING_REDRIVE"):
                return True
            pages = self._client.get_paginator("list_executions").paginate(
                stateMachineArn=self._arn, statusFilter="RUNNING"
            )
            return any(e["name"].startswith(f"{deletion_id}-") for page in pages for e in page["executions"])
        except (ClientError, BotoCoreError):
            return True

    def executions(self) -> Iterator[dict[str, Any]]:
        """Every execution of the state machine, described (status, input; ``stopDate`` as ISO text or None)."""
        for page in self._client.get_paginator("list_executions").paginate(stateMachineArn=self._arn):
            for listed in page["executions"]:
                described: dict[str, Any] = dict(self._client.describe_execution(executionArn=listed["executionArn"]))
                stopped = described.get("stopDate")
                described["stopDate"] = stopped.isoformat() if stopped is not None else None
                yield described
