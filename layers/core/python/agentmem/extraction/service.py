"""One session's extraction, step by step (:meth:`ExtractionService.step`), for whoever runs it: the stream
function in the cloud, the local server's runner, a ``StartMemoryExtractionJob``.

A step reads the session's messages after its cursor (agentmem/extraction/work.py). Nothing new: the
pending row goes. Fewer than the app's message trigger and not idle for its idle trigger: it answers when to
look again. Otherwise it leases the session (one process at a time), asks the model once per strategy for
candidate records from a batch of at most :data:`BATCH_MESSAGES` messages, weighs each candidate against the
most similar current records of its namespace (:mod:`~agentmem.extraction.consolidation`, with a second
model call for what is not settled without one), and commits the batch's records in one transaction with the
cursor's advance and checks that its first and last messages still exist: a batch is written once, and never
after its messages (or their user) were erased. The facts learnt then go to the knowledge graph (remembered
with the record they came from; a fact that replaces another supersedes it, so the graph's history keeps both).

A model that fails (unreachable, or answering out of schema twice) makes the batch wait and retry with
backoff; after :data:`MAX_ATTEMPTS` the batch is parked, one job per failing strategy, for
``ListMemoryExtractionJobs`` to show and ``StartMemoryExtractionJob`` to run again, and the session moves on.

This module holds the step: its lease, its batches' commits and retries, the parked jobs and the graph writes.
What a batch asks the model and learns from its answers is agentmem/extraction/model_calls.py's, what a step
reads of a session agentmem/extraction/session_messages.py's, and the usage, budget and model state the calls
are counted in agentmem/extraction/accounting.py's.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol

from agentmem import users
from agentmem.clock import format_timestamp, new_id, utc_now
from agentmem.errors import ConditionFailed, InvalidInput, MemoryServiceError, NotFound, UserDeletionInProgress
from agentmem.extraction import prompts, work
from agentmem.extraction.accounting import Accounting
from agentmem.extraction.config import AppMemories, AppMemory
from agentmem.extraction.model_calls import ModelCalls
from agentmem.extraction.session_messages import SessionMessages
from agentmem.extraction.sinks import RecordSink
from agentmem.keys import Scope, UserRef, scope_of_partition
from agentmem.llm.port import ChatModel
from agentmem.memory import records as memory_records
from agentmem.observability import logger
from agentmem.stores.table import Check, Condition, Item, Put, Table, WriteOp, query_all
from agentmem.tenancy.admission import EXTRACTION_TIER, ModelShare

BATCH_MESSAGES = 30
"""Messages one model call reads at most (a LoCoMo session, about 21 turns, is one batch)."""
MAX_ATTEMPTS = 3
"""Failed attempts of a batch before it is parked."""
RETRY_BASE_MS = 10_000
"""The wait after the first failed attempt; each further one waits four times longer."""
LEASE_MS = 10 * 60_000
"""How long a process holds a session it works on (longer than any step takes)."""
BUDGET_RECHECK_MS = 3_600_000
"""How long extraction waits before looking again at an app over its token budget."""
BATCHES_PER_STEP = 3
"""Batches one step extracts at most; a session with more pending comes back at once for the rest (a step
stays well within the extraction function's timeout)."""
NO_MODEL = "no extraction model is configured (MEMORY_MODEL): strategies are kept, nothing is extracted"

State = Literal["done", "waiting", "retry", "parked", "paused", "busy"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a step did, and when the session should be looked at again (``at_ms``, epoch milliseconds)."""

    state: State
    at_ms: int | None = None
    reason: str = ""
    records: int = 0


class Graph(Protocol):
    """What extraction asks of the knowledge graph (GraphMemoryService's public API)."""

    def remember(
        self,
        scope: Scope,
        name: str,
        facts: Sequence[str],
        entity_type: str | None = None,
        *,
        source: str | None = None,
    ) -> tuple[dict[str, Any], int]: ...

    def current_observation_ids(self, scope: Scope, name: str, contents: Sequence[str]) -> list[str]: ...

    def supersede_observation(
        self, scope: Scope, obs_id: str, content: str, *, source: str | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]: ...


class ExtractionService:
    def __init__(
        self,
        table: Table,
        memories: AppMemories,
        records: RecordSink,
        graph: Graph,
        model: ChatModel | None,
        *,
        clock: Callable[[], datetime] = utc_now,
        minute_share: ModelShare | None = None,
    ) -> None:
        """``minute_share``: each app's share of the model's tokens a minute (MEMORY_EXTRACTION_TOKENS_PER_MINUTE);
        an app past it waits for the next minute."""
        self._minute_share = minute_share
        self._table = users.guarded(table)
        self._raw = table
        self._memories = memories
        self._records = records
        self._graph = graph
        self._model = model
        self._clock = clock
        self._model_calls = ModelCalls(model, records, clock)
        self._accounting = Accounting(table, minute_share, clock)
        self._sessions = SessionMessages(table, clock)

    @property
    def model(self) -> ChatModel | None:
        return self._model

    # -- the write path's note -----------------------------------------------------------------------

    def pending_items(self, scope: Scope, session: str) -> list[Item]:
        """The item a write into ``session`` adds to its batch when the app learns: the session's pending row."""
        if self._model is None:
            return []
        memory = self._memories.get(scope.app)
        if memory is None or not memory.strategies or memory.deleting:
            return []
        return [work.pending_item(scope, session, self._now_ms())]

    def request(self, scope: Scope, session: str) -> bool:
        """Extraction on demand: the session's messages not yet learnt from are extracted at its next step,
        whatever the triggers say (its pending row, written with ``force``). False when the app learns nothing."""
        notes = self.pending_items(scope, session)
        if not notes:
            return False
        self._table.batch_write(puts=[{**note, "force": True} for note in notes])
        return True

    # -- one step ------------------------------------------------------------------------------------

    def step(self, partition: str, session: str, *, force: bool = False) -> Outcome:
        """Look at one session's pending work and do what is due (see the module's docstring)."""
        scope = scope_of_partition(partition)
        if scope is None:
            return Outcome("done", reason="not a scope partition")
        try:
            return self._step(scope, session, force=force)
        except UserDeletionInProgress:
            return Outcome("done", reason="the user is being erased")

    def _step(self, scope: Scope, session: str, *, force: bool) -> Outcome:
        pending = self._raw.get(scope.partition, work.pending_sk(session))
        force = force or bool(pending and pending.get("force"))
        memory = self._memories.get(scope.app)
        if memory is None or not memory.strategies or memory.deleting:
            self._clear_pending(scope, session, pending)
            return Outcome("done", reason="the app learns nothing")
        cursor, raw = work.read_cursor(self._raw, scope, session)
        now = self._now_ms()
        if cursor.lease and cursor.lease_until_ms > now:
            return Outcome("busy", at_ms=cursor.lease_until_ms, reason="another process works on this session")
        if cursor.graph:
            cursor, raw = self._apply_graph(scope, session, cursor, raw)
        retried = self._retries(scope, memory, session)
        if retried is not None:
            return retried
        head = self._sessions.generation(scope, session)
        if head != cursor.generation:
            cursor = replace(cursor, last="", written=0, generation=head)
        messages = self._sessions.messages_after(scope, session, cursor, head)
        if not messages:
            self._clear_pending(scope, session, pending)
            return Outcome("done")
        if cursor.retry_ms > now and not force:
            return Outcome("retry", at_ms=cursor.retry_ms, reason=cursor.failure)
        touched = int(pending.get("touched_ms") or 0) if pending else 0
        idle_at = touched + memory.trigger_idle_seconds * 1000
        if not force and sum(m.said for m in messages) < memory.trigger_messages and now < idle_at:
            return Outcome("waiting", at_ms=idle_at)
        if self._model is None:
            return Outcome("paused", reason=NO_MODEL)
        held_back = self._held_back(memory)
        if held_back is not None:
            return held_back
        leased, raw = self._lease(scope, session, cursor, raw)
        if leased is None:
            return Outcome("busy", at_ms=now + 1000, reason="another process took this session")
        written = 0
        parked: list[str] = []
        for _ in range(BATCHES_PER_STEP):
            if not messages:
                break
            batch, messages = messages[:BATCH_MESSAGES], messages[BATCH_MESSAGES:]
            outcome, leased, raw = self._batch(scope, session, memory, leased, raw, batch)
            written += outcome.records
            if outcome.state == "parked":  # the session moves on; the parked job waits to be started again
                parked.append(outcome.reason)
            elif outcome.state != "done":
                return replace(outcome, records=written)
        self._release(scope, session, leased, raw)
        if messages:  # more than a step takes: the rest at once, in the next step
            return Outcome("waiting", at_ms=self._now_ms(), records=written, reason="more messages are pending")
        self._clear_pending(scope, session, pending)
        return Outcome("parked" if parked else "done", records=written, reason="; ".join(parked))

    # -- a batch ---------------------------------------------------------------------------------------

    def _batch(
        self,
        scope: Scope,
        session: str,
        memory: AppMemory,
        cursor: work.Cursor,
        raw: Item | None,
        batch: list[prompts.Message],
    ) -> tuple[Outcome, work.Cursor, Item | None]:
        saved: Item | None
        earlier = self._sessions.earlier(scope, session, batch[0].entry_id)
        result = self._model_calls.extract(scope, session, memory, memory.strategies, batch, earlier)
        self._accounting.meter(scope.app, result.usage)
        self._accounting.note_model(scope.app, result)
        if result.failed and cursor.attempts + 1 < MAX_ATTEMPTS:
            attempts = cursor.attempts + 1
            failure = "; ".join(sorted(set(result.failed.values())))
            delay = RETRY_BASE_MS * 4 ** (attempts - 1)
            retry = replace(cursor, attempts=attempts, retry_ms=self._now_ms() + delay, failure=failure, lease="")
            saved = self._save_cursor(scope, session, retry, raw)
            logger.warning(
                "extraction failed; retrying", app=scope.app, attempts=attempts, delay_ms=delay, cause=failure
            )
            return Outcome("retry", at_ms=retry.retry_ms, reason=failure), retry, saved
        parked = [self._parked_job(scope, session, sid, why, batch) for sid, why in result.failed.items()]
        advanced = replace(
            cursor,
            written=batch[-1].written,
            last=batch[-1].entry_id,
            attempts=0,
            retry_ms=0,
            failure="",
            graph=result.graph,
        )
        checks = [
            Check(scope.partition, memory_records.entry_sk(m.entry_id), Condition(exists=True))
            for m in dict.fromkeys([batch[0], batch[-1]])
        ]
        extra: list[WriteOp] = [Put(advanced.item(scope, session), _as_read(raw)), *checks]
        extra += [Put(item) for job in parked for item in job]
        try:
            ids = self._records.commit(scope, result.records, extra)
        except ConditionFailed:  # its messages were deleted, the session written again, or the user erased
            current, current_raw = work.read_cursor(self._raw, scope, session)
            if current_raw is not None and current.lease == cursor.lease:
                self._release(scope, session, current, current_raw)
            busy = Outcome("busy", at_ms=self._now_ms() + 1000, reason="the session changed meanwhile")
            return busy, current, current_raw
        except UserDeletionInProgress:
            raise
        except MemoryServiceError as error:  # what was learnt cannot be kept (the user's entries are full, a
            # record the store refuses): the batch is parked with the reason and the session moves on; the error
            # never escapes the step, which would hold the lease and ask the model again on every retry
            why = f"{error.code}: {error.message}"
            refused = [self._parked_job(scope, session, strategy.id, why, batch) for strategy in memory.strategies]
            moved_on = replace(advanced, graph=[])
            ops: list[WriteOp] = [Put(moved_on.item(scope, session), _as_read(raw))]
            ops += [Put(item) for job in refused for item in job]
            try:
                self._table.transact_write(ops)
            except ConditionFailed:
                busy = Outcome("busy", at_ms=self._now_ms() + 1000, reason="the session changed meanwhile")
                return busy, *work.read_cursor(self._raw, scope, session)
            logger.warning("extraction parked: its records were refused", app=scope.app, error=error.code)
            saved = self._raw.get(scope.partition, work.cursor_sk(session))
            return Outcome("parked", records=0, reason=why), moved_on, saved
        advanced.graph = [{**op, "source": ids[op["record"]]} for op in result.graph]
        saved = self._raw.get(scope.partition, work.cursor_sk(session))
        advanced, saved = self._apply_graph(scope, session, advanced, saved)
        if parked:
            cause = "; ".join(sorted(set(result.failed.values())))
            logger.warning("extraction parked", app=scope.app, strategies=len(parked), cause=cause)
            return Outcome("parked", records=len(ids), reason="; ".join(result.failed.values())), advanced, saved
        return Outcome("done", records=len(ids)), advanced, saved

    # -- parked jobs -------------------------------------------------------------------------------------

    def _parked_job(
        self, scope: Scope, session: str, strategy_id: str, failure: str, batch: Sequence[prompts.Message]
    ) -> list[Item]:
        job = {
            "project": scope.project_id,
            "session": session,
            "strategy": strategy_id,
            "messages": [m.entry_id for m in batch],
            "failure": failure,
            "parked_at": format_timestamp(self._clock()),
        }
        return work.parked_items(scope.user_ref, new_id(), job)

    def parked(self, app: str, job_id: str) -> tuple[UserRef, dict[str, Any]]:
        row = self._raw.get(work.parked_partition(app), work.PARKED_BY_ID + job_id)
        if row is None:
            raise NotFound(f"no failed extraction job {job_id!r} in this memory", code="job_not_found")
        return UserRef(app, str(row["user"])), json.loads(row["state"])

    def list_parked(self, app: str, *, after: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """A page of the app's parked jobs (id, user and what the job holds), in id order."""
        page = self._raw.query(work.parked_partition(app), work.PARKED_BY_ID, limit=limit, start_after=after)
        jobs = [
            {"job_id": row["sk"][len(work.PARKED_BY_ID) :], "user": row["user"], **json.loads(row["state"])}
            for row in page.items
        ]
        return jobs, page.next_start

    def retry_parked(self, app: str, job_id: str) -> tuple[Scope, str]:
        """Ask for a parked job to run again: it moves back into its session's pending work. Return the
        session's scope and id (for the runner to be told)."""
        user, job = self.parked(app, job_id)
        scope = user.scope(job.get("project"))
        self._table.transact_write(
            [
                Put({"pk": scope.partition, "sk": work.RETRY + job_id, "state": json.dumps(job)}),
                Put(work.pending_item(scope, str(job["session"]), self._now_ms())),
            ]
        )
        self._raw.batch_write(deletes=work.parked_keys(user, job_id))
        return scope, str(job["session"])

    def _retries(self, scope: Scope, memory: AppMemory, session: str) -> Outcome | None:
        """Run the parked jobs asked to run again in this scope (a job's messages, its one strategy)."""
        rows = query_all(self._raw, scope.partition, work.RETRY)
        held_back = self._held_back(memory) if rows and self._model is not None else None
        if held_back is not None:  # the jobs wait with the session: no path asks the model past the budget
            return held_back
        for row in rows:
            job = json.loads(row["state"])
            strategy = memory.strategy(str(job.get("strategy")))
            found = self._raw.batch_get([(scope.partition, memory_records.entry_sk(i)) for i in job["messages"]])
            batch = prompts.messages_of(sorted(found, key=lambda i: i["id"]), self._clock())
            if strategy is None or not batch or self._model is None:
                self._raw.delete(scope.partition, row["sk"])
                continue
            result = self._model_calls.extract(scope, str(job["session"]), memory, [strategy], batch, ())
            self._accounting.meter(scope.app, result.usage)
            self._accounting.note_model(scope.app, result)
            extra: list[WriteOp] = [Check(scope.partition, row["sk"], Condition(exists=True))]
            if result.failed:
                failed = {**job, "failure": result.failed[strategy.id], "parked_at": format_timestamp(self._clock())}
                extra += [Put(item) for item in work.parked_items(scope.user_ref, row["sk"][len(work.RETRY) :], failed)]
            try:
                ids = self._records.commit(scope, result.records if not result.failed else [], extra)
            except ConditionFailed:
                continue
            except UserDeletionInProgress:
                raise
            except MemoryServiceError as error:  # its records are refused (the user's entries are full): parked again
                why = f"{error.code}: {error.message}"
                again = {**job, "failure": why, "parked_at": format_timestamp(self._clock())}
                parked = work.parked_items(scope.user_ref, row["sk"][len(work.RETRY) :], again)
                self._table.transact_write(
                    [Check(scope.partition, row["sk"], Condition(exists=True)), *map(Put, parked)]
                )
                self._raw.delete(scope.partition, row["sk"])
                continue
            self._raw.delete(scope.partition, row["sk"])
            for op in result.graph if not result.failed else []:
                self._graph_write(scope, {**op, "source": ids[op["record"]]})
        return None

    # -- the cursor, the lease, the pending row ----------------------------------------------------------

    def _lease(
        self, scope: Scope, session: str, cursor: work.Cursor, raw: Item | None
    ) -> tuple[work.Cursor | None, Item | None]:
        leased = replace(cursor, lease=secrets.token_hex(8), lease_until_ms=self._now_ms() + LEASE_MS)
        try:
            return leased, self._save_cursor(scope, session, leased, raw)
        except ConditionFailed:
            return None, raw

    def _release(self, scope: Scope, session: str, cursor: work.Cursor, raw: Item | None) -> None:
        with contextlib.suppress(ConditionFailed):  # the cursor moved on: the lease is no longer ours
            self._save_cursor(scope, session, replace(cursor, lease="", lease_until_ms=0), raw)

    def _save_cursor(self, scope: Scope, session: str, cursor: work.Cursor, raw: Item | None) -> Item:
        item = cursor.item(scope, session)
        self._table.put(item, _as_read(raw))
        return item

    def _apply_graph(
        self, scope: Scope, session: str, cursor: work.Cursor, raw: Item | None
    ) -> tuple[work.Cursor, Item | None]:
        """Apply the graph writes a committed batch left in the cursor, then clear them (they repeat safely)."""
        for op in cursor.graph:
            self._graph_write(scope, op)
        done = replace(cursor, graph=[])
        try:
            return done, self._save_cursor(scope, session, done, raw)
        except ConditionFailed:
            current, current_raw = work.read_cursor(self._raw, scope, session)
            return current, current_raw

    def _graph_write(self, scope: Scope, op: dict[str, Any]) -> None:
        """One learnt fact into the graph of the scope its session was in (a project's stays in the project and
        goes with it, as its records do), with the record it came from."""
        graph_scope = scope
        try:
            old = op.get("replaces")
            if isinstance(old, str):
                ids = self._graph.current_observation_ids(graph_scope, op["entity"], [old])
                if ids:
                    self._graph.supersede_observation(graph_scope, ids[0], op["fact"], source=op.get("source"))
                    return
            self._graph.remember(graph_scope, op["entity"], [op["fact"]], op.get("type"), source=op.get("source"))
        except (InvalidInput, NotFound) as error:  # a name the graph refuses, a fact no longer current
            logger.warning("a learnt fact was not put in the graph", error_code=error.code)
        except MemoryServiceError as error:
            if isinstance(error, UserDeletionInProgress):
                raise
            logger.warning("a learnt fact was not put in the graph", error_code=error.code)

    def _clear_pending(self, scope: Scope, session: str, pending: Item | None) -> None:
        """Remove the pending row, unless a write touched the session since it was read."""
        if pending is None:
            return
        with contextlib.suppress(ConditionFailed):
            self._raw.delete(
                scope.partition, work.pending_sk(session), Condition(equals={"touched_ms": pending["touched_ms"]})
            )

    # -- the budget ----------------------------------------------------------------------------------------

    def _held_back(self, memory: AppMemory) -> Outcome | None:
        """Why the app may not ask the model now, on any path (a session's step, a parked job started again):
        its month's token budget is spent, or its share of the model's tokens this minute."""
        now = self._now_ms()
        over = self._accounting.over_budget(memory)
        if over:
            return Outcome("paused", at_ms=now + BUDGET_RECHECK_MS, reason=over)
        shared = self._minute_share.spent(memory.app, EXTRACTION_TIER) if self._minute_share is not None else ""
        if shared:  # only this app waits: the others' sessions still have their share of the model this minute
            wait_ms = math.ceil(self._minute_share.seconds_to_next_minute() * 1000)  # type: ignore[union-attr]
            return Outcome("waiting", at_ms=now + wait_ms, reason=shared)
        return None

    def _now_ms(self) -> int:
        return int(self._clock().timestamp() * 1000)


def _as_read(raw: Item | None) -> Condition:
    return Condition(exists=False) if raw is None else Condition(equals={"state": raw["state"]})
