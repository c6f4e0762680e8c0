"""Google ADK's own tests of its ``InMemoryMemoryService`` (tests/unittests/memory/test_in_memory_memory_service.py
in adk-python), ported: the same sessions and events, through ``AgentMemoryService`` to the default local
server (hybrid search with the local model, the adapter's default ``min_score``: the server's
``relevance_threshold``). Where ADK's test reads its service's private state, the port reads the same
facts through the API (the entries a session holds)."""

from __future__ import annotations

import asyncio
import unicodedata
import uuid
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx
import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from agentmem.adk import AgentMemoryService
from tests.e2e.conftest import LiveServer, start_server

T = TypeVar("T")
APP = "test-app"


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def _event(event_id: str, timestamp: float, text: str | None, author: str = "user") -> Event:
    content = types.Content(parts=[types.Part(text=text)]) if text is not None else None
    return Event(id=event_id, invocation_id=f"inv-{event_id}", author=author, timestamp=timestamp, content=content)


@pytest.fixture
def users() -> tuple[str, str]:
    """ADK's test-user and another-user, fresh for each test (the server is shared by the module)."""
    run = uuid.uuid4().hex[:8]
    return f"test-user-{run}", f"another-user-{run}"


def _sessions(user: str, other: str) -> dict[str, Session]:
    return {
        "1": Session(
            app_name=APP,
            user_id=user,
            id="session-1",
            last_update_time=1000,
            events=[
                _event("event-1a", 12345, "The ADK is a great toolkit."),
                _event("event-1b", 12346, None),  # no content: ignored by the service
                _event("event-1c", 12347, "I agree. The Agent Development Kit (ADK) rocks!", author="model"),
            ],
        ),
        "2": Session(
            app_name=APP,
            user_id=user,
            id="session-2",
            last_update_time=2000,
            events=[_event("event-2a", 54321, "I like to code in Python.")],
        ),
        "other": Session(
            app_name=APP,
            user_id=other,
            id="session-3",
            last_update_time=3000,
            events=[_event("event-3a", 60000, "This is a secret.")],
        ),
        "empty": Session(app_name=APP, user_id=user, id="session-4", last_update_time=4000),
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live = start_server(tmp_path_factory.mktemp("adk") / "memory.db")
    yield live
    live.stop()


def _texts_of_session(server: LiveServer, user: str, session_id: str | None) -> list[str]:
    """The texts a session holds, oldest first (what ADK's tests read from ``_session_events``)."""
    body: dict[str, Any] = {"filter": {"session_id": session_id} if session_id else {}, "limit": 100}
    reply = httpx.post(f"{server.url}/v1/apps/{APP}/users/{user}/memories/query", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    return [e["content"]["parts"][0]["text"] for e in reversed(reply.json()["entries"])]


def test_add_session_to_memory(server: LiveServer, users: tuple[str, str]) -> None:
    sessions = _sessions(*users)
    _run(AgentMemoryService(server.url).add_session_to_memory(sessions["1"]))
    # The event with no content was filtered out
    assert _texts_of_session(server, users[0], "session-1") == [
        "The ADK is a great toolkit.",
        "I agree. The Agent Development Kit (ADK) rocks!",
    ]


def test_add_events_to_memory_with_explicit_events(server: LiveServer, users: tuple[str, str]) -> None:
    session = _sessions(*users)["1"]
    _run(
        AgentMemoryService(server.url).add_events_to_memory(
            app_name=APP, user_id=users[0], session_id=session.id, events=[session.events[0]]
        )
    )
    assert _texts_of_session(server, users[0], "session-1") == ["The ADK is a great toolkit."]


def test_add_events_to_memory_without_session_id_uses_default_bucket(
    server: LiveServer, users: tuple[str, str]
) -> None:
    session = _sessions(*users)["1"]
    _run(
        AgentMemoryService(server.url).add_events_to_memory(app_name=APP, user_id=users[0], events=[session.events[0]])
    )
    assert _texts_of_session(server, users[0], None) == ["The ADK is a great toolkit."]


def test_add_events_to_memory_appends_without_replacing(server: LiveServer, users: tuple[str, str]) -> None:
    sessions = _sessions(*users)
    service = AgentMemoryService(server.url)

    async def scenario() -> None:
        await service.add_session_to_memory(sessions["1"])
        await service.add_events_to_memory(
            app_name=APP,
            user_id=users[0],
            session_id="session-1",
            events=[_event("event-1d", 12348, "A new fact.")],
        )

    _run(scenario())
    assert _texts_of_session(server, users[0], "session-1") == [
        "The ADK is a great toolkit.",
        "I agree. The Agent Development Kit (ADK) rocks!",
        "A new fact.",
    ]


def test_add_events_to_memory_deduplicates_event_ids(server: LiveServer, users: tuple[str, str]) -> None:
    sessions = _sessions(*users)
    service = AgentMemoryService(server.url)

    async def scenario() -> None:
        await service.add_session_to_memory(sessions["1"])
        duplicate = _event("event-1a", 12349, "Updated duplicate text.")
        await service.add_events_to_memory(app_name=APP, user_id=users[0], session_id="session-1", events=[duplicate])

    _run(scenario())
    assert _texts_of_session(server, users[0], "session-1") == [
        "The ADK is a great toolkit.",
        "I agree. The Agent Development Kit (ADK) rocks!",
    ]


def test_add_session_with_no_events_to_memory(server: LiveServer, users: tuple[str, str]) -> None:
    _run(AgentMemoryService(server.url).add_session_to_memory(_sessions(*users)["empty"]))
    assert _texts_of_session(server, users[0], "session-4") == []


def _search(server: LiveServer, sessions: list[Session], user: str, query: str) -> list[str]:
    service = AgentMemoryService(server.url)

    async def scenario() -> list[str]:
        for session in sessions:
            await service.add_session_to_memory(session)
        found = await service.search_memory(app_name=APP, user_id=user, query=query)
        return [m.content.parts[0].text for m in found.memories]

    return _run(scenario())


def test_search_memory_simple_match(server: LiveServer, users: tuple[str, str]) -> None:
    sessions = _sessions(*users)
    found = _search(server, [sessions["1"], sessions["2"]], users[0], "Python")
    assert found == ["I like to code in Python."]


def test_search_memory_case_insensitive_match(server: LiveServer, users: tuple[str, str]) -> None:
    found = _search(server, [_sessions(*users)["1"]], users[0], "development")
    assert found == ["I agree. The Agent Development Kit (ADK) rocks!"]


def test_search_memory_multiple_matches(server: LiveServer, users: tuple[str, str]) -> None:
    found = _search(server, [_sessions(*users)["1"]], users[0], "How about ADK?")
    assert len(found) == 2
    assert set(found) == {"The ADK is a great toolkit.", "I agree. The Agent Development Kit (ADK) rocks!"}


def test_search_memory_no_match(server: LiveServer, users: tuple[str, str]) -> None:
    assert _search(server, [_sessions(*users)["1"]], users[0], "nonexistent") == []


def test_search_memory_is_scoped_by_user(server: LiveServer, users: tuple[str, str]) -> None:
    sessions = _sessions(*users)
    # "secret" exists only for the other user
    assert _search(server, [sessions["1"], sessions["other"]], users[0], "secret") == []
    assert _search(server, [], users[1], "secret") == ["This is a secret."]


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.mark.parametrize(
    ("event_text", "query", "expected_count"),
    [
        # ADK's test_search_memory_non_latin, case for case: one memory stored, found or not
        ("私の名前は太郎です", "太郎", 1),
        ("私の名前は太郎です", "天気", 0),
        ("我喜欢机器学习", "机器学习", 1),
        ("我喜欢机器学习", "天气预报", 0),
        ("제 이름은 민수입니다", "민수입니다", 1),
        ("Меня зовут Алексей", "Алексей", 1),
        ("太郎 works at ABC Corp", "太郎", 1),
        ("太郎 works at ABC Corp", "ABC", 1),
        ("私はPythonでADKを使っています", "Python", 1),
        ("私はPythonでADKを使っています", "adk", 1),
        ("我用Python写代码", "python", 1),
        ("私はPythonでADKを使っています", "使って", 1),
        ("私はPythonでADKを使っています", "Java", 0),
        ("I like to code in Python.", "thon", 0),
        ("私はPythonでADKを使っています", "thon", 0),
        (_nfd("私はCaféでADKを使っています"), "Café", 1),
        (_nfd("私はCaféでADKを使っています"), "café", 1),
        (_nfd("私はCaféでADKを使っています"), "Ruby", 0),
        (_nfd("Meet at the Café"), "Café", 1),
        ("Meet at the Café", _nfd("Café"), 1),
        (_nfd("プログラミングを学ぶ"), "プログラミング", 1),
        (_nfd("제 이름은 민수입니다"), "민수입니다", 1),
        # the same expectations in the scripts ADK's test leaves out (ours: Arabic, Cyrillic, Korean)
        ("أحب تعلم الآلة", "الآلة", 1),
        ("أحب تعلم الآلة", "الطقس", 0),
        ("Меня зовут Алексей", "погода", 0),
        ("제 이름은 민수입니다", "날씨", 0),
    ],
)
def test_search_memory_non_latin(
    server: LiveServer, users: tuple[str, str], event_text: str, query: str, expected_count: int
) -> None:
    session = Session(
        app_name=APP,
        user_id=users[0],
        id="session-i18n",
        last_update_time=7000,
        events=[_event("event-i18n", 90000, event_text)],
    )
    assert len(_search(server, [session], users[0], query)) == expected_count
