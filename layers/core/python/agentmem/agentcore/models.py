"""The request bodies of the AgentCore Memory data plane, as botocore's ``bedrock-agentcore`` model states
them (members in camelCase, timestamps as epoch seconds, unions with exactly one member), with the model's
patterns and bounds checked here: botocore checks only required members, types and minimum lengths."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from agentmem.models.memory import utc_moment

_ID_CHARS = r"[a-zA-Z0-9_/\-]"
ACTOR_ID = re.compile(rf"[a-zA-Z0-9]{_ID_CHARS}*(?::{_ID_CHARS}+)*{_ID_CHARS}*")
SESSION_ID = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_\-]*")
EVENT_ID = re.compile(r"[0-9]+#[a-fA-F0-9]+")
RECORD_ID = re.compile(r"mem-[a-zA-Z0-9_\-]*")
METADATA_TEXT = re.compile(r"[a-zA-Z0-9\s._:/=+@\-]*")
_NS_CHARS = r"[a-zA-Z0-9_/*\-]"
NAMESPACE = re.compile(rf"[a-zA-Z0-9/*]{_NS_CHARS}*(?::{_NS_CHARS}+)*{_NS_CHARS}*")
REQUEST_IDENTIFIER = re.compile(r"[a-zA-Z0-9_\-]+")


def _matching(pattern: re.Pattern[str], what: str, low: int, high: int) -> AfterValidator:
    def check(value: str) -> str:
        if not low <= len(value) <= high:
            raise ValueError(f"{what} is {len(value)} characters; it must be {low}..{high}")
        if not pattern.fullmatch(value):
            raise ValueError(f"{what} must match {pattern.pattern}")
        return value

    return AfterValidator(check)


def _epoch(value: Any) -> Any:
    """botocore sends timestamps in a JSON body as epoch seconds; an RFC 3339 string is accepted too."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError("a timestamp out of range") from None
    return value


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("a timestamp needs a time zone")
    moment = utc_moment(value, "a timestamp")
    if moment.year < 1970:
        raise ValueError("a timestamp must not be before 1970")
    return moment


ActorId = Annotated[str, _matching(ACTOR_ID, "actorId", 1, 255)]
SessionId = Annotated[str, _matching(SESSION_ID, "sessionId", 1, 100)]
EventId = Annotated[str, _matching(EVENT_ID, "eventId", 3, 100)]
RecordId = Annotated[str, _matching(RECORD_ID, "memoryRecordId", 40, 50)]
BranchName = Annotated[str, _matching(SESSION_ID, "branch name", 1, 100)]
StrategyId = Annotated[str, _matching(SESSION_ID, "memoryStrategyId", 1, 100)]
Namespace = Annotated[str, _matching(NAMESPACE, "namespace", 1, 1024)]
MetadataKey = Annotated[str, _matching(METADATA_TEXT, "metadata key", 1, 128)]
Timestamp = Annotated[datetime, BeforeValidator(_epoch), AfterValidator(_utc)]
MaxResults = Annotated[int, Field(ge=1, le=100)]


class _Shape(BaseModel):
    """Members in camelCase; members a newer model adds are ignored (a newer botocore keeps working)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class _Union(_Shape):
    """A union of the model: exactly one member set."""

    @model_validator(mode="after")
    def _one_member(self) -> _Union:
        present = [name for name in type(self).model_fields if getattr(self, name) is not None]
        if len(present) != 1:
            names = ", ".join(to_camel(n) for n in type(self).model_fields)
            raise ValueError(f"exactly one of {names} must be set")
        return self


class ConversationalContent(_Union):
    text: str | None = Field(default=None, min_length=1, max_length=100_000)


Role = Literal["ASSISTANT", "USER", "TOOL", "OTHER"]


class Conversational(_Shape):
    content: ConversationalContent
    role: Role


class JsonData(_Shape):
    content: Any


class PayloadItem(_Union):
    conversational: Conversational | None = None
    blob: Any = None
    json_: JsonData | None = Field(default=None, alias="json")


class MetadataValue(_Union):
    string_value: Annotated[str, _matching(METADATA_TEXT, "stringValue", 0, 256)] | None = None


class Branch(_Shape):
    root_event_id: EventId | None = None
    name: BranchName


class CreateEventRequest(_Shape):
    actor_id: ActorId
    session_id: SessionId | None = None
    event_timestamp: Timestamp
    payload: list[PayloadItem] = Field(max_length=100)
    branch: Branch | None = None
    client_token: str | None = None
    metadata: dict[MetadataKey, MetadataValue] | None = Field(default=None, max_length=15)
    extraction_mode: Literal["SKIP"] | None = None
    extraction_config: dict[str, Any] | None = None


class LeftExpression(_Union):
    metadata_key: MetadataKey | None = None


class RightExpression(_Union):
    metadata_value: MetadataValue | None = None


class EventMetadataFilter(_Shape):
    left: LeftExpression
    operator: Literal["EQUALS_TO", "EXISTS", "NOT_EXISTS"]
    right: RightExpression | None = None


class BranchFilter(_Shape):
    name: BranchName
    include_parent_branches: bool = False


class EventFilter(_Shape):
    branch: BranchFilter | None = None
    event_metadata: list[EventMetadataFilter] | None = Field(default=None, min_length=1, max_length=5)


class ListEventsRequest(_Shape):
    include_payloads: bool = True
    filter: EventFilter | None = None
    max_results: MaxResults = 20
    next_token: str | None = Field(default=None, max_length=4096)


class SessionFilter(_Shape):
    event_filter: Literal["HAS_EVENTS"] | None = None


class ListSessionsRequest(_Shape):
    max_results: MaxResults = 20
    next_token: str | None = Field(default=None, max_length=4096)
    filter: SessionFilter | None = None


class ListActorsRequest(_Shape):
    max_results: MaxResults = 20
    next_token: str | None = Field(default=None, max_length=4096)


class RecordMetadataValue(_Union):
    string_value: Annotated[str, _matching(METADATA_TEXT, "stringValue", 1, 256)] | None = None
    string_list_value: list[Annotated[str, _matching(METADATA_TEXT, "stringListValue", 1, 64)]] | None = Field(
        default=None, min_length=1, max_length=5
    )
    number_value: float | None = None
    date_time_value: Timestamp | None = None


class MemoryContent(_Union):
    text: str | None = Field(default=None, min_length=1, max_length=16_000)


RecordMetadata = Annotated[dict[MetadataKey, RecordMetadataValue], Field(min_length=1, max_length=20)]


class RecordExpiry(_Union):
    record_expiry_duration_days: int | None = Field(default=None, ge=31, le=3650)
    action: Literal["REMOVE"] | None = None


class RecordCreate(_Shape):
    request_identifier: Annotated[str, _matching(REQUEST_IDENTIFIER, "requestIdentifier", 1, 80)]
    namespaces: list[Namespace] = Field(max_length=1)
    content: MemoryContent
    timestamp: Timestamp
    memory_strategy_id: StrategyId | None = None
    metadata: RecordMetadata | None = None


class BatchCreateRecordsRequest(_Shape):
    records: list[RecordCreate] = Field(max_length=100)
    client_token: str | None = None
    record_expiry_specification: RecordExpiry | None = None


class RecordUpdate(_Shape):
    memory_record_id: RecordId
    timestamp: Timestamp
    content: MemoryContent | None = None
    namespaces: list[Namespace] | None = Field(default=None, max_length=1)
    source_namespaces: list[Namespace] | None = Field(default=None, max_length=1)
    memory_strategy_id: StrategyId | None = None
    metadata: RecordMetadata | None = None


class BatchUpdateRecordsRequest(_Shape):
    records: list[RecordUpdate] = Field(max_length=100)
    record_expiry_specification: RecordExpiry | None = None


class RecordDelete(_Shape):
    memory_record_id: RecordId
    namespace: Namespace | None = None


class BatchDeleteRecordsRequest(_Shape):
    records: list[RecordDelete] = Field(max_length=100)


class RecordLeft(_Union):
    metadata_key: MetadataKey | None = None


class RecordRight(_Union):
    metadata_value: RecordMetadataValue | None = None


RecordOperator = Literal[
    "EQUALS_TO",
    "EXISTS",
    "NOT_EXISTS",
    "BEFORE",
    "AFTER",
    "CONTAINS",
    "GREATER_THAN",
    "GREATER_THAN_OR_EQUALS",
    "LESS_THAN",
    "LESS_THAN_OR_EQUALS",
]


class RecordMetadataFilter(_Shape):
    left: RecordLeft
    operator: RecordOperator
    right: RecordRight | None = None


MetadataFilters = Annotated[list[RecordMetadataFilter], Field(min_length=1, max_length=5)]


class ListRecordsRequest(_Shape):
    namespace: Namespace | None = None
    namespace_path: Namespace | None = None
    memory_strategy_id: StrategyId | None = None
    max_results: MaxResults = 20
    next_token: str | None = Field(default=None, max_length=4096)
    metadata_filters: MetadataFilters | None = None


class SearchCriteria(_Shape):
    search_query: str = Field(min_length=1, max_length=10_000)
    memory_strategy_id: StrategyId | None = None
    top_k: int = Field(default=10, ge=1, le=100)
    metadata_filters: MetadataFilters | None = None


class RetrieveRecordsRequest(_Shape):
    namespace: Namespace | None = None
    namespace_path: Namespace | None = None
    search_criteria: SearchCriteria
    next_token: str | None = Field(default=None, max_length=4096)
    max_results: MaxResults | None = None


# -- long-term extraction jobs ---------------------------------------------------------------------


class ExtractionJobFilter(_Shape):
    strategy_id: str | None = None
    session_id: str | None = None
    actor_id: str | None = None
    status: Literal["FAILED"] | None = None


class ListExtractionJobsRequest(_Shape):
    max_results: MaxResults = 20
    filter: ExtractionJobFilter | None = None
    next_token: str | None = Field(default=None, max_length=4096)


class ExtractionJobRef(_Shape):
    job_id: str = Field(min_length=1, max_length=128)


class StartExtractionJobRequest(_Shape):
    extraction_job: ExtractionJobRef
    client_token: str | None = None
