"""What extraction last learnt of its model, kept in the table so that every process sees it (the API's
functions, the extraction function, each worker of the local server).

A model call that fails for the model's sake (it cannot be reached, it timed out, it refused the request)
leaves a row; the next call the model answers (in or out of schema: it was reached) removes it:

- in the app's partition ``XF#<app>`` (beside its parked jobs), ``M#model``: the status, the cause (the
  adapter's words: the endpoint and the error, never a prompt or an answer) and when. The app's extraction
  state (``GET /v1/apps/{app}/extraction``) shows it while it is there;
- for the deployment, ``XM#model`` / ``state``: the status and when, without the cause (an endpoint's error
  could quote a request of another app). ``/v1/health`` counts it: the model is a dependency of the
  deployment, and what is said is kept, but nothing is learnt while it fails.

What is known is the last call's outcome: a model that came back is seen as such at the next call (a write
into a session, a parked job started again), not before; the message says when the failure was seen.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agentmem.clock import format_timestamp
from agentmem.errors import MemoryServiceError
from agentmem.extraction.work import parked_partition
from agentmem.llm.port import ModelRefused, ModelTimedOut, ModelUnavailable
from agentmem.settings import Env
from agentmem.stores.table import Table

Status = Literal["model_unreachable", "model_timed_out", "model_refused"]
APP_SK = "M#model"
DEPLOYMENT_KEY = ("XM#model", "state")
TIMEOUT_HINT = f"{Env.MODEL_TIMEOUT_SECONDS} raises the limit"
"""What a timeout's message adds: a slow model is not unreachable, and this setting lets it take longer."""


@dataclass(frozen=True, slots=True)
class ModelTrouble:
    """The last model call of an app failed: how, why (the adapter's words) and when (RFC 3339)."""

    status: Status
    cause: str
    at: str

    def message(self) -> str:
        """The app's extraction state's words for it."""
        if self.status == "model_timed_out":
            what = f"the extraction model timed out: it is reached but answers too slowly ({TIMEOUT_HINT})"
        elif self.status == "model_refused":
            what = "the extraction model refused the request"
        else:
            what = "the extraction model cannot be reached"
        return (
            f"{what}: {self.cause} (last call at {self.at}). Writes are kept; batches retry, then are parked "
            "(GET /v1/apps/{app}/extraction/jobs lists them)"
        )


def status_of(error: MemoryServiceError) -> Status | None:
    """The status a failed call leaves, None for a failure that is not the model's (an answer out of schema)."""
    if isinstance(error, ModelTimedOut):
        return "model_timed_out"
    if isinstance(error, ModelUnavailable):
        return "model_unreachable"
    if isinstance(error, ModelRefused):
        return "model_refused"
    return None


def note(table: Table, app: str, *, failed: MemoryServiceError | None, answered: bool, now: datetime) -> None:
    """After an app's model calls: keep the failure (``failed``: the last one that was the model's), or, when
    the model answered and nothing failed, remove what a failure left."""
    status = status_of(failed) if failed is not None else None
    at = format_timestamp(now)
    if status is not None and failed is not None:
        trouble = {"status": status, "cause": failed.message[:300], "at": at}
        table.batch_write(
            puts=[
                {"pk": parked_partition(app), "sk": APP_SK, **trouble},
                {"pk": DEPLOYMENT_KEY[0], "sk": DEPLOYMENT_KEY[1], "status": status, "at": at},
            ]
        )
    elif answered:
        keys = [(parked_partition(app), APP_SK), DEPLOYMENT_KEY]
        present = [(row["pk"], row["sk"]) for row in table.batch_get(keys)]
        if present:
            with contextlib.suppress(MemoryServiceError):  # best effort: the next answer removes it again
                table.batch_write(deletes=present)


def read(table: Table, app: str) -> ModelTrouble | None:
    """The app's last model failure, while no later call was answered."""
    row = table.get(parked_partition(app), APP_SK)
    if row is None:
        return None
    return ModelTrouble(row["status"], str(row.get("cause") or ""), str(row.get("at") or ""))


def health(table: Table) -> str:
    """``/v1/health``'s check of the model: ``failing`` while the deployment's last model call failed."""
    return "failing" if table.get(*DEPLOYMENT_KEY) is not None else "ok"
