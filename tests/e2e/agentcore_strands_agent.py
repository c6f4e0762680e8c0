"""A Strands agent with the AgentCore Memory session manager, pointed at this service by the environment only
(``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``), and a scripted model: no network but the local server.

Run by tests/e2e/test_agentcore_clients.py in the agents' own environment (requirements-agents.txt: Strands
pins an MCP SDK older than this repository's). Usage: ``python agentcore_strands_agent.py <memory id>``;
prints one JSON document with what each step saw.

1. Session ``trip-1``: the user states a preference; the model calls the ``remember`` tool, which writes a
   memory record in ``/facts/{actorId}/`` (``BatchCreateMemoryRecords``), then answers.
2. The same session, a new agent (a new process would do the same): the session manager restores the
   conversation from ``ListEvents``.
3. Session ``trip-2``: the session manager retrieves the fact (``RetrieveMemoryRecords``) into the user's
   message before the model is called: the agent remembers across sessions.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from bedrock_agentcore.memory import MemoryClient
from bedrock_agentcore.memory.integrations.strands.config import AgentCoreMemoryConfig, RetrievalConfig
from bedrock_agentcore.memory.integrations.strands.session_manager import AgentCoreMemorySessionManager
from strands import Agent, tool
from strands.models.model import Model

MEMORY_ID = sys.argv[1]
ACTOR = "alice"
NAMESPACE = "/facts/{actorId}/"


class ScriptedModel(Model):
    """Answers each call with the next scripted turn (text, or a tool call) and keeps what it was sent."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns = list(turns)
        self.seen: list[list[dict[str, Any]]] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        self.seen.append(json.loads(json.dumps(messages, default=str)))
        turn = self.turns.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if "tool" in turn:
            start = {"toolUse": {"toolUseId": f"call-{len(self.seen)}", "name": turn["tool"]}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(turn["input"])}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn["text"]}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        yield {
            "metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}
        }


@tool
def remember(fact: str) -> str:
    """Keep a fact about the user for later conversations.

    Args:
        fact: the fact, in one sentence
    """
    MemoryClient(region_name="us-east-1").batch_create_memory_records(
        memoryId=MEMORY_ID,
        records=[
            {
                "requestIdentifier": "fact",
                "namespaces": [NAMESPACE.format(actorId=ACTOR)],
                "content": {"text": fact},
                "timestamp": time.time(),
            }
        ],
    )
    return "remembered"


def session_manager(session_id: str) -> AgentCoreMemorySessionManager:
    config = AgentCoreMemoryConfig(
        memory_id=MEMORY_ID,
        session_id=session_id,
        actor_id=ACTOR,
        retrieval_config={NAMESPACE: RetrievalConfig(top_k=3, relevance_score=0.1)},
    )
    return AgentCoreMemorySessionManager(config, region_name="us-east-1")


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [block["text"] for message in messages for block in message.get("content", []) if "text" in block]


def main() -> None:
    report: dict[str, Any] = {}
    # 1. the first conversation: the model keeps a fact with its tool
    model = ScriptedModel(
        [
            {"tool": "remember", "input": {"fact": "Alice prefers aisle seats on long flights"}},
            {"text": "Noted: aisle seats."},
        ]
    )
    agent = Agent(model=model, tools=[remember], session_manager=session_manager("trip-1"), callback_handler=None)
    agent("Please remember that I prefer aisle seats on long flights.")
    report["first_reply"] = texts([agent.messages[-1]])
    # 2. the same session again: its conversation is restored from the events
    again = Agent(
        model=ScriptedModel([{"text": "Welcome back."}]),
        tools=[remember],
        session_manager=session_manager("trip-1"),
        callback_handler=None,
    )
    report["restored"] = texts(again.messages)
    # 3. a new session: the fact is retrieved into the user's message before the model answers
    later = ScriptedModel([{"text": "An aisle seat, as you like."}])
    fresh = Agent(model=later, tools=[remember], session_manager=session_manager("trip-2"), callback_handler=None)
    report["new_session_history"] = texts(fresh.messages)
    fresh("Book me a seat for the flight to Lima.")
    report["model_saw"] = texts(later.seen[0])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
