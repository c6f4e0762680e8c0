"""Requests of the knowledge-graph routes (``{scope}/graph``) and the agent tools."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    WithJsonSchema,
    model_validator,
)

from agentmem.keys import validate_id
from agentmem.models.memory import (
    ID_SCHEMA,
    MAX_ENTRIES_PER_REQUEST,
    MAX_TEXT_BYTES,
    MemoryEntry,
    ProjectId,
    SessionId,
    Timestamp,
)

MAX_FACTS_PER_REQUEST = 100
MAX_OBSERVATIONS_PER_REQUEST = 500
"""Observations one ``POST /graph/entities`` may carry in all (each writes 3 items and its postings)."""
MAX_TYPE_BYTES = 256


def _check_name(value: str) -> str:
    return validate_id(value, "name")


def _check_type(value: str) -> str:
    return validate_id(value, "entity_type")


def _check_fact(value: str) -> str:
    if not value.strip():
        raise ValueError("a fact must hold some text")
    if len(value.encode("utf-8")) > MAX_TEXT_BYTES:
        raise ValueError(f"a fact holds at most {MAX_TEXT_BYTES} bytes")
    return value


EntityName = Annotated[StrictStr, AfterValidator(_check_name), ID_SCHEMA]
EntityType = Annotated[StrictStr, AfterValidator(_check_type), ID_SCHEMA]
Fact = Annotated[
    StrictStr,
    AfterValidator(_check_fact),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_BYTES, "description": "at most 64 KiB"}),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EntityIn(_Strict):
    name: EntityName
    entity_type: EntityType | None = None
    observations: list[Fact] = Field(default_factory=list, max_length=MAX_FACTS_PER_REQUEST)


class CreateEntitiesRequest(_Strict):
    entities: list[EntityIn] = Field(min_length=1, max_length=MAX_ENTRIES_PER_REQUEST)
    project_id: ProjectId | None = None

    @model_validator(mode="after")
    def _bounded(self) -> CreateEntitiesRequest:
        total = sum(len(e.observations) for e in self.entities)
        if total > MAX_OBSERVATIONS_PER_REQUEST:
            raise ValueError(f"{total} observations in all; a request holds at most {MAX_OBSERVATIONS_PER_REQUEST}")
        return self


class AddObservationsRequest(_Strict):
    observations: list[Fact] = Field(min_length=1, max_length=MAX_FACTS_PER_REQUEST)
    valid_from: Timestamp | None = None
    project_id: ProjectId | None = None


class InvalidateRequest(_Strict):
    valid_to: Timestamp | None = None
    project_id: ProjectId | None = None


class SupersedeRequest(_Strict):
    content: Fact
    project_id: ProjectId | None = None


class RelationIn(_Strict):
    source: EntityName
    relation_type: EntityType
    target: EntityName


class CreateRelationsRequest(_Strict):
    relations: list[RelationIn] = Field(min_length=1, max_length=MAX_ENTRIES_PER_REQUEST)
    project_id: ProjectId | None = None


class AddEpisodesRequest(_Strict):
    session_id: SessionId
    entries: list[MemoryEntry] = Field(max_length=MAX_ENTRIES_PER_REQUEST)
    project_id: ProjectId | None = None


class RememberRequest(_Strict):
    """The ``remember`` agent tool: facts about one entity."""

    entity: EntityName = Field(description="who or what the facts are about, e.g. 'Alice' or 'the user'")
    entity_type: EntityType | None = Field(
        default=None, description="a kind such as person, project, preference; omitted keeps the known type"
    )
    facts: list[Fact] = Field(min_length=1, max_length=MAX_FACTS_PER_REQUEST, description="short atomic facts")
    project_id: ProjectId | None = None


class RelateRequest(_Strict):
    """The ``relate`` agent tool: one typed edge between two entities."""

    source: EntityName = Field(description="the entity the relation starts from")
    relation: EntityType = Field(description="the relation in active voice, e.g. works_at, prefers")
    target: EntityName = Field(description="the entity the relation points to")
    project_id: ProjectId | None = None


def validate_names(names: list[str]) -> list[str]:
    return [validate_id(n, "name") for n in names]
