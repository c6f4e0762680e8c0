"""What an entry keeps of the entries said before it (agentmem/search/context.py)."""

from __future__ import annotations

from agentmem.search.context import (
    CONTEXT_CHARS,
    CONTEXT_ENTRIES,
    EMBEDDED_CONTEXT_BELOW,
    context_of,
    context_terms,
    continued,
    embedding_text,
)


def test_a_reply_keeps_the_end_of_the_entries_before_it() -> None:
    said = [("Tomas", "first"), ("Ines", "Did you fix the boat?"), ("Tomas", "x" * 1000 + " the dinghy")]
    context = context_of(said, "Ines")
    assert len(context) == CONTEXT_ENTRIES
    assert context[0] == "Did you fix the boat?"
    assert context[1].endswith("the dinghy")
    assert len(context[1]) == CONTEXT_CHARS


def test_one_authors_run_of_notes_lends_no_context() -> None:
    said = [("user", "I prefer dark mode"), ("user", "My dog is called Pixel")]
    assert context_of(said, "user") == []
    assert context_of([(None, "a note")], None) == []
    assert context_of([], "Ines") == []


def test_empty_entries_are_not_context() -> None:
    assert context_of([("Tomas", "Did you go?"), ("Tomas", "   ")], "Ines") == ["Did you go?"]


def test_the_entry_before_is_embedded_first_unless_the_entry_is_long() -> None:
    assert embedding_text("Yes, next month", ["older", "Are you sailing?"]) == "Are you sailing?\nYes, next month"
    assert embedding_text("Yes", []) == "Yes"
    long = "word " * EMBEDDED_CONTEXT_BELOW
    assert embedding_text(long, ["Are you sailing?"]) == long


def test_context_words_exclude_the_entrys_own_and_stop_at_the_limit() -> None:
    terms = context_terms(["boat", "lake", "boat", "water", "sun"], own={"lake"}, limit=2)
    assert terms == {"boat": 2, "water": 1}


def test_an_entry_continues_its_authors_turn_before_the_one_it_answers() -> None:
    said = [("a", "Something happened yesterday..."), ("b", "Oh no, what?")]
    assert continued(said, "a") == 0
    # a blank entry between is not a turn
    assert continued([("a", "It happened yesterday"), ("b", "  "), ("b", "What?")], "a") == 0


def test_an_entry_continues_nothing_unless_it_answers_after_its_own_turn() -> None:
    assert continued([], "a") is None
    assert continued([("b", "Hello")], "a") is None
    assert continued([("a", "note one"), ("a", "note two")], "a") is None  # a run of one author's notes
    assert continued([("c", "Hi"), ("b", "What?")], "a") is None  # the turn before is someone else's
