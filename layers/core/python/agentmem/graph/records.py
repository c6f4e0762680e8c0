"""How the knowledge graph is laid out in the table.

Every graph item of a scope lives in that scope's partition (``Scope.partition``), under a sort-key
prefix that starts with ``G``, so deleting a project or erasing a user removes the graph with the
partition. ``<e>`` is an escaped entity name (``keys.escape``: it never holds ``#``), ``<id>`` a ULID.

| sort key | item |
|---|---|
| ``GE#<e>`` | entity: name, entity_type, created_at, updated_at, version, tokens (of name and type) |
| ``GO#<e>#<id>`` | observation: id, entity, content, the four timestamps, tokens, rev |
| ``GX#<id>`` | observation id pointer: the entity it belongs to (id lookups read two items) |
| ``GC#<e>#<sha256>`` | the current observation of that entity with that exact content (dedupe, conditional put) |
| ``GR#<id>`` | relation: id, source, relation_type, target, the four timestamps, rev |
| ``GL#<e>#<id>`` | relation link: one per endpoint, so an entity's relations are one prefix query |
| ``GK#<sha256>`` | the current relation with that (source, type, target) (dedupe, conditional put) |
| ``GU#<updated_at>#<e>`` | the "recently updated" index the profile card reads newest first |
| ``GT#<token>#<e>`` | name posting (index namespace ``G``): the entity's name holds the token |
| ``GY#<token>#<th>`` | type posting: an entity type holding the token (one per type, not per entity) |
| ``GB#<th>#<e>`` | type membership: the entities of one type, in name order |

| ``GWT#<token>#<e>#<id>`` | observation posting (namespace ``GW``): one per CURRENT observation holding the token |
| ``GP#<id>`` | episode: session_id, author, text, timestamp, tokens |
| ``GS#<session>#<id>`` | episode session index |
| ``GPT#<token>#<id>``, ``GPSTATS`` | episode postings and statistics (``InvertedIndex`` namespace ``GP``) |

``<th>`` is the first 32 hex digits of the SHA-256 of the type (a type can be 256 bytes; the digest keeps
sort keys under DynamoDB's 1 KiB).

Observation postings exist only for current observations: invalidating, superseding or deleting an
observation deletes them, so the postings of one token count exactly the current observations that
hold it, per entity.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from agentmem.keys import escape, unescape
from agentmem.stores.table import Item

ENTITY = "GE#"
OBSERVATION = "GO#"
OBSERVATION_POINTER = "GX#"
CURRENT_OBSERVATION = "GC#"
RELATION = "GR#"
RELATION_LINK = "GL#"
CURRENT_RELATION = "GK#"
UPDATED = "GU#"
NAME_POSTING = "GT#"
TYPE_POSTING = "GY#"
TYPE_MEMBER = "GB#"
OBSERVATION_POSTING = "GWT#"
EPISODE = "GP#"
EPISODE_SESSION = "GS#"
EPISODE_INDEX_NAMESPACE = "GP"
GRAPH_PREFIX = "G"


GraphKind = Literal["entities", "observations", "relations", "episodes"]

_KIND_OF_PREFIX: tuple[tuple[str, GraphKind], ...] = (
    (ENTITY, "entities"),
    (OBSERVATION, "observations"),
    (RELATION, "relations"),
    (EPISODE, "episodes"),
)


def item_kind(sk: str) -> GraphKind | None:
    """What a graph item of a scope partition holds (for erasure counts and the export); None for the
    graph's own bookkeeping (postings, locks, pointers, links, recency and type lists, statistics)."""
    for prefix, kind in _KIND_OF_PREFIX:
        if sk.startswith(prefix):
            return kind
    return None


def entity_key(name: str) -> str:
    return escape(name)


def name_of_key(key: str) -> str:
    return unescape(key)


def entity_sk(name: str) -> str:
    return ENTITY + entity_key(name)


def observation_prefix(name: str) -> str:
    return f"{OBSERVATION}{entity_key(name)}#"


def observation_sk(name: str, obs_id: str) -> str:
    return observation_prefix(name) + obs_id


def pointer_sk(obs_id: str) -> str:
    return OBSERVATION_POINTER + obs_id


def _digest(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def current_observation_sk(name: str, content: str) -> str:
    return f"{CURRENT_OBSERVATION}{entity_key(name)}#{_digest(content)}"


def relation_sk(rel_id: str) -> str:
    return RELATION + rel_id


def link_prefix(name: str) -> str:
    return f"{RELATION_LINK}{entity_key(name)}#"


def link_sk(name: str, rel_id: str) -> str:
    return link_prefix(name) + rel_id


def current_relation_sk(source: str, relation_type: str, target: str) -> str:
    return CURRENT_RELATION + _digest(source, relation_type, target)


def updated_sk(updated_at: str, name: str) -> str:
    return f"{UPDATED}{updated_at}#{entity_key(name)}"


def name_posting_prefix(token: str) -> str:
    return f"{NAME_POSTING}{escape(token)}#"


def name_posting_sk(token: str, name: str) -> str:
    return name_posting_prefix(token) + entity_key(name)


def type_posting_prefix(token: str) -> str:
    return f"{TYPE_POSTING}{escape(token)}#"


def type_posting_sk(token: str, kind: str) -> str:
    return type_posting_prefix(token) + _digest(kind)[:32]


def type_member_prefix(kind: str) -> str:
    return f"{TYPE_MEMBER}{_digest(kind)[:32]}#"


def type_member_sk(kind: str, name: str) -> str:
    return type_member_prefix(kind) + entity_key(name)


def observation_posting_prefix(token: str) -> str:
    return f"{OBSERVATION_POSTING}{escape(token)}#"


def observation_posting_sk(token: str, name: str, obs_id: str) -> str:
    return f"{observation_posting_prefix(token)}{entity_key(name)}#{obs_id}"


def episode_sk(episode_id: str) -> str:
    return EPISODE + episode_id


def episode_session_prefix(session_id: str) -> str:
    return f"{EPISODE_SESSION}{escape(session_id)}#"


def observation_out(item: Item) -> dict[str, Any]:
    return {
        "id": item["id"],
        "content": item["content"],
        "valid_from": item["valid_from"],
        "valid_to": item.get("valid_to"),
        "recorded_at": item["recorded_at"],
        "expired_at": item.get("expired_at"),
    }


def relation_out(item: Item) -> dict[str, Any]:
    return {
        "id": item["id"],
        "source": item["source"],
        "relation_type": item["relation_type"],
        "target": item["target"],
        "valid_from": item["valid_from"],
        "valid_to": item.get("valid_to"),
        "recorded_at": item["recorded_at"],
        "expired_at": item.get("expired_at"),
    }


def episode_out(item: Item) -> dict[str, Any]:
    return {
        "id": item["id"],
        "session_id": item.get("session_id"),
        "project_id": item.get("project_id"),
        "author": item.get("author"),
        "text": item["text"],
        "timestamp": item["timestamp"],
    }
