"""The graph tokenizer, the SPEC section 2 score, the time slices and the profile card format."""

from __future__ import annotations

from agentmem.graph.paging import format_profile_card
from agentmem.graph.scoring import index_tokens, score_entity
from agentmem.graph.timeslice import TimeSlice
from agentmem.search import changes


def test_tokens_are_lowercase_three_plus_characters_without_stopwords() -> None:
    # Given text with short words, stopwords, punctuation and accents
    # When tokenised for the graph
    tokens = index_tokens("The CAFÉ is on Main-Street, go to it at 9am")
    # Then only 3+ character non-stopwords remain, lowercased and folded, once each
    assert tokens == ["cafe", "main", "street", "9am"]


def test_cjk_text_gives_characters_and_pairs() -> None:
    assert index_tokens("住在東京") == ["住", "在", "東", "京", "住在", "在東", "東京"]


def test_overlong_tokens_are_indexed_by_a_short_digest_that_only_the_same_word_matches() -> None:
    tokens = index_tokens("x" * 33 + " short")
    assert tokens[1:] == ["short"]
    assert tokens[0].startswith("~")
    assert len(tokens[0]) <= 32
    assert index_tokens("x" * 33) == tokens[:1]
    assert index_tokens("x" * 34) != tokens[:1]


def test_a_text_is_indexed_by_its_first_32_distinct_tokens() -> None:
    words = [f"word{i:03d}" for i in range(100)]
    assert index_tokens(" ".join(words + words)) == words[:32]


def test_score_adds_three_for_name_two_for_type_one_per_observation() -> None:
    # Given an entity whose name, type and two of three observations hold "coffee"
    observations = ["drinks coffee daily", "coffee with oat milk", "likes tea"]
    # When scored for the query "coffee"
    score = score_entity(["coffee"], "Coffee Shop", "coffee place", observations)
    # Then 3 (name) + 2 (type) + 2 (observations)
    assert score == 7


def test_score_counts_each_query_token_once_and_ignores_non_matches() -> None:
    assert score_entity(["alice", "alice", "paris"], "Alice", "person", ["lives in Paris"]) == 4
    assert score_entity(["bob"], "Alice", "person", ["lives in Paris"]) == 0


def test_current_slice_shows_only_unexpired_facts() -> None:
    live = {"recorded_at": "2026-01-01T00:00:00.000Z", "valid_from": "2026-01-01T00:00:00.000Z", "expired_at": None}
    ended = {**live, "valid_to": "2026-02-01T00:00:00.000Z", "expired_at": "2026-02-01T00:00:00.000Z"}
    assert TimeSlice().shows(live)
    assert not TimeSlice().shows(ended)


def test_valid_time_slice_uses_valid_from_and_valid_to() -> None:
    # Given a fact true from January to March, invalidated (recorded) in April
    fact = {
        "valid_from": "2026-01-01T00:00:00.000Z",
        "valid_to": "2026-03-01T00:00:00.000Z",
        "recorded_at": "2026-01-01T00:00:00.000Z",
        "expired_at": "2026-04-01T00:00:00.000Z",
    }
    # Then it is shown as of February, not as of December or the previous year
    assert TimeSlice(as_of="2026-02-01T00:00:00.000Z").shows(fact)
    assert not TimeSlice(as_of="2026-12-01T00:00:00.000Z").shows(fact)
    assert not TimeSlice(as_of="2025-12-01T00:00:00.000Z").shows(fact)
    # And as known in March (before the invalidation was recorded) it was still open-ended in December
    assert TimeSlice(as_of="2026-12-01T00:00:00.000Z", recorded_as_of="2026-03-15T00:00:00.000Z").shows(fact)


def test_recorded_slice_shows_what_was_held_current_then() -> None:
    fact = {
        "valid_from": "2026-01-01T00:00:00.000Z",
        "valid_to": "2026-03-01T00:00:00.000Z",
        "recorded_at": "2026-01-10T00:00:00.000Z",
        "expired_at": "2026-04-01T00:00:00.000Z",
    }
    assert not TimeSlice(recorded_as_of="2026-01-05T00:00:00.000Z").shows(fact)
    assert TimeSlice(recorded_as_of="2026-03-20T00:00:00.000Z").shows(fact)
    assert not TimeSlice(recorded_as_of="2026-04-01T00:00:00.000Z").shows(fact)


def test_profile_card_format() -> None:
    # Given two entities, one without observations
    entities = [
        {"name": "Alice", "entity_type": "person", "observations": [{"content": "likes tea"}, {"content": "in Paris"}]},
        {"name": "Acme", "entity_type": "general", "observations": []},
    ]
    # Then the card has the header and one bullet line per entity (no type when it is the default one)
    assert format_profile_card(entities) == "[Known about the user]\n• Alice (person): likes tea; in Paris\n• Acme"
    assert format_profile_card([]) == ""
    # And relations follow the facts on their source's line, or whole on their target's
    relations = [
        {"source": "Alice", "relation_type": "works_at", "target": "Acme"},
        {"source": "Bob", "relation_type": "knows", "target": "Alice"},
    ]
    assert format_profile_card(entities, relations) == (
        "[Known about the user]\n• Alice (person): likes tea; in Paris; works_at Acme; Bob knows Alice\n• Acme"
    )


def test_item_kind_tells_facts_from_bookkeeping() -> None:
    from agentmem.graph import records

    # Given the sort keys the graph writes
    assert records.item_kind(records.entity_sk("Alice")) == "entities"
    assert records.item_kind(records.observation_sk("Alice", "01ID")) == "observations"
    assert records.item_kind(records.relation_sk("01ID")) == "relations"
    assert records.item_kind(records.episode_sk("01ID")) == "episodes"
    # Then every index, lock, pointer and list item is bookkeeping
    bookkeeping = [
        records.pointer_sk("01ID"),
        records.current_observation_sk("Alice", "likes tea"),
        records.link_sk("Alice", "01ID"),
        records.current_relation_sk("Alice", "knows", "Bob"),
        records.updated_sk("2026-01-01T00:00:00.000Z", "Alice"),
        records.name_posting_sk("alice", "Alice"),
        records.type_posting_sk("person", "person"),
        records.type_member_sk("person", "Alice"),
        records.observation_posting_sk("tea", "Alice", "01ID"),
        f"{records.SEGMENT}1a2b#01ID",  # search segments of older data
        changes.GRAPH.stats_sk,
        changes.GRAPH.log_sk(7),
        records.episode_session_prefix("s1") + "01ID",
        "GPT#cat#01ID",
        "GPSTATS",
    ]
    assert [records.item_kind(sk) for sk in bookkeeping] == [None] * len(bookkeeping)
