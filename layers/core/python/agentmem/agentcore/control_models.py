"""The request bodies of the AgentCore control plane (botocore's ``bedrock-agentcore-control``) for memories:
CreateMemory, UpdateMemory and ListMemories, with the model's patterns and bounds checked here."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from agentmem.agentcore.models import MaxResults, _matching, _Shape, _Union
from agentmem.extraction.config import MAX_INSTRUCTION_CHARS

NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,47}")
Name = Annotated[str, _matching(NAME, "name", 1, 48)]
Description = Annotated[str, Field(min_length=1, max_length=4096)]
Template = Annotated[str, Field(min_length=1, max_length=1024)]
Prompt = Annotated[str, Field(min_length=1, max_length=MAX_INSTRUCTION_CHARS)]


class Override(_Shape):
    append_to_prompt: Prompt
    model_id: str = Field(min_length=1, max_length=2048)


class ExtractionOverride(_Shape):
    extraction: Override | None = None
    consolidation: Override | None = None


class SummaryOverride(_Shape):
    consolidation: Override | None = None


class EpisodicOverride(_Shape):
    extraction: Override | None = None
    consolidation: Override | None = None
    reflection: Override | None = None


class CustomConfiguration(_Union):
    semantic_override: ExtractionOverride | None = None
    summary_override: SummaryOverride | None = None
    user_preference_override: ExtractionOverride | None = None
    episodic_override: EpisodicOverride | None = None
    self_managed_configuration: dict[str, object] | None = None


class BuiltInStrategy(_Shape):
    name: Name
    description: Description | None = None
    namespaces: list[Template] | None = Field(default=None, min_length=1, max_length=1)
    namespace_templates: list[Template] | None = Field(default=None, min_length=1, max_length=1)


class CustomStrategy(BuiltInStrategy):
    configuration: CustomConfiguration | None = None


class StrategyInput(_Union):
    semantic_memory_strategy: BuiltInStrategy | None = None
    summary_memory_strategy: BuiltInStrategy | None = None
    user_preference_memory_strategy: BuiltInStrategy | None = None
    episodic_memory_strategy: BuiltInStrategy | None = None
    custom_memory_strategy: CustomStrategy | None = None


class CreateMemoryRequest(_Shape):
    name: Name
    event_expiry_duration: int = Field(ge=3, le=3650)
    description: Description | None = None
    memory_strategies: list[StrategyInput] | None = Field(default=None, max_length=6)
    client_token: str | None = Field(default=None, max_length=500)
    encryption_key_arn: str | None = None
    memory_execution_role_arn: str | None = None


class ModifyConfiguration(_Shape):
    extraction: dict[str, object] | None = None
    consolidation: dict[str, object] | None = None


class ModifyStrategy(_Shape):
    memory_strategy_id: str = Field(min_length=1, max_length=200)
    description: Description | None = None
    namespaces: list[Template] | None = Field(default=None, min_length=1, max_length=1)
    namespace_templates: list[Template] | None = Field(default=None, min_length=1, max_length=1)
    configuration: ModifyConfiguration | None = None


class StrategyRef(_Shape):
    memory_strategy_id: str = Field(min_length=1, max_length=200)


class ModifyStrategies(_Shape):
    add_memory_strategies: list[StrategyInput] | None = Field(default=None, max_length=6)
    modify_memory_strategies: list[ModifyStrategy] | None = Field(default=None, max_length=6)
    delete_memory_strategies: list[StrategyRef] | None = Field(default=None, max_length=6)


class UpdateMemoryRequest(_Shape):
    client_token: str | None = Field(default=None, max_length=500)
    description: Description | None = None
    event_expiry_duration: int | None = Field(default=None, ge=3, le=3650)
    memory_strategies: ModifyStrategies | None = None
    memory_execution_role_arn: str | None = None


class ListMemoriesRequest(_Shape):
    max_results: MaxResults = 20
    next_token: str | None = Field(default=None, max_length=4096)


View = Literal["full", "without_decryption"]
