"""How the knowledge graph is laid out in the table.

Every graph item of a scope lives in that scope's partition (``Scope.partition``), under a sort-key
prefix that starts with ``G``, so deleting a project or erasing a user removes the graph with the
partition. ``<e>`` is an escaped entity name (``keys.escape``: it never holds ``#``), ``<id>`` a ULID.

| sort key | item |
|---|---|
| ``GE#<e>`` | entity: name, entity_type, created_at, updated_at, version, ``facts`` (see below), ``seg`` |
| ``GO#<e>#<id>`` | observation: id, entity, content, the four timestamps, tokens, rev, ``seg`` |
| ``GX#<id>`` | observation id pointer: the entity it belongs to (id lookups read two items) |
| ``GVERSION``, ``GLOG#<v>`` | the change log: the entities each write changed (search/changes.py) |
| ``GR#<id>`` | relation: id, source, relation_type, target, the four timestamps, rev |
| ``GL#<e>#<id>`` | relation link: one per endpoint, so an entity's relations are one prefix query |
| ``GK#<sha256>`` | the current relation with that (source, type, target) (dedupe, conditional put) |
| ``GU#<updated_at>#<e>`` | the "recently updated" index the profile card reads newest first |
| ``GP#<id>`` | episode: session_id, author, text, timestamp, tokens |
| ``GS#<session>#<id>`` | episode session index |
| ``GPT#<token>#<id>``, ``GPSTATS`` | episode postings and statistics (``InvertedIndex`` namespace ``GP``) |

The entity item's ``facts`` maps the digest of each CURRENT observation's content to its id: it is the
dedupe set (one current fact per content) and the list of current observations, changed only with the
entity's version check, so two writers of one entity never lose a fact nor store one twice. An entity
can hold about 6,000 current observations before its item reaches DynamoDB's 400 KB.

Search reads the graph's index held in process (agentmem/graph/search_index.py), built from the entity
items and their current observations and caught up from the change log. Older data may hold search
segments (``GWS#<b>#<seg>``), type postings (``GY#``) and type lists (``GB#``) that searches read before:
they are bookkeeping now, deleted with their partition (a type list item also with its entity).
``seg`` on an entity or observation only says it is not of layout 1.

Layout 1 (before segments), still read: ``GC#<e>#<sha256>`` current-content locks, ``GT#<token>#<e>``
name postings and ``GWT#<token>#<e>#<id>`` observation postings, for entities and observations written
before (they carry no ``seg``; an entity without ``facts`` gets them from its observations on its next
write). They are removed with the facts they index.

``<th>`` is the first 32 hex digits of the SHA-256 of the type (a type can be 256 bytes; the digest keeps
sort keys under DynamoDB's 1 KiB).

"""

from __future__ import annotations

import hashlib
from json.encoder import encode_basestring
from typing import Any, Literal

from agentmem.keys import escape, unescape
from agentmem.stores.table import Item, Key

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
SEGMENT = "GWS#"
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
    """SHA-256 of the parts as a JSON array (``json.dumps(parts, ensure_ascii=False)``, spelled out in C)."""
    spelled = "[" + ", ".join(map(encode_basestring, parts)) + "]"
    return hashlib.sha256(spelled.encode("utf-8")).hexdigest()


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


def fact_digest(content: str) -> str:
    """The key of a current fact in its entity's ``facts`` (128 bits of the content's SHA-256)."""
    return _digest(content)[:32]


def episode_sk(episode_id: str) -> str:
    return EPISODE + episode_id


def episode_session_prefix(session_id: str) -> str:
    return f"{EPISODE_SESSION}{escape(session_id)}#"


# -- item builders ---------------------------------------------------------------------------------


def entity_item(
    partition: str,
    project_id: str | None,
    name: str,
    kind: str,
    *,
    created_at: str,
    updated_at: str,
    version: int,
    facts: dict[str, str],
) -> Item:
    return {
        "pk": partition,
        "sk": entity_sk(name),
        "name": name,
        "entity_type": kind,
        "project_id": project_id,
        "created_at": created_at,
        "updated_at": updated_at,
        "version": version,
        "facts": facts,
        "seg": None,
    }


def updated_item(partition: str, name: str, updated_at: str) -> Item:
    return {"pk": partition, "sk": updated_sk(updated_at, name), "name": name, "updated_at": updated_at}


def type_postings(partition: str, kind: str, tokens: list[str]) -> list[Item]:
    """One posting per token of a type, shared by every entity of that type (never deleted: a type
    with no members left only costs its few postings)."""
    return [{"pk": partition, "sk": type_posting_sk(token, kind), "type": kind} for token in tokens]


def member_item(partition: str, kind: str, name: str) -> Item:
    return {"pk": partition, "sk": type_member_sk(kind, name), "name": name}


def observation_item(
    partition: str,
    project_id: str | None,
    name: str,
    obs_id: str,
    text: str,
    *,
    valid_from: str,
    recorded_at: str,
    tokens: list[str],
    source: str | None = None,
) -> Item:
    """``source``: the memory record extraction learnt the fact as (kept only when there is one)."""
    item: Item = {
        "pk": partition,
        "sk": observation_sk(name, obs_id),
        "id": obs_id,
        "entity": name,
        "project_id": project_id,
        "content": text,
        "valid_from": valid_from,
        "valid_to": None,
        "recorded_at": recorded_at,
        "expired_at": None,
        "tokens": tokens,
        "rev": 1,
        "seg": None,  # not of layout 1 (the name of the search segment it was posted in, while there were)
    }
    if source is not None:
        item["source"] = source
    return item


def pointer_item(obs: Item) -> Item:
    return {"pk": obs["pk"], "sk": pointer_sk(obs["id"]), "entity": obs["entity"]}


def relation_item(
    partition: str, project_id: str | None, rel_id: str, source: str, relation_type: str, target: str, now: str
) -> Item:
    return {
        "pk": partition,
        "sk": relation_sk(rel_id),
        "id": rel_id,
        "project_id": project_id,
        "source": source,
        "relation_type": relation_type,
        "target": target,
        "valid_from": now,
        "valid_to": None,
        "recorded_at": now,
        "expired_at": None,
        "rev": 1,
    }


def relation_keys(relation: Item) -> list[Key]:
    """Every item of one relation: itself, its links and (while current) its dedupe lock."""
    partition = relation["pk"]
    keys: list[Key] = [(partition, relation["sk"])]
    keys += [(partition, link_sk(n, relation["id"])) for n in {relation["source"], relation["target"]}]
    if relation.get("expired_at") is None:
        keys.append((partition, current_relation_sk(relation["source"], relation["relation_type"], relation["target"])))
    return keys


def legacy_posting_keys(obs: Item) -> list[Key]:
    """Layout 1: the per-observation postings of a current observation written before segments."""
    if "seg" in obs or obs.get("expired_at") is not None:
        return []
    return [(obs["pk"], observation_posting_sk(t, obs["entity"], obs["id"])) for t in obs.get("tokens", [])]


def observation_out(item: Item) -> dict[str, Any]:
    return {
        "id": item["id"],
        "content": item["content"],
        "valid_from": item["valid_from"],
        "valid_to": item.get("valid_to"),
        "recorded_at": item["recorded_at"],
        "expired_at": item.get("expired_at"),
        "source": item.get("source"),
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
        "expires_at": item.get("expires_at"),
    }
