"""``/v1/apps/{app}/extraction``: what an app learns from its conversations (docs/extraction.md), the same
configuration AgentCore's control plane calls the app's memory (agentmem/agentcore/control.py)."""

from __future__ import annotations

from dataclasses import replace

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from agentmem.agentcore.records import check_template
from agentmem.api.http import TENANT, WRITE, PathId, documented, json_response, path_id
from agentmem.container import Container, get_container
from agentmem.extraction import config
from agentmem.extraction.config import AppMemory, Strategy
from agentmem.extraction.service import NO_MODEL, tokens_this_month
from agentmem.keys import validate_id
from agentmem.models.extraction import ExtractionIn, ExtractionOut

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
