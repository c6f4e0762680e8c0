"""One text the embedder refuses leaves only its own entry pending (issue 17, point 6), on both tables."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from agentmem.container import Container, set_container
from agentmem.embeddings.codec import PENDING_ATTR, VECTOR_ATTR
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.errors import InvalidInput
from agentmem.keys import UserRef
from agentmem.memory import records
from agentmem.settings import Settings
from agentmem.stores.table import Table, query_all
from tests.support import ApiClient, scope_path, text_entry


class Picky(HashingEmbedder):
    """Refuses any text holding REFUSE, as Bedrock refuses a text it cannot take."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any("REFUSE" in t for t in texts):
            raise InvalidInput("the model refused a text", code="embedding_refused")
        return super().embed(texts)


@pytest.fixture
def api(table: Table) -> Iterator[ApiClient]:
    set_container(Container(Settings(embedder="hashing"), table=table, embedder=Picky(64)))
    yield ApiClient()
    set_container(None)


def test_one_refused_text_leaves_only_its_entry_pending(api: ApiClient, table: Table) -> None:
    entries = [text_entry("violin lessons on Monday"), text_entry("REFUSE me"), text_entry("the dentist on Friday")]
    reply = api.put(f"{scope_path('app', 'alice')}/sessions/s1/memories", {"entries": entries})
    assert reply.status == 200
    assert reply.body["indexing"] == "pending"
    items = {
        records.entry_text(i): i
        for i in query_all(table, UserRef.of("app", "alice").scope(None).partition, records.ENTRY)
    }
    assert PENDING_ATTR in items["REFUSE me"]
    assert VECTOR_ATTR not in items["REFUSE me"]
    for text in ("violin lessons on Monday", "the dentist on Friday"):
        assert VECTOR_ATTR in items[text]
        assert PENDING_ATTR not in items[text]
    # And the embedded ones are found semantically at once
    found = api.post(f"{scope_path('app', 'alice')}/memories/search", {"query": "violin lessons", "mode": "semantic"})
    assert found.body["entries"][0]["content"]["parts"][0]["text"] == "violin lessons on Monday"
