"""``/v1/apps/{app}/extraction``: what an app learns from its conversations (docs/extraction.md), the same
configuration AgentCore's control plane calls the app's memory (agentmem/agentcore/control.py), and
``/v1/apps/{app}/extraction/jobs``: the app's parked jobs (AgentCore's ``ListMemoryExtractionJobs``), with why."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentmem.agentcore.records import check_template
from agentmem.api.http import TENANT, WRITE, PathId, documented, json_response, path_id
from agentmem.container import Container, get_container
from agentmem.errors import InvalidInput
from agentmem.extraction import config, model_state, work
from agentmem.extraction.accounting import tokens_this_month
from agentmem.extraction.config import AppMemory, Strategy
from agentmem.extraction.service import NO_MODEL
from agentmem.keys import validate_id
from agentmem.models.extraction import ExtractionIn, ExtractionJobs, ExtractionOut

router = Router()
PATH = "/v1/apps/<app>/extraction"


@router.get(
    PATH,
    summary="What this app learns from its conversations, and whether extraction runs",
    responses=documented(200, "the app's strategies, triggers, budget and extraction state", *TENANT),
)
def get_extraction(app: PathId) -> Response[ExtractionOut]:
    name = validate_id(path_id(app), "app")
    container = get_container()
    return json_response(200, _out(container, name, container.memories.get(name, fresh=True)))


@router.put(
    PATH,
    summary="Set what this app learns: its strategies (replaced whole), triggers and token budget",
    responses=documented(200, "the app's strategies, triggers, budget and extraction state", *WRITE),
)
def put_extraction(app: PathId, body: ExtractionIn) -> Response[ExtractionOut]:
    name = validate_id(path_id(app), "app")
    container = get_container()
    memories = container.memories
    before = memories.get(name, fresh=True)
    now = memories.now()
    kept = {s.name: s for s in before.strategies} if before is not None else {}
    strategies = [
        Strategy(
            kept[s.name].id if s.name in kept else config.new_id(s.name),
            s.name,
            s.type,
            check_template(s.namespace or config.DEFAULT_NAMESPACES[s.type]),
            extraction_instruction=s.instruction,
            consolidation_instruction=s.consolidation_instruction,
            created_at=kept[s.name].created_at if s.name in kept else now,
            updated_at=now,
        )
        for s in body.strategies
    ]
    settings = {
        "trigger_messages": body.trigger_messages,
        "trigger_idle_seconds": body.trigger_idle_seconds,
        "token_budget": body.token_budget,
    }
    if before is None:
        memory = config.with_strategies(AppMemory(name, name, name, now, now, **settings), strategies, now)  # type: ignore[arg-type]
        after = memories.put(memory)
    else:
        after = memories.save(before, config.with_strategies(replace(before, **settings), strategies, now))  # type: ignore[arg-type]
    return json_response(200, _out(container, name, after))


@router.get(
    PATH + "/jobs",
    summary="This app's parked extraction jobs (batches that failed on every attempt) and why, page by page",
    responses=documented(200, "a page of parked jobs, oldest first, each with its failure", *TENANT, 422),
)
def list_extraction_jobs(
    app: PathId,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=128, description="next_cursor of the previous page")] = None,
) -> Response[ExtractionJobs]:
    name = validate_id(path_id(app), "app")
    if cursor is not None and not (0 < len(cursor) <= 64 and cursor.isascii() and cursor.isalnum()):
        raise InvalidInput("cursor is not one this API returned", code="invalid_cursor")
    after = work.PARKED_BY_ID + cursor if cursor is not None else None
    page, next_start = get_container().extraction.list_parked(name, after=after, limit=limit)
    jobs = [
        {
            "job_id": job["job_id"],
            "user": job["user"],
            "project": job.get("project"),
            "session": job.get("session") or "",
            "strategy": job.get("strategy") or "",
            "entry_ids": list(job.get("messages") or []),
            "failure": job.get("failure") or "",
            "parked_at": job.get("parked_at") or "",
        }
        for job in page
    ]
    next_cursor = next_start[len(work.PARKED_BY_ID) :] if next_start else None
    return json_response(200, {"jobs": jobs, "next_cursor": next_cursor})


def _out(container: Container, app: str, memory: AppMemory | None) -> dict[str, object]:
    strategies = memory.strategies if memory is not None else ()
    model = container.model
    spent = tokens_this_month(container.table, app, container.clock())
    budget = memory.token_budget if memory is not None else None
    if not strategies:
        status, message = "off", "no strategy: nothing is extracted"
    elif model is None:
        status, message = "needs_model", NO_MODEL
    elif budget is not None and spent >= budget:
        status, message = "paused_budget", f"this month's token budget of {budget} is spent; writes are kept"
    elif (trouble := model_state.read(container.table, app)) is not None:
        status, message = trouble.status, trouble.message().replace("{app}", app)
    else:
        status, message = "on", "extraction runs after writes into sessions"
    return {
        "app": app,
        "strategies": [
            {
                "id": s.id,
                "type": s.type,
                "name": s.name,
                "namespace": s.namespace,
                "instruction": s.extraction_instruction,
                "consolidation_instruction": s.consolidation_instruction,
            }
            for s in strategies
        ],
        "trigger_messages": memory.trigger_messages if memory else config.DEFAULT_TRIGGER_MESSAGES,
        "trigger_idle_seconds": memory.trigger_idle_seconds if memory else config.DEFAULT_TRIGGER_IDLE_SECONDS,
        "token_budget": budget,
        "state": {
            "status": status,
            "model": model.model_id if model is not None else None,
            "tokens_this_month": spent,
            "message": message,
        },
    }
