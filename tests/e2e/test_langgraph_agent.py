"""A LangGraph agent (``create_react_agent``) with ``AgentMemoryStore`` and LangMem's memory tools, against
the real local server. A scripted chat model stands in for the LLM: it calls LangMem's tools as a model
would, and what the tools wrote and found is checked through the service's own REST API."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt import create_react_agent
from langmem import create_manage_memory_tool, create_search_memory_tool

from agentmem.langgraph import AgentMemoryStore
from tests.e2e.conftest import LiveServer, start_server

pytestmark = pytest.mark.xdist_group("langgraph")

APP = "agent-app"


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with the scripted messages in turn; tools are bound by the agent and called by the script."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "call-" + uuid.uuid4().hex[:8]}])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    running = start_server(tmp_path_factory.mktemp("agent") / "memory.db", args=("--workers", "1"))
    yield running
    running.stop()


def _agent(store: AgentMemoryStore, script: list[AIMessage]) -> Any:
    namespace = ("memories", "{langgraph_user_id}")
    tools = [create_manage_memory_tool(namespace=namespace), create_search_memory_tool(namespace=namespace)]
    return create_react_agent(ScriptedChatModel(messages=iter(script)), tools=tools, store=store)


def test_a_react_agent_remembers_with_langmem_tools_and_finds_it_in_a_later_conversation(server: LiveServer) -> None:
    store = AgentMemoryStore(server.base_url, app=APP)
    user = "ana-" + uuid.uuid4().hex[:6]
    config = {"configurable": {"langgraph_user_id": user}}

    first = _agent(
        store,
        [
            _call("manage_memory", content="Ana prefers dark mode in every app", action="create"),
            _call("manage_memory", content="Ana's dog is called Pixel", action="create"),
            AIMessage(content="Noted."),
        ],
    )
    result = first.invoke({"messages": [("user", "I like dark mode. My dog is Pixel.")]}, config)
    created = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(created) == 2
    assert all("created memory" in str(m.content) for m in created)

    with httpx.Client(base_url=server.base_url) as http:  # the memories are the user's, in the service
        entries = http.get(f"/v1/apps/{APP}/users/{user}/memories").json()["entries"]
        hits = http.post(
            f"/v1/apps/{APP}/users/{user}/memories/search", json={"query": "what is the dog's name?", "top_k": 1}
        ).json()["entries"]
    assert sorted(e["content"]["parts"][0]["text"] for e in entries) == [
        "Ana prefers dark mode in every app",
        "Ana's dog is called Pixel",
    ]
    assert hits[0]["content"]["parts"][0]["text"] == "Ana's dog is called Pixel"

    later = _agent(
        store,
        [_call("search_memory", query="which theme does the user like?", limit=1), AIMessage(content="Dark mode.")],
    )
    result = later.invoke({"messages": [("user", "Which theme do I like?")]}, config)
    found = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(found) == 1
    assert "dark mode" in str(found[0].content)

    # LangMem updates and deletes by key: the store's put and delete
    key = store.search(("memories", user), query="dog")[0].key
    fix = _agent(
        store,
        [
            _call("manage_memory", content="Ana's dog is called Pixel and is five", action="update", id=key),
            AIMessage(content="Updated."),
        ],
    )
    fix.invoke({"messages": [("user", "Pixel turned five.")]}, config)
    assert store.get(("memories", user), key).value["content"] == "Ana's dog is called Pixel and is five"
    forget = _agent(store, [_call("manage_memory", action="delete", id=key), AIMessage(content="Forgotten.")])
    forget.invoke({"messages": [("user", "Forget my dog.")]}, config)
    assert store.get(("memories", user), key) is None
    assert len(store.search(("memories", user))) == 1


def test_another_users_memories_stay_out_of_reach(server: LiveServer) -> None:
    store = AgentMemoryStore(server.base_url, app=APP)
    owner, other = "u-" + uuid.uuid4().hex[:6], "u-" + uuid.uuid4().hex[:6]
    writer = _agent(store, [_call("manage_memory", content="The owner's bank is Northbank"), AIMessage(content="ok")])
    writer.invoke({"messages": [("user", "remember my bank")]}, {"configurable": {"langgraph_user_id": owner}})
    reader = _agent(store, [_call("search_memory", query="bank"), AIMessage(content="nothing")])
    result = reader.invoke({"messages": [("user", "my bank?")]}, {"configurable": {"langgraph_user_id": other}})
    found = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(found) == 1
    assert "Northbank" not in str(found[0].content)
