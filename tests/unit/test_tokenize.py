"""The tokenizer: words, stopwords, accents, CJK characters and pairs."""

from hypothesis import given
from hypothesis import strategies as st

from agentmem.search.tokenize import STOPWORDS, _unicode_tokens, graph_tokens, tokenize


def test_words_are_lowercased_and_split_on_non_alphanumerics() -> None:
    assert tokenize("Dark-Mode, VS_Code!") == ["dark", "mode", "vs", "code"]


def test_stopwords_and_single_letters_are_dropped_but_numbers_kept() -> None:
    assert tokenize("I live in room 5 of the B wing") == ["live", "room", "5", "wing"]


def test_accents_fold_so_either_spelling_matches() -> None:
    assert tokenize("Café crème") == tokenize("cafe creme") == ["cafe", "creme"]


def test_each_cjk_character_and_each_adjacent_pair_is_a_token() -> None:
    assert tokenize("我住在東京") == ["我", "住", "在", "東", "京", "我住", "住在", "在東", "東京"]


def test_mixed_scripts_split_at_the_cjk_boundary() -> None:
    assert tokenize("Tokyo東京2026") == ["tokyo", "東", "京", "東京", "2026"]


def test_arabic_words_are_tokens() -> None:
    assert tokenize("أحب القهوة") == ["احب", "القهوة"]


def test_graph_tokens_keep_only_three_or_more_characters() -> None:
    assert graph_tokens("Alice is my co-worker at ACME in NY") == ["alice", "worker", "acme"]


@given(st.text(alphabet=st.characters(max_codepoint=127)), st.integers(min_value=1, max_value=4))
def test_the_ascii_fast_path_tokenizes_as_the_unicode_path_does(text: str, min_length: int) -> None:
    assert tokenize(text, min_length=min_length) == _unicode_tokens(text, min_length, STOPWORDS)
