"""The graph's key digests: stored keys depend on their exact spelling, so a faster one must not change it."""

import hashlib
import json

from hypothesis import given
from hypothesis import strategies as st

from agentmem.graph import records

# Any text a client can send (JSON strings carry no lone surrogates past the request parser).
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)))


@given(st.lists(texts, min_size=1, max_size=3))
def test_digests_are_the_sha256_of_the_parts_as_a_json_array(parts: list[str]) -> None:
    spelled = json.dumps(parts, ensure_ascii=False).encode("utf-8")
    assert records._digest(*parts) == hashlib.sha256(spelled).hexdigest()


def test_a_fact_digest_is_the_first_128_bits_of_the_content_digest() -> None:
    content = 'likes "dark" mode\n東京'
    expected = hashlib.sha256(json.dumps([content], ensure_ascii=False).encode("utf-8")).hexdigest()[:32]
    assert records.fact_digest(content) == expected
