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
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, Protocol

from agentmem import users
from agentmem.clock import format_timestamp, new_id, parse_timestamp, utc_now
from agentmem.errors import ConditionFailed, InvalidInput, MemoryServiceError, NotFound, UserDeletionInProgress
from agentmem.extraction import consolidation, model_state, prompts, work
from agentmem.extraction.config import AppMemories, AppMemory, Strategy
from agentmem.extraction.consolidation import Add, Candidate, Keep, Update
from agentmem.extraction.sinks import NewRecord, RecordSink
from agentmem.keys import Scope, UserRef, scope_of_partition
from agentmem.llm.port import (
    ChatModel,
    ModelAnswerInvalid,
    ModelRefused,
    ModelTimedOut,
    ModelUnavailable,
    Usage,
    structured,
)
from agentmem.memory import records as memory_records
from agentmem.observability import logger
from agentmem.stores.table import Check, Condition, Item, Put, Table, WriteOp, query_all
from agentmem.tenancy import metering
from agentmem.tenancy.admission import EXTRACTION_TIER, ModelShare

BATCH_MESSAGES = 30
"""Messages one model call reads at most (a LoCoMo session, about 21 turns, is one batch)."""
EARLIER_MESSAGES = 2
"""Messages before the batch shown as context (never extracted from twice)."""
NEIGHBOURS = 3
"""Similar current records each candidate is weighed against."""
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
MAX_RECORDS_PER_BATCH = 24
"""Records (new and replaced) one batch commits at most: one transaction holds them with the cursor."""
MAX_SOURCES = 32
ANSWER_TOKENS = {"records": 400, "summary": 300, "decisions": 200}
"""The most output tokens each kind of call may take: eight records of some twenty words, a 150-word summary,
a decision per candidate (a model that repeats itself stops there, and its answer is asked for again)."""
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


@dataclass
class _Batch:
    """A batch's outcome across strategies: records to commit, graph writes to apply, usage, failures."""

    records: list[NewRecord] = field(default_factory=list)
    graph: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    failed: dict[str, str] = field(default_factory=dict)
    """Strategy id -> why it failed (no user content: safe to keep and show)."""
    model_failure: MemoryServiceError | None = None
    """The last failure that was the model's (unreachable, timed out, refused), for the app's model state."""
    answered: bool = False
    """The model answered a call (in schema or not): it is reachable."""


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
        head = self._generation(scope, session)
        if head != cursor.generation:
            cursor = replace(cursor, last="", written=0, generation=head)
        messages = self._messages_after(scope, session, cursor, head)
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
        earlier = self._earlier(scope, session, batch[0].entry_id)
        result = self._extract(scope, session, memory, memory.strategies, batch, earlier)
        self._meter(scope.app, result.usage)
        self._note_model(scope.app, result)
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

    def _extract(
        self,
        scope: Scope,
        session: str,
        memory: AppMemory,
        strategies: Sequence[Strategy],
        batch: Sequence[prompts.Message],
        earlier: Sequence[prompts.Message],
    ) -> _Batch:
        result = _Batch()
        said_at = parse_timestamp(max(m.timestamp for m in batch)) if batch else self._clock()
        for strategy in strategies:
            namespace = strategy.namespace_for(scope.user, session)
            try:
                if strategy.type == "SUMMARIZATION":
                    planned = self._summarise(scope, strategy, namespace, batch)
                else:
                    planned = self._candidates(scope, strategy, namespace, batch, earlier)
            except (ModelUnavailable, ModelRefused, ModelAnswerInvalid) as error:
                result.usage = result.usage + error.usage
                hint = f"; {model_state.TIMEOUT_HINT}" if isinstance(error, ModelTimedOut) else ""
                result.failed[strategy.id] = f"{strategy.name}: {error.code} ({_plain(error.message)}{hint})"
                if model_state.status_of(error) is None:
                    result.answered = True
                else:
                    result.model_failure = error
                continue
            result.answered = True
            usage, actions = planned
            result.usage = result.usage + usage
            for action in actions:
                if isinstance(action, Keep) or len(result.records) >= MAX_RECORDS_PER_BATCH:
                    continue
                candidate = action.candidate
                replaces = action.replaces if isinstance(action, Update) else None
                index = len(result.records)
                result.records.append(
                    NewRecord(
                        namespace=namespace,
                        strategy_id=strategy.id,
                        text=candidate.text,
                        said_at=said_at,
                        sources=candidate.sources[:MAX_SOURCES],
                        about=candidate.about,
                        replaces=replaces,
                    )
                )
                if strategy.type in ("SEMANTIC", "USER_PREFERENCE") and candidate.about:
                    op: dict[str, Any] = {
                        "record": index,
                        "entity": candidate.about,
                        "type": candidate.about_type,
                        "fact": candidate.text,
                    }
                    if replaces is not None and replaces.about == candidate.about:
                        op["replaces"] = replaces.text
                    result.graph.append(op)
        return result

    def _candidates(
        self,
        scope: Scope,
        strategy: Strategy,
        namespace: str,
        batch: Sequence[prompts.Message],
        earlier: Sequence[prompts.Message],
    ) -> tuple[Usage, list[consolidation.Action]]:
        assert self._model is not None
        answer_type = prompts.ANSWERS[strategy.type]
        asked = structured(
            self._model,
            answer_type,
            system=prompts.system_prompt(strategy.type, scope.user, strategy.extraction_instruction),
            prompt=prompts.conversation(batch, earlier),
            max_output_tokens=ANSWER_TOKENS["records"],
        )
        usage = asked.usage
        by_number = {m.number: m.entry_id for m in batch}
        candidates = consolidation.candidates_of(asked.answer, by_number, scope.user)
        candidates = [c for c in candidates if c.text.strip()]
        if not candidates:
            return usage, []
        neighbours = [self._records.similar(scope, namespace, c.text, NEIGHBOURS) for c in candidates]
        decided = consolidation.settled(candidates, neighbours)
        open_ = [i for i in range(len(candidates)) if i not in decided]
        decisions: list[prompts.Decision] = []
        if open_:
            system = prompts.CONSOLIDATION_SYSTEM
            if strategy.consolidation_instruction:
                system = f"{system}\n\n{strategy.consolidation_instruction.strip()}"
            try:
                asked_again = structured(
                    self._model,
                    prompts.Decisions,
                    system=system,
                    prompt=prompts.consolidation_prompt(
                        [candidates[i].text for i in open_], [[e.text for e in neighbours[i]] for i in open_]
                    ),
                    max_output_tokens=ANSWER_TOKENS["decisions"],
                )
            except ModelAnswerInvalid as error:  # AgentCore's documented behaviour: the new records are kept
                logger.warning("consolidation answer invalid; the new records are kept", app=scope.app)
                return usage + error.usage, consolidation.plan(candidates, neighbours)
            usage = usage + asked_again.usage
            renumbered = dict(enumerate(open_))
            decisions = [
                d.model_copy(update={"memory": renumbered[d.memory]})
                for d in asked_again.answer.decisions  # type: ignore[attr-defined]
                if d.memory in renumbered
            ]
        return usage, consolidation.plan(candidates, neighbours, decisions)

    def _summarise(
        self, scope: Scope, strategy: Strategy, namespace: str, batch: Sequence[prompts.Message]
    ) -> tuple[Usage, list[consolidation.Action]]:
        """The session's summary, written again with the new messages: an update of the current one."""
        assert self._model is not None
        current = self._records.newest(scope, namespace, 1)
        previous = current[0] if current else None
        system = prompts.system_prompt("SUMMARIZATION", scope.user, strategy.extraction_instruction)
        asked = structured(
            self._model,
            prompts.Summary,
            system=system,
            prompt=prompts.summary_prompt(batch, previous.text if previous else None),
            max_output_tokens=ANSWER_TOKENS["summary"],
        )
        text = asked.answer.summary.strip()  # type: ignore[attr-defined]
        if not text:
            return asked.usage, []
        candidate = Candidate(text, sources=tuple(m.entry_id for m in batch))
        if previous is not None and consolidation.normalised(previous.text) == consolidation.normalised(text):
            return asked.usage, [Keep(candidate, "the summary did not change")]
        return asked.usage, [Update(candidate, previous) if previous is not None else Add(candidate)]

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
            result = self._extract(scope, str(job["session"]), memory, [strategy], batch, ())
            self._meter(scope.app, result.usage)
            self._note_model(scope.app, result)
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

    # -- reading a session -----------------------------------------------------------------------------

    def _generation(self, scope: Scope, session: str) -> str:
        head = self._raw.get(scope.partition, memory_records.session_head_sk(session))
        return str(head.get("generation") or "") if head else ""

    def _messages_after(
        self, scope: Scope, session: str, cursor: work.Cursor, generation: str
    ) -> list[prompts.Message]:
        """The session's messages past the cursor, in the order they were written (then by id): a turn written
        after extraction read past it, with an earlier time than those read, is read all the same."""
        prefix = memory_records.session_prefix(session)
        position = (cursor.written, cursor.last)
        rows = [
            (int(r.get(memory_records.WRITTEN) or 0), r["sk"][len(prefix) :])
            for r in query_all(self._raw, scope.partition, prefix)
            if (r.get("generation") or "") in ("", generation)
        ]
        pending = sorted(row for row in rows if row > position)
        found = {
            i["id"]: i for i in self._raw.batch_get([(scope.partition, memory_records.entry_sk(i)) for _, i in pending])
        }
        written = {i: w for w, i in pending}
        return [
            replace(m, written=written[m.entry_id])
            for m in prompts.messages_of([found[i] for _, i in pending if i in found], self._clock())
        ]

    def _earlier(self, scope: Scope, session: str, first: str) -> list[prompts.Message]:
        prefix = memory_records.session_prefix(session)
        rows = self._raw.query(
            scope.partition, prefix, limit=EARLIER_MESSAGES, descending=True, start_after=prefix + first
        ).items
        ids = [r["sk"][len(prefix) :] for r in rows]
        found = self._raw.batch_get([(scope.partition, memory_records.entry_sk(i)) for i in ids])
        return prompts.messages_of(sorted(found, key=lambda i: i["id"]), self._clock())

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

    # -- cost ----------------------------------------------------------------------------------------------

    def _meter(self, app: str, usage: Usage) -> None:
        if usage.calls:
            if self._minute_share is not None:
                self._minute_share.add(app, usage.input_tokens + usage.output_tokens)
            metering.record_usage(
                self._raw,
                app,
                model_calls=usage.calls,
                model_input_tokens=usage.input_tokens,
                model_output_tokens=usage.output_tokens,
            )

    def _note_model(self, app: str, result: _Batch) -> None:
        """Keep what the batch's calls showed of the model for the app's state and the health check."""
        try:
            model_state.note(self._raw, app, failed=result.model_failure, answered=result.answered, now=self._clock())
        except MemoryServiceError as error:  # the state is a report: the batch goes on without it
            logger.warning("the model's state was not kept", app=app, error=error.code)

    def _held_back(self, memory: AppMemory) -> Outcome | None:
        """Why the app may not ask the model now, on any path (a session's step, a parked job started again):
        its month's token budget is spent, or its share of the model's tokens this minute."""
        now = self._now_ms()
        over = self._over_budget(memory)
        if over:
            return Outcome("paused", at_ms=now + BUDGET_RECHECK_MS, reason=over)
        shared = self._minute_share.spent(memory.app, EXTRACTION_TIER) if self._minute_share is not None else ""
        if shared:  # only this app waits: the others' sessions still have their share of the model this minute
            wait_ms = math.ceil(self._minute_share.seconds_to_next_minute() * 1000)  # type: ignore[union-attr]
            return Outcome("waiting", at_ms=now + wait_ms, reason=shared)
        return None

    def _over_budget(self, memory: AppMemory) -> str:
        """Why the app may not spend more tokens this month ("" when it may)."""
        if memory.token_budget is None:
            return ""
        spent = tokens_this_month(self._raw, memory.app, self._clock())
        if spent >= memory.token_budget:
            return f"extraction paused: this month's token budget of {memory.token_budget} is spent ({spent})"
        return ""

    def _now_ms(self) -> int:
        return int(self._clock().timestamp() * 1000)


def tokens_this_month(table: Table, app: str, now: datetime) -> int:
    month = now.date().isoformat()[:7]
    days = metering.read_usage(table, app, days=31, today=now.date())
    return sum(d.model_input_tokens + d.model_output_tokens for d in days if d.date.startswith(month))


def _as_read(raw: Item | None) -> Condition:
    return Condition(exists=False) if raw is None else Condition(equals={"state": raw["state"]})


def _plain(message: str) -> str:
    """An error's message, cut short (it names no user content: the model's answer is never quoted)."""
    return message[:160]
