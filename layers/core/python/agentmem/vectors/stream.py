"""Apply DynamoDB stream records of the table to a vector index (the durable path to OpenSearch).

Only entry items (partition ``S#...``, sort key ``E#...``) matter. ``INSERT``/``MODIFY`` upsert the
entry's stored vector and words; an entry without a vector (stored while the embedder was down) is embedded
here when an embedder is configured, its vector written back to the entry (which streams again, harmlessly),
and indexed by its words meanwhile;
``REMOVE`` deletes the vector. Every operation is idempotent, so redelivered records are safe.

A batch's records are applied to a :class:`BatchWrites` and sent together: one bulk request per invocation,
the last change of each document winning (the records of a shard come in order).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from agentmem.embeddings.codec import VECTOR_ATTR
from agentmem.embeddings.port import Embedder
from agentmem.keys import Scope, scope_of_partition
from agentmem.memory import records
from agentmem.stores.table import Item, Table
from agentmem.vectors.indexing import embed_pending, record_for_item
from agentmem.vectors.port import VectorIndex, VectorRecord

Document = tuple[Scope, str]


class IndexWrites(Protocol):
    def upsert(self, records: Sequence[VectorRecord]) -> None: ...

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None: ...


@runtime_checkable
class BatchWriter(Protocol):
    def write(self, upserts: Sequence[VectorRecord], deletes: Sequence[Document]) -> set[Document]:
        """Upsert and delete distinct documents at once; the documents refused."""
        ...


class BatchWrites:
    """The index writes of one stream batch, kept until :meth:`send`: the last change of a document wins."""

    def __init__(self) -> None:
        self._last: dict[Document, VectorRecord | None] = {}
        self.touched: list[Document] = []
        """The documents the last applied record changed (what its outcome depends on)."""

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        for record in records:
            self._change((record.scope, record.entry_id), record)

    def delete(self, scope: Scope, entry_ids: Sequence[str]) -> None:
        for entry_id in entry_ids:
            self._change((scope, entry_id), None)

    def _change(self, document: Document, record: VectorRecord | None) -> None:
        self._last.pop(document, None)  # re-inserted: the dict keeps the order of last changes
        self._last[document] = record
        self.touched.append(document)

    def send(self, index: VectorIndex) -> set[Document]:
        """Write what the batch changed; return the documents the index refused."""
        upserts = [r for r in self._last.values() if r is not None]
        deletes = [d for d, r in self._last.items() if r is None]
        if not upserts and not deletes:
            return set()
        if isinstance(index, BatchWriter):
            return index.write(upserts, deletes)
        index.upsert(upserts)
        for scope in dict.fromkeys(scope for scope, _ in deletes):
            index.delete(scope, [entry for s, entry in deletes if s == scope])
        return set()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set | tuple):
        return [_plain(v) for v in value]
    return value


def image_to_item(image: dict[str, Any]) -> Item:
    """A stream image (Powertools-deserialised) as a table item: ints, and the vector as bytes."""
    item: Item = {k: _plain(v) for k, v in image.items()}
    vector = item.get(VECTOR_ATTR)
    if isinstance(vector, str):  # stream JSON carries Binary as base64 text
        item[VECTOR_ATTR] = base64.b64decode(vector)
    return item


def apply_stream_record(
    event_name: str,
    keys: dict[str, Any],
    new_image: dict[str, Any] | None,
    *,
    index: IndexWrites,
    table: Table | None = None,
    embedder: Embedder | None = None,
) -> str:
    """Apply one change; return what was done (``upserted``, ``deleted``, ``embedded``, ``pending``, ``ignored``)."""
    pk = str(keys.get("pk", ""))
    sk = str(keys.get("sk", ""))
    scope = scope_of_partition(pk)
    if scope is None or not sk.startswith(records.ENTRY):
        return "ignored"
    if event_name == "REMOVE":
        index.delete(scope, [sk[len(records.ENTRY) :]])
        return "deleted"
    if not new_image:
        return "ignored"
    item = image_to_item(new_image)
    record = record_for_item(item)
    if record is None:
        return "ignored"
    if record.vector is None:
        if embedder is None or table is None:
            index.upsert([record])  # found by its words until it is embedded
            return "pending"
        updated = embed_pending(table, embedder, [item])
        if not updated:
            return "ignored"  # deleted meanwhile
        embedded = record_for_item(updated[0])
        index.upsert([embedded or record])
        return "embedded" if embedded is not None and embedded.vector is not None else "pending"
    index.upsert([record])
    return "upserted"
