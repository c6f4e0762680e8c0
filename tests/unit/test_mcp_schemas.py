"""Each MCP tool advertises the arguments it accepts: an agent writes its calls from ``inputSchema``, so an
argument the tool reads but does not advertise is one no agent will ever send."""

from __future__ import annotations

import pytest

from agentmem.mcp.tools import TOOLS, Tool


def _accepted(tool: Tool) -> set[str]:
    return {field.alias or name for name, field in tool.arguments.model_fields.items()}


@pytest.mark.parametrize("tool", TOOLS.values(), ids=lambda tool: tool.name)
def test_the_input_schema_advertises_exactly_the_arguments_the_tool_reads(tool: Tool) -> None:
    assert set(tool.input_schema["properties"]) == _accepted(tool)


@pytest.mark.parametrize("tool", TOOLS.values(), ids=lambda tool: tool.name)
def test_the_arguments_the_schema_requires_are_those_without_a_default(tool: Tool) -> None:
    required = {field.alias or name for name, field in tool.arguments.model_fields.items() if field.is_required()}
    assert set(tool.input_schema.get("required", [])) == required
