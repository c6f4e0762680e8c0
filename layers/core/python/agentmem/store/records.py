"""How store items are laid out: one key row per item in the scope partition, beside its entry.

The key row (``KV#<namespace>/|<key>``) holds the JSON value, the times and a ``revision`` (new at
every write: concurrent writes of a key are conditioned on the revision they read). A value over
:data:`INLINE_VALUE_BYTES` lives apart, in a value row (``KW#`` and the same path) of the same revision
and expiry written and deleted with it: a key row is then within one read unit, so listing namespaces
and scanning keys read keys, not values (DynamoDB bills a read by the whole item). The entry it
points at (``entry_id``) holds the text that search ranks, with metadata naming the item
(``store.namespace``, ``store.key``), the namespace prefixes it lies under (``store.prefixes``, so a
search is narrowed by the engine's own filter) and the value's scalar fields (``value.<field>``, so
LangGraph filters are evaluated before ranking). The entry is bound to its row (``bound_row``): the
two are written and deleted together, in one transaction, and deleting the entry by any route deletes
the row.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from agentmem.clock import format_timestamp
from agentmem.keys import Scope
from agentmem.memory.filters import KEY_PATTERN, is_finite
from agentmem.models.memory import MAX_METADATA_KEYS, MAX_METADATA_STRING_BYTES
from agentmem.stores.table import TTL_ATTRIBUTE, Item

KEY_ROW = "KV#"
VALUE_ROW = "KW#"
VALUE_APART = "value_apart"
"""On a key row whose value lives in its value row."""
INLINE_VALUE_BYTES = 2_048
"""The largest value (as JSON, UTF-8) kept in its key row."""
PREFIXES = "store.prefixes"
NAMESPACE = "store.namespace"
KEY = "store.key"
REVISION = "revision"
FIELD = "value."


def _encode(label: str) -> str:
    return label.replace("%", "%25").replace("/", "%2F").replace("|", "%7C")


def namespace_prefix_sk(path: Sequence[str]) -> str:
    """The sort-key prefix of every item in ``path`` or below it."""
    return KEY_ROW + "".join(_encode(label) + "/" for label in path)


def key_row_sk(path: Sequence[str], key: str) -> str:
    return namespace_prefix_sk(path) + "|" + _encode(key)


def value_row_sk(row_sk: str) -> str:
    return VALUE_ROW + row_sk[len(KEY_ROW) :]


def prefix_token(scope: Scope, path: Sequence[str]) -> str:
    """What ``store.prefixes`` holds for ``path`` in ``scope`` (the project is part of it, so a search of
    a project's namespace never ranks a global item, nor another project's). A token longer than a
    metadata string may be (labels of quotes and backslashes, escaped) is its digest instead."""
    token = json.dumps([scope.project_id, *path], ensure_ascii=False, separators=(",", ":"))
    if len(token.encode("utf-8")) <= MAX_METADATA_STRING_BYTES:
        return token
    return "#" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def prefix_tokens(scope: Scope, path: Sequence[str]) -> list[str]:
    return [prefix_token(scope, path[:depth]) for depth in range(len(path) + 1)]


def key_row(
    scope: Scope,
    path: Sequence[str],
    key: str,
    value: dict[str, Any],
    *,
    entry_id: str | None,
    created_at: str,
    updated_at: str,
    expires_at: datetime | None,
    ttl_seconds: int | None,
    revision: str,
) -> tuple[Item, Item | None]:
    """The key row, and the value row when the value lives apart."""
    row: Item = {
        "pk": scope.partition,
        "sk": key_row_sk(path, key),
        "namespace": list(path),
        "key": key,
        "value": json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        "created_at": created_at,
        "updated_at": updated_at,
        "entry_id": entry_id,
        REVISION: revision,
    }
    if expires_at is not None:
        row["expires_at"] = format_timestamp(expires_at)
        row[TTL_ATTRIBUTE] = math.ceil(expires_at.timestamp())
        row["ttl_seconds"] = ttl_seconds
    if len(row["value"].encode("utf-8")) <= INLINE_VALUE_BYTES:
        return row, None
    apart: Item = {"pk": row["pk"], "sk": value_row_sk(row["sk"]), "value": row.pop("value"), REVISION: revision}
    apart.update((name, row[name]) for name in ("entry_id", "expires_at", TTL_ATTRIBUTE) if name in row)
    row[VALUE_APART] = True
    return row, apart


def value_row_key(row: Item) -> tuple[str, str] | None:
    """The key of the row that holds ``row``'s value, when it is not ``row`` itself."""
    return (row["pk"], value_row_sk(row["sk"])) if row.get(VALUE_APART) else None


def is_value_of(value_row: Item | None, row: Item) -> bool:
    """``value_row`` holds the value of ``row`` as it was read (not of a later put of the key)."""
    return value_row is not None and value_row.get(REVISION) == row.get(REVISION)


def row_sk_of_hit(metadata: dict[str, Any]) -> str | None:
    """The key row an entry found by search belongs to, from its metadata; None when the metadata does not
    name one (a memory written through the memory routes, whatever metadata it was given)."""
    path = metadata.get(NAMESPACE)
    key = metadata.get(KEY)
    if path is None:  # written before store.namespace: the path is the last prefix token, JSON
        try:
            path = json.loads(metadata[PREFIXES][-1])[1:]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    if not isinstance(key, str) or not isinstance(path, list) or not all(isinstance(p, str) for p in path):
        return None
    return key_row_sk(path, key)


def is_key_row(item: Item) -> bool:
    return str(item["sk"]).startswith(KEY_ROW)


def value_of(row: Item, value_row: Item | None = None) -> dict[str, Any]:
    """The item's value: in its key row, or in ``value_row`` when it lives apart."""
    source = value_row if row.get(VALUE_APART) else row
    assert source is not None, "a value that lives apart is read from its value row"
    value = json.loads(source["value"])
    assert isinstance(value, dict)
    return value


def item_json(row: Item, value: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """A key row and its value as the API answers them."""
    answer: dict[str, Any] = {
        "namespace": list(row["namespace"]),
        "key": row["key"],
        "value": value,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "expires_at": row.get("expires_at"),
    }
    if score is not None:
        answer["score"] = score
    return answer


def text_of(value: Any) -> str:
    """What is searched of a value when the client names no text: its strings, in document order."""
    return "\n".join(_strings(value))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def field_key(name: str) -> str | None:
    """The metadata key a value field is mirrored under, or None when it cannot be one."""
    key = FIELD + name
    return key if "." not in name and KEY_PATTERN.fullmatch(key) else None


def entry_metadata(scope: Scope, path: Sequence[str], key: str, value: dict[str, Any]) -> dict[str, Any]:
    """The entry's metadata: where the item lives, and the value's scalar fields (as many as fit)."""
    metadata: dict[str, Any] = {PREFIXES: prefix_tokens(scope, path), NAMESPACE: list(path), KEY: key}
    for name, field in value.items():
        if len(metadata) >= MAX_METADATA_KEYS:
            break
        target = field_key(name)
        if target is not None and _mirrorable(field):
            metadata[target] = field
    return metadata


def _mirrorable(field: Any) -> bool:
    if isinstance(field, str):
        return len(field.encode("utf-8")) <= MAX_METADATA_STRING_BYTES
    return isinstance(field, bool) or (isinstance(field, int | float) and is_finite(field))
