"""AgentCore's extraction jobs on this service's parked work (agentmem/extraction/work.py): a batch whose
extraction failed on every attempt is a FAILED job, listed by ``ListMemoryExtractionJobs`` and run again by
``StartMemoryExtractionJob``."""

from __future__ import annotations

from typing import Any

from agentmem.agentcore import models
from agentmem.agentcore import records as ac
from agentmem.errors import InvalidInput
from agentmem.extraction.service import ExtractionService
from agentmem.extraction.work import PARKED_BY_ID

LIST_READ = 1_000
"""Parked jobs one page reads at most (a filter that matches few answers fewer, with a token)."""


def list_jobs(extraction: ExtractionService, memory_id: str, body: models.ListExtractionJobsRequest) -> dict[str, Any]:
    app = ac.app_of_memory(memory_id)
    wanted = body.filter or models.ExtractionJobFilter()
    jobs: list[dict[str, Any]] = []
    after = body.next_token
    if after is not None and not (after.startswith(PARKED_BY_ID) and after[len(PARKED_BY_ID) :].isalnum()):
        raise InvalidInput("nextToken is not one this API returned", code="invalid_cursor")
    read = 0
    while len(jobs) < body.max_results and read < LIST_READ:
        page, after = extraction.list_parked(app, after=after, limit=body.max_results)
        read += len(page) + 1
        for job in page:
            if _matches(job, wanted):
                jobs.append(_job(job))
        if after is None:
            break
    answer: dict[str, Any] = {"jobs": jobs[: body.max_results]}
    if after is not None:
        answer["nextToken"] = after
    return answer


def _matches(job: dict[str, Any], wanted: models.ExtractionJobFilter) -> bool:
    return (
        (wanted.strategy_id is None or job.get("strategy") == wanted.strategy_id)
        and (wanted.session_id is None or job.get("session") == wanted.session_id)
        and (wanted.actor_id is None or job.get("user") == wanted.actor_id)
    )


def _job(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "jobID": job["job_id"],
        "messages": {
            "messagesList": [{"eventId": ac.event_id(i), "messageIndex": n} for n, i in enumerate(job["messages"])]
        },
        "status": "FAILED",
        "failureReason": job.get("failure") or "",
        "strategyId": job.get("strategy") or "",
        "sessionId": job.get("session") or "",
        "actorId": job["user"],
    }
