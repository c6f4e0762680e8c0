"""The AgentCore Memory data plane under ``/agentcore`` (docs/agentcore.md): botocore's ``bedrock-agentcore``
REST-JSON paths, methods and status codes, so ``boto3.client("bedrock-agentcore", endpoint_url=<API>/agentcore)``
works unchanged. Errors leave in the model's shape (:func:`aws_shaped`, applied where the API answers). The
routes are kept out of the OpenAPI document: their contract is botocore's model, not this API's."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentmem.agentcore import control_models, models
from agentmem.agentcore.records import app_of_memory, model_needed
from agentmem.api.http import JSON, json_response, path_id
from agentmem.api.tenancy import caller_app
from agentmem.container import get_container
from agentmem.errors import InvalidInput

if TYPE_CHECKING:
    from agentmem.agentcore.service import AgentCoreService

router = Router()
PREFIX = "/agentcore"
MEMORY = PREFIX + "/memories/<memory_id>"
SESSION = MEMORY + "/actor/<actor_id>/sessions/<session_id>"
_HIDDEN: dict[str, Any] = {"include_in_schema": False}

Namespace = Annotated[str | None, Query()]


def _service() -> AgentCoreService:
    return get_container().agentcore


@router.post(MEMORY + "/events", **_HIDDEN)
def create_event(memory_id: str, body: models.CreateEventRequest) -> Response[dict[str, Any]]:
    return json_response(201, _service().create_event(path_id(memory_id), body))


@router.get(SESSION + "/events/<event_id>", **_HIDDEN)
def get_event(memory_id: str, actor_id: str, session_id: str, event_id: str) -> Response[dict[str, Any]]:
    ids = (path_id(memory_id), path_id(actor_id), path_id(session_id), path_id(event_id))
    return json_response(200, _service().get_event(*ids))


@router.delete(SESSION + "/events/<event_id>", **_HIDDEN)
def delete_event(memory_id: str, actor_id: str, session_id: str, event_id: str) -> Response[dict[str, Any]]:
    ids = (path_id(memory_id), path_id(actor_id), path_id(session_id), path_id(event_id))
    return json_response(200, _service().delete_event(*ids))


@router.post(SESSION, **_HIDDEN)
def list_events(
    memory_id: str, actor_id: str, session_id: str, body: models.ListEventsRequest
) -> Response[dict[str, Any]]:
    ids = (path_id(memory_id), path_id(actor_id), path_id(session_id))
    return json_response(200, _service().list_events(*ids, body))


@router.post(MEMORY + "/actor/<actor_id>/sessions", **_HIDDEN)
def list_sessions(memory_id: str, actor_id: str, body: models.ListSessionsRequest) -> Response[dict[str, Any]]:
    return json_response(200, _service().list_sessions(path_id(memory_id), path_id(actor_id), body))


@router.post(MEMORY + "/actors", **_HIDDEN)
def list_actors(memory_id: str, body: models.ListActorsRequest) -> Response[dict[str, Any]]:
    return json_response(200, _service().list_actors(path_id(memory_id), body))


@router.post(MEMORY + "/memoryRecords/batchCreate", **_HIDDEN)
def batch_create_records(memory_id: str, body: models.BatchCreateRecordsRequest) -> Response[dict[str, Any]]:
    return json_response(201, _service().batch_create_records(path_id(memory_id), body))


@router.post(MEMORY + "/memoryRecords/batchUpdate", **_HIDDEN)
def batch_update_records(memory_id: str, body: models.BatchUpdateRecordsRequest) -> Response[dict[str, Any]]:
    return json_response(200, _service().batch_update_records(path_id(memory_id), body))


@router.post(MEMORY + "/memoryRecords/batchDelete", **_HIDDEN)
def batch_delete_records(memory_id: str, body: models.BatchDeleteRecordsRequest) -> Response[dict[str, Any]]:
    return json_response(200, _service().batch_delete_records(path_id(memory_id), body))


@router.get(MEMORY + "/memoryRecord/<record_id>", **_HIDDEN)
def get_record(memory_id: str, record_id: str, namespace: Namespace = None) -> Response[dict[str, Any]]:
    return json_response(200, _service().get_record(path_id(memory_id), path_id(record_id), namespace))


@router.delete(MEMORY + "/memoryRecords/<record_id>", **_HIDDEN)
def delete_record(memory_id: str, record_id: str, namespace: Namespace = None) -> Response[dict[str, Any]]:
    return json_response(200, _service().delete_record(path_id(memory_id), path_id(record_id), namespace))


@router.post(MEMORY + "/memoryRecords", **_HIDDEN)
def list_records(memory_id: str, body: models.ListRecordsRequest) -> Response[dict[str, Any]]:
    return json_response(200, _service().list_records(path_id(memory_id), body))


@router.post(MEMORY + "/retrieve", **_HIDDEN)
def retrieve_records(memory_id: str, body: models.RetrieveRecordsRequest) -> Response[dict[str, Any]]:
    return json_response(200, _service().retrieve_records(path_id(memory_id), body))


@router.post(MEMORY + "/extractionJobs/start", **_HIDDEN)
def start_extraction_job(memory_id: str, body: models.StartExtractionJobRequest) -> Response[dict[str, Any]]:
    container = get_container()
    if container.model is None:
        raise model_needed("StartMemoryExtractionJob")
    app = app_of_memory(path_id(memory_id))
    job = body.extraction_job.job_id
    scope, session = container.extraction.retry_parked(app, job)
    if container.learns_locally:
        container.local_extraction.notify(scope.partition, session)
    return json_response(200, {"jobId": job})


@router.post(MEMORY + "/extractionJobs", **_HIDDEN)
def list_extraction_jobs(memory_id: str, body: models.ListExtractionJobsRequest) -> Response[dict[str, Any]]:
    from agentmem.agentcore.jobs import list_jobs

    return json_response(200, list_jobs(get_container().extraction, path_id(memory_id), body))


@router.post(MEMORY + "/ingest", **_HIDDEN)
def ingest_data(memory_id: str) -> Response[dict[str, Any]]:
    raise InvalidInput(
        "IngestData is not offered here: write the content as events (CreateEvent), which the memory's strategies "
        "learn from (docs/extraction.md)",
        code="operation_not_offered",
    )


# -- the control plane: memories (botocore's bedrock-agentcore-control, same endpoint) ----------------------


@router.post(PREFIX + "/memories/create", **_HIDDEN)
def create_memory(body: control_models.CreateMemoryRequest) -> Response[dict[str, Any]]:
    return json_response(202, get_container().memory_control.create(caller_app(), body))


@router.get(MEMORY + "/details", **_HIDDEN)
def get_memory(memory_id: str) -> Response[dict[str, Any]]:
    return json_response(200, get_container().memory_control.get(path_id(memory_id)))


@router.post(PREFIX + "/memories", **_HIDDEN)
def list_memories(body: control_models.ListMemoriesRequest) -> Response[dict[str, Any]]:
    return json_response(200, get_container().memory_control.list_memories(caller_app(), body))


@router.put(MEMORY + "/update", **_HIDDEN)
def update_memory(memory_id: str, body: control_models.UpdateMemoryRequest) -> Response[dict[str, Any]]:
    return json_response(202, get_container().memory_control.update(path_id(memory_id), body))


@router.delete(MEMORY + "/delete", **_HIDDEN)
def delete_memory(memory_id: str) -> Response[dict[str, Any]]:
    return json_response(202, get_container().memory_control.delete(path_id(memory_id)))


# -- errors in the model's shape -------------------------------------------------------------------

_REASONS = {
    **dict.fromkeys(("malformed_json", "malformed_request", "json_too_deep", "invalid_unicode"), "CannotParse"),
    "idempotency_key_reused": "IdempotentParameterMismatchException",
}


def _exception(status: int, code: str) -> tuple[int, str]:
    """The model's exception (and its status) for an error of this API."""
    if code in ("route_not_found", "method_not_allowed"):  # no operation has that method and path
        return 404, "UnknownOperationException"
    if code == "user_memory_full":  # AgentCore's answer when a memory holds its quota
        return 402, "ServiceQuotaExceededException"
    if status in (400, 413, 422):
        return 400, "ValidationException"
    if status in (401, 403):
        return 403, "AccessDeniedException"
    if status == 404:
        return 404, "ResourceNotFoundException"
    if status == 409:
        return 409, "ConflictException"
    if status == 429:
        return 429, "ThrottledException"
    if status >= 500:
        return status, "ServiceException"
    return status, "ValidationException"


def aws_shaped(event: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """An error answer on an ``/agentcore`` path in the model's shape: the exception's name in
    ``x-amzn-ErrorType`` (where botocore reads it) and ``{"message", ...}`` in the body (a
    ValidationException with its ``reason`` and ``fieldList``); any other answer unchanged."""
    status = int(result.get("statusCode") or 200)
    if status < 400 or not str(event.get("path") or "").startswith(PREFIX + "/"):
        return result
    try:
        error = json.loads(result.get("body") or "")["error"]
        code, message, request_id = str(error["code"]), str(error["message"]), str(error.get("request_id") or "")
    except (ValueError, KeyError, TypeError):
        return result
    status, name = _exception(status, code)
    body: dict[str, Any] = {"message": message}
    if name == "ValidationException":
        body["reason"] = _REASONS.get(code, "FieldValidationFailed")
        details = error.get("details")
        if isinstance(details, list):
            body["fieldList"] = [
                {"name": str(d.get("location", "")), "message": str(d.get("message", ""))}
                for d in details
                if isinstance(d, dict)
            ]
    headers = {k: v for k, v in (result.get("headers") or {}).items() if k.lower() != "content-type"}
    headers.update({"Content-Type": JSON, "x-amzn-ErrorType": name, "x-amzn-RequestId": request_id})
    multi = {k: v for k, v in (result.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    return {**result, "statusCode": status, "headers": headers, "multiValueHeaders": multi, "body": json.dumps(body)}
