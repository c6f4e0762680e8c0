"""How erasure classifies and records what it deletes.

- :func:`classify` says which counter (``entries``, ``graph_items``, ``episodes``) an item of a scope
  partition adds to, or None for internal items (index postings, statistics, session index). It is
  the one place to adjust when the graph layout changes.
- The deletion request (the receipt) lives in the tenant partition ``T#app`` under
  ``DELREQ#<deletion id>``, so it survives the erasure of the user's own partitions. It holds no
  memory content, and a keyed hash (HMAC-SHA256) of ``(app, user)`` to match the user who asks. While
  the erasure runs it also holds the user id (``user_id``), which the workflow's steps read from there
  (the workflow is given the app and the deletion id only, so its history names nobody); the last step
  removes it, and a request superseded by a new one loses it then.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Literal

from agentmem.graph import records as graph_records
from agentmem.keys import UserRef, escape, tenant_partition
from agentmem.memory import records as memory_records
from agentmem.stores.table import Item, Key

DELETION_REQUEST = "DELREQ#"

Status = Literal["RUNNING", "SUCCEEDED", "FAILED"]
Counter = Literal["entries", "vectors", "graph_items", "episodes"]
COUNTERS: tuple[Counter, ...] = ("entries", "vectors", "graph_items", "episodes")

GRAPH_PREFIX = "G"
EPISODE_PREFIX = "GP#"
"""Until the graph layout settles, ``GP#`` items are episodes and every other ``G`` item a graph item."""

VECTOR_ATTRIBUTES = ("vector", "embedding")
"""Entry attributes that carry an embedding kept in the table (counted as vectors without an index)."""

_POSTING_ATTRIBUTES = frozenset({"tf", "dl"})


def is_index_item(item: Item) -> bool:
    """Inverted-index postings (``<ns>T#<token>#<doc>``: only ``tf`` and ``dl``) and statistics
    (``<ns>STATS``) of any namespace: recognised by shape, whatever namespace a capability picked."""
    sk = str(item["sk"])
    attributes = set(item) - {"pk", "sk", "ttl"}
    return attributes == _POSTING_ATTRIBUTES or ("#" not in sk and sk.endswith("STATS"))


def classify(item: Item) -> Counter | None:
    """The counter an item of a scope partition belongs to; None for internal bookkeeping."""
    sk = str(item["sk"])
    if sk.startswith(memory_records.ENTRY):
        return "entries"
    if not sk.startswith(GRAPH_PREFIX) or is_index_item(item):
        return None
    kind = graph_records.item_kind(sk)  # the graph's own postings, locks and lists are bookkeeping
    if kind is None:
        return None
    return "episodes" if kind == "episodes" else "graph_items"


def carries_vector(item: Item) -> bool:
    return any(item.get(name) is not None for name in VECTOR_ATTRIBUTES)


def graph_kind(item: Item) -> Literal["entities", "relations", "observations"]:
    """Where an exported graph item goes: relations carry a type and endpoints, entities a type."""
    if "relation_type" in item:
        return "relations"
    if "entity_type" in item:
        return "entities"
    return "observations"


def user_hash(key: bytes, user: UserRef) -> str:
    """A keyed hash of the user: lets a receipt be matched to a user who asks, without naming them."""
    message = "#".join((escape(user.app), escape(user.user))).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def request_key(app: str, deletion_id: str) -> Key:
    return tenant_partition(app), DELETION_REQUEST + deletion_id


USER_ID = "user_id"
"""The raw user id of a request whose erasure has not finished."""


def request_item(app: str, deletion_id: str, *, user: str, hashed_user: str, started_at: str) -> Item:
    pk, sk = request_key(app, deletion_id)
    item: Item = {
        "pk": pk,
        "sk": sk,
        "deletion_id": deletion_id,
        "user_hash": hashed_user,
        USER_ID: user,
        "status": "RUNNING",
        "started_at": started_at,
        "finished_at": None,
        "sweeps": 0,
    }
    item.update(dict.fromkeys(COUNTERS, 0))
    return item


def request_to_json(item: Item) -> dict[str, Any]:
    """The status route's body: status, times and counts (never the user id, never content)."""
    body: dict[str, Any] = {
        "deletion_id": item["deletion_id"],
        "status": item["status"],
        "started_at": item["started_at"],
        "deleted": {name: int(item.get(name) or 0) for name in COUNTERS},
    }
    if item.get("finished_at"):
        body["finished_at"] = item["finished_at"]
    if item.get("status") == "FAILED":
        body["error"] = {"code": item.get("error") or "unknown", "message": item.get("cause") or ""}
    return body
