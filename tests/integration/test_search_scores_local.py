"""Scores an agent can put in a prompt (issue 43, point 6): on the default local model (the small e5 that
`make serve` runs), through the real handler, on SQLite and DynamoDB (moto).

A question about a person ranks what is said of that person above a mention of the name alone, and the name
no longer lifts the mention's score near 1 (in a store this small the mention still scores above the
threshold: the user's own level is mostly its unrelated memories); with ``min_score`` at the
capabilities' ``relevance_threshold``, in every mode, a question about nothing stored gets nothing and a
one-word question does not keep an unrelated ticket.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.local import LocalEmbedder
from agentmem.settings import Settings
from agentmem.stores.table import Table
from tests.support import ApiClient, scope_path, text_entry

USER = scope_path("app", "maria")
MODES = ("keyword", "semantic", "hybrid")
STORED = (
    "Nice to meet you, Ana.",
    "Ana works as a nurse at the city hospital.",
    "Ticket 5120: I was charged twice for the annual plan and want one payment refunded.",
    "Our cat Miso sleeps on the radiator all afternoon.",
    "hello",
    "We are flying to Lisbon for a long weekend in October.",
    "I take my coffee black with no sugar.",
    "The quarterly report is due next Friday.",
    "My brother Jonas teaches piano in Leipzig.",
    "Remind me to call the plumber about the dripping tap.",
    "I started learning Portuguese last month.",
    "The car needs new winter tyres before December.",
)


@pytest.fixture(scope="module")
def local_model() -> LocalEmbedder:
    """One instance of the default model for the module (loading it is the slow part)."""
    return LocalEmbedder()


@pytest.fixture
def api(table: Table, local_model: LocalEmbedder) -> Iterator[ApiClient]:
    container = Container(Settings(embedder="local"), table=table, embedder=local_model)
    set_container(container)
    client = ApiClient()
    for text in STORED:
        assert client.post(f"{USER}/memories", {"entry": text_entry(text)}).status == 201
    yield client
    set_container(None)


def _search(api: ApiClient, query: str, mode: str, **extra: object) -> list[tuple[str, float]]:
    reply = api.post(f"{USER}/memories/search", {"query": query, "mode": mode, **extra})
    assert reply.status == 200, reply.body
    return [(e["content"]["parts"][0]["text"], e["score"]) for e in reply.body["entries"]]


def _threshold(api: ApiClient) -> float:
    threshold = api.get("/v1/capabilities").body["relevance_threshold"]
    assert 0 < threshold < 1
    return threshold  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_question_about_a_person_ranks_what_is_said_of_them_above_the_name(api: ApiClient, mode: str) -> None:
    # When asking what a person does, the top 10 whatever their score
    found = dict(_search(api, "what does ana do for a living?", mode))
    ranked = list(found)
    # Then the entry that answers ranks above the greeting that only names her, and is kept at the threshold
    assert ranked.index(STORED[1]) < ranked.index(STORED[0])
    assert found[STORED[1]] >= _threshold(api)
    assert found[STORED[1]] - found[STORED[0]] > 0.1


def test_the_name_a_hybrid_hit_shares_with_the_question_does_not_saturate_its_score(api: ApiClient) -> None:
    # The greeting holds the question's rarest word: hybrid scored it 0.96 (the answer 0.99), its semantic
    # score 0.74; the words it holds no longer lift it near 1
    hybrid = dict(_search(api, "what does ana do for a living?", "hybrid"))
    semantic = dict(_search(api, "what does ana do for a living?", "semantic"))
    assert hybrid[STORED[0]] < 0.9
    assert hybrid[STORED[0]] - semantic[STORED[0]] < 0.05


def test_a_keyword_match_on_the_name_alone_does_not_saturate(api: ApiClient) -> None:
    # Keyword matching cannot tell what answers, but the name alone covers only part of the question
    found = dict(_search(api, "what does ana do for a living?", "keyword"))
    assert found[STORED[0]] < _threshold(api)
    assert found[STORED[1]] < _threshold(api)


@pytest.mark.parametrize("mode", MODES)
def test_a_question_about_nothing_stored_gets_nothing_at_the_threshold(api: ApiClient, mode: str) -> None:
    # Without min_score the top hits come back, every one scored below the threshold
    everything = _search(api, "quantum chromodynamics", mode)
    assert all(score < _threshold(api) for _, score in everything)
    # With min_score at the threshold nothing does
    assert _search(api, "quantum chromodynamics", mode, min_score=_threshold(api)) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_one_word_question_does_not_keep_the_double_charge(api: ApiClient, mode: str) -> None:
    # Without min_score the ticket may come back, scored below the threshold
    everything = dict(_search(api, "pet", mode))
    assert everything.get(STORED[2], 0.0) < _threshold(api)
    # With min_score at the threshold it does not, nor the greeting
    kept = [text for text, _ in _search(api, "pet", mode, min_score=_threshold(api))]
    assert STORED[2] not in kept
    assert "hello" not in kept
