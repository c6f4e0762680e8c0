"""Apply one DynamoDB stream record of the table to a vector index (the durable path to OpenSearch).

Only entry items (partition ``S#...``, sort key ``E#...``) matter. ``INSERT``/``MODIFY`` upsert the
entry's stored vector and words; an entry without a vector (stored while the embedder was down) is embedded
here when an embedder is configured, its vector written back to the entry (which streams again, harmlessly),
and indexed by its words meanwhile;
``REMOVE`` deletes the vector. Every operation is idempotent, so redelivered records are safe.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any

from agentmem.embeddings.codec import VECTOR_ATTR
from agentmem.embeddings.port import Embedder
from agentmem.keys import scope_of_partition
from agentmem.memory import records
from agentmem.stores.table import Item, Table
from agentmem.vectors.indexing import embed_pending, record_for_item
from agentmem.vectors.port import VectorIndex


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
    index: VectorIndex,
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
