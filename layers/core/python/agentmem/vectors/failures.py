"""The batches the stream indexer gave up on, replayed from the table (the runbook in docs/deploy.md).

Lambda writes each batch it gives up on to the indexer's S3 on-failure destination as an invocation record:
metadata (``requestContext``, ``responseContext``, ``DDBStreamBatchInfo``) and the invocation's payload, the
stream records as the function received them. A replay never applies those records' images, which may be older
than the table by now (an entry deleted since, a user erased since): it reads which users they name and
rebuilds each one's vectors from the table, the source of truth (:func:`agentmem.vectors.indexing.reindex`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agentmem.keys import UserRef, scope_of_partition


def users_named(record: Any) -> set[UserRef]:
    """The users whose items the stream records inside a failure record name (its payload may be embedded as a
    JSON string); anything that is not a stream record of a scope partition is passed over."""
    return {scope.user_ref for scope in _scopes(record)}


def _scopes(value: Any) -> Iterator[Any]:
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            value = json.loads(value)
        except ValueError:
            return
    if isinstance(value, dict):
        keys = (value.get("dynamodb") or {}).get("Keys") if isinstance(value.get("dynamodb"), dict) else None
        partition = ((keys or {}).get("pk") or {}).get("S") if isinstance(keys, dict) else None
        if isinstance(partition, str):
            scope = scope_of_partition(partition)
            if scope is not None:
                yield scope
        for inner in value.values():
            yield from _scopes(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _scopes(inner)
