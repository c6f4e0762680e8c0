"""What an MCP tool is (its schemas, its arguments' model, its work) and the helpers every tool module
shares: :mod:`agentmem.mcp.tools` (the reference server's tools and the graph's), :mod:`agentmem.mcp.memory_tools`
(the memory entries')."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from agentmem.mcp.results import ToolResult

if TYPE_CHECKING:
    from agentmem.graph.service import GraphMemoryService
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService

DRAFT_07 = "http://json-schema.org/draft-07/schema#"


class Services(Protocol):
    """What the tools run on: the container in the API and in ``agentmem mcp``."""

    @property
    def graph(self) -> GraphMemoryService: ...

    @property
    def memory(self) -> MemoryService: ...


class ToolArgumentsError(Exception):
    """The arguments do not match the tool's input schema (an ``isError`` result, not a protocol error)."""


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: dict[str, bool]
    run: Callable[[Services, Scope, Any], ToolResult]
    """The tool's work, given its arguments parsed by ``arguments``."""
    arguments: type[BaseModel]
    """The arguments' model: what ``input_schema`` advertises, checked (tests/unit/test_mcp_schemas.py)."""

    def call(self, services: Services, scope: Scope, arguments: dict[str, Any]) -> ToolResult:
        """Parse ``arguments`` (ToolArgumentsError when they do not fit) and run the tool."""
        return self.run(services, scope, parse(self.arguments, self.name, arguments))

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": dict(self.annotations),
        }


# -- schemas -----------------------------------------------------------------------------------------


def object_schema(properties: dict[str, Any], required: Sequence[str] = (), *, closed: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


def top_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": DRAFT_07, **schema}


CUT = {
    "truncated": {"type": "boolean", "description": "present and true when the result was cut to fit"},
    "message": {"type": "string", "description": "what was cut and how to see the rest"},
}


WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
DELETE = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], tool: str, arguments: dict[str, Any]) -> M:
    try:
        return model.model_validate(arguments)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()[:10]
        )
        raise ToolArgumentsError(f"Invalid arguments for tool {tool}: {problems}") from None
