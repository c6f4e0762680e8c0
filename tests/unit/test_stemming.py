"""The words memory search matches by: English stems, each taken once."""

from __future__ import annotations

from agentmem.search.inverted_index import MAX_QUERY_TERMS
from agentmem.search.stemming import query_stems, stem, stemmed, stemmed_terms, written_forms


def test_forms_of_a_word_share_its_stem() -> None:
    assert {stem(w) for w in ("paint", "paints", "painted", "painting")} == {"paint"}
    assert stem("cities") == stem("city")
    assert stem("tournaments") == stem("tournament")


def test_words_in_other_scripts_or_with_digits_are_kept_as_written() -> None:
    for word in ("東京", "москва", "4711", "4711b", "covid19", "~0123456789abcdef0123"):
        assert stem(word) == word


def test_counts_of_one_stem_add_up() -> None:
    assert stemmed({"painted": 1, "painting": 2, "blue": 1}) == {"paint": 3, "blue": 1}


def test_a_context_stem_that_is_an_own_stem_counts_as_own_only() -> None:
    own, context = stemmed_terms({"painting": 1}, {"painted": 2, "fence": 1})
    assert own == {"paint": 1}
    assert context == {"fenc": 1}


def test_query_stems_are_distinct_and_bounded_like_query_words() -> None:
    assert query_stems(["painted", "painting", "fence"]) == ["paint", "fenc"]
    many = [f"word{i}x" for i in range(MAX_QUERY_TERMS + 10)]
    assert len(query_stems(many)) == MAX_QUERY_TERMS


def test_written_forms_ask_for_the_stem_and_each_word_that_gave_it() -> None:
    assert written_forms(["painted", "painting", "paint", "blue"]) == {
        "paint": ["paint", "painted", "painting"],
        "blue": ["blue"],
    }


def test_a_stem_is_taken_of_words_not_of_stems() -> None:
    # Porter2 is not idempotent, which is why the index keeps words and stems them where it is built
    assert stem("purpose") == "purpos"
    assert stem(stem("purpose")) != stem("purpose")
