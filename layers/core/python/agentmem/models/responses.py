"""What the API answers: one model per response body, so ``/v1/openapi.json`` describes every route's
success and error bodies, and Powertools checks each answer against its model before it leaves.

Every model allows extra fields (a field added to a service's answer is passed on, never dropped);
a field marked "omitted when null" is left out of the JSON rather than sent as null.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentmem.models.memory import SearchMode, StoredEntry


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


def _null(value: object) -> bool:
    return value is None


def _optional(description: str) -> Any:
    """A field that is left out of the JSON when it is null."""
    return Field(default=None, exclude_if=_null, description=description + " (omitted when null)")


# -- errors ----------------------------------------------------------------------------------------


class ErrorDetail(_Out):
    code: str = Field(description="stable snake_case code, e.g. invalid_input, entity_not_found")
    message: str = Field(description="human text")
    request_id: str = Field(description="quote it when reporting a problem")
    details: Any = _optional("per-field problems of an invalid request")


class ErrorBody(_Out):
    """The body of every 4xx and 5xx answer."""

    error: ErrorDetail


def error_body(code: str, message: str, request_id: str, details: Any = None) -> dict[str, Any]:
    """The API's error envelope, as JSON: the one builder every error answer uses."""
    detail = ErrorDetail(code=code, message=message, request_id=request_id, details=details)
    return ErrorBody(error=detail).model_dump(mode="json")


# -- memory entries --------------------------------------------------------------------------------


class Entry(StoredEntry, _Out):
    """A stored entry as the API returns it."""

    score: float | None = _optional("0..1, on search hits")
    indexing: str | None = _optional("pending: stored, not yet embedded for semantic search; on write answers")


class EntryVersion(_Out):
    """One version of an entry: what it held while it was current (bitemporal, as the graph's facts)."""

    revision: int
    content: dict[str, Any]
    metadata: dict[str, Any]
    valid_from: str = Field(description="when this version became current")
    valid_to: str | None = Field(description="when a correction replaced it; null for the current version")
    recorded_at: str = Field(description="when this service recorded it")


class EntryHistory(_Out):
    memory_id: str
    versions: list[EntryVersion] = Field(description="oldest first; the last is the current version")
    truncated: bool | None = _optional("true when the oldest versions were left out to keep within the byte budget")


class ExportedVersion(EntryVersion):
    """A superseded version of an exported entry."""

    memory_id: str
    project_id: str | None


class SessionStored(_Out):
    session_id: str
    stored: int
    skipped: int
    indexing: str | None = _optional("pending: stored, not yet embedded for semantic search")


class SearchResults(_Out):
    entries: list[Entry] = Field(description="best first")
    mode: SearchMode
    truncated: bool = Field(default=False, description="fewer than top_k to stay within the response byte budget")
    degraded: bool | None = _optional("true when semantic search fell back to keywords")
    warnings: list[str] | None = _optional("why the search was degraded")


class EntryPage(_Out):
    entries: list[Entry] = Field(description="newest first")
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")
    truncated: bool = Field(default=False, description="fewer than limit to stay within the response byte budget")


class Deleted(_Out):
    deleted: int


class ExtractionQueued(_Out):
    session_id: str
    status: Literal["queued", "off"]
    """``queued``: the session's messages not yet learnt from will be, shortly, whatever the triggers say;
    ``off``: the app learns nothing (no strategy, or no model: GET /v1/apps/{app}/extraction says which)."""


# -- erasure and export ----------------------------------------------------------------------------


class DeletionStarted(_Out):
    deletion_id: str
    status: Literal["RUNNING", "SUCCEEDED", "FAILED"]


class DeletionCounts(_Out):
    entries: int
    vectors: int
    graph_items: int
    episodes: int


class DeletionStatus(_Out):
    deletion_id: str
    status: Literal["RUNNING", "SUCCEEDED", "FAILED"]
    started_at: str
    finished_at: str | None = _optional("when the erasure ended")
    deleted: DeletionCounts
    error: dict[str, str] | None = _optional("code and message of a FAILED erasure")


class ExportGraph(_Out):
    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    observations: list[dict[str, Any]]


class ExportPage(_Out):
    entries: list[Entry]
    graph: ExportGraph
    episodes: list[dict[str, Any]]
    store: list[dict[str, Any]] = Field(
        default_factory=list, description="the user's store items (namespace, key, value, times): LangGraph's store"
    )
    events: list[Entry] = Field(
        default_factory=list,
        description="events kept as events only, in the entry shape: AgentCore's blob payloads (no memory entries)",
    )
    memory_history: list[ExportedVersion] = Field(
        default_factory=list, description="the superseded versions of the exported entries (PATCH), oldest first"
    )
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")


class AppUserOut(_Out):
    user_id: str
    entries: int = Field(description="memory entries held in every scope of the user (expired ones until removed)")
    last_write_at: str | None = Field(description="the newest memory write or delete; null: no memory entry")


class AppUsers(_Out):
    users: list[AppUserOut] = Field(description="the app's users in key order (none being erased)")
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")


class Projects(_Out):
    projects: list[str] = Field(description="the projects the user has written to, in key order")
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last")


# -- knowledge graph -------------------------------------------------------------------------------


class Observation(_Out):
    id: str
    content: str
    valid_from: str
    valid_to: str | None
    recorded_at: str
    expired_at: str | None
    source: str | None = Field(
        default=None,
        description="the memory record it was learnt as, when extraction learnt it (docs/extraction.md); "
        "null when it was told",
    )


class Relation(_Out):
    id: str
    source: str
    relation_type: str
    target: str
    valid_from: str
    valid_to: str | None
    recorded_at: str
    expired_at: str | None


class Entity(_Out):
    name: str
    entity_type: str
    updated_at: str
    observations: list[Observation]


class Entities(_Out):
    entities: list[Entity]


class Observations(_Out):
    observations: list[Observation]


class Relations(_Out):
    relations: list[Relation]


class EntityHistory(Entity):
    relations: list[Relation]
    truncated: bool = Field(default=False, description="facts left out to stay within the response byte budget")


class Superseded(_Out):
    invalidated: Observation
    created: Observation


class NodeHit(_Out):
    entity: Entity
    relations: list[Relation]
    score: int


class NodeHits(_Out):
    results: list[NodeHit] = Field(description="best first")
    truncated: bool = False


class Subgraph(_Out):
    entities: list[Entity]
    relations: list[Relation]
    truncated: bool = Field(default=False, description="facts left out to stay within the response byte budget")


class GraphPage(Subgraph):
    next_cursor: str | None = Field(
        default=None,
        description="set when truncated: pass as ?cursor= for the rest; an entity cut among its observations "
        "comes again on the next page with the others",
    )


class ProfileCard(_Out):
    text: str
    entities: list[Entity]
    relations: list[Relation] = Field(
        default_factory=list,
        description="the current relations the text tells, each on its source's line (or its target's when the "
        "source is not on the card), the newest max_observations a line",
    )
    truncated: bool = Field(default=False, description="facts left out to keep within the card's byte budget")


class Stored(_Out):
    stored: int


class Episode(_Out):
    id: str
    session_id: str | None
    project_id: str | None
    author: str | None
    text: str
    timestamp: str
    expires_at: str | None = Field(default=None, description="when the episode expires (null: never)")
    score: float | None = _optional("with ?q= only")


class Episodes(_Out):
    episodes: list[Episode]
    truncated: bool = False


class Remembered(_Out):
    stored: bool
    entity: str
    facts_added: int


class Related(_Out):
    related: bool
    source: str
    relation: str
    target: str


# -- service ---------------------------------------------------------------------------------------


class Health(_Out):
    status: Literal["ok", "degraded", "failing"]
    checks: dict[str, str]


class Capabilities(_Out):
    project_scoping: bool
    search_modes: list[SearchMode]
    default_search_mode: SearchMode
    graph: bool
    vector_backend: str | None
    embedder: str | None
    relevance_threshold: float
    """A ``min_score`` that keeps relevant and drops unrelated entries in every search mode."""


class EstimatedCost(_Out):
    """US dollars at list prices (``Usage.cost_basis`` says which), per part and in total."""

    api_gateway: float
    lambda_requests: float
    lambda_compute: float
    dynamodb_reads: float
    dynamodb_writes: float
    embeddings: float
    extraction_model: float = 0.0
    """The extraction model's tokens at the configured Bedrock model's list price; 0 when that model is not
    priced (``Usage.cost_basis`` says so): a model elsewhere, or a local one, which costs nothing per token."""
    total: float


class UsageDay(_Out):
    date: str
    requests: int
    items_stored: int
    embeddings: int
    read_units: int
    """DynamoDB read request units the day's requests consumed (counted from the items they read)."""
    write_units: int
    """DynamoDB write request units (transactions count twice), the meter's own writes included."""
    compute_gb_ms: int
    """Lambda duration of the requests' work at the API function's memory, in GB-milliseconds."""
    embedding_tokens: int
    """Titan v2 input tokens of the texts embedded (a cautious estimate: three characters a token)."""
    model_calls: int = 0
    """Calls to the extraction model (docs/extraction.md)."""
    model_input_tokens: int = 0
    model_output_tokens: int = 0
    estimated_cost_usd: EstimatedCost


class Usage(_Out):
    app: str
    days: list[UsageDay]
    cost_basis: str
    """How ``estimated_cost_usd`` is estimated: list prices, their region and dates; not a bill."""
