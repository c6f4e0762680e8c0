"""How AgentCore Memory's resources map onto this service's, and their identifiers (docs/agentcore.md).

- A memory id names an app (its ARN form ``arn:...:memory/<app>`` too); an actor is a user of that app and a
  session a session of the user's global scope.
- An event is one memory entry of its session: each payload item one part of the entry's content (a
  conversational item a text part, a blob or JSON item an ``inline_data`` part holding its JSON as it
  came), the items' kinds and roles in the metadata key :data:`PAYLOAD`, its branch in :data:`BRANCH` and
  :data:`BRANCH_ROOT`, the event's own metadata under its own keys. Its id spells the entry's id:
  ``<milliseconds>#<the entry id's 128 bits in hex>``. An event whose payload holds no conversational item
  (only blobs: a framework's state, a message too long for a conversational item) is no memory entry: it is
  kept in the same shape as an event only (agentmem/agentcore/state_events.py).
- A memory record is one memory entry of the actor its namespace names (:func:`owner_of`), so erasure and
  export of that user reach it: its text, ``agentcore.kind = record``, its namespace and the namespace's
  path prefixes (for ``namespacePath``), its strategy, and its metadata under its own keys. Its id,
  ``mem-<entry id>-<the owner's ref>``, leads to the owner through the memory's actor index.
- The actor index (a partition of the app, ``AC#<app>``): a row per actor written through this API
  (``ListActors`` reads it) with a short random ref, and the ref's row back to the actor. Erasure deletes
  both (:func:`actor_keys`); a write of them is checked against the user's deletion mark.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from agentmem.clock import crockford, format_timestamp, parse_timestamp
from agentmem.errors import InvalidInput
from agentmem.keys import UserRef, escape, validate_id
from agentmem.memory.filters import KEY_PATTERN
from agentmem.stores.table import Item, Key, Table

PREFIX = "agentcore."
KIND = PREFIX + "kind"
PAYLOAD = PREFIX + "payload"
BRANCH = PREFIX + "branch"
BRANCH_ROOT = PREFIX + "branch_root"
NAMESPACE = PREFIX + "namespace"
PATHS = PREFIX + "paths"
STRATEGY = PREFIX + "strategy"
DATES = PREFIX + "dates"
SOURCES = PREFIX + "sources"
"""The entries (events) a record extracted by a strategy came from."""
ABOUT = PREFIX + "about"
"""What an extracted record is about (the knowledge graph's entity it went to)."""
SESSION = PREFIX + "session"
"""The session a record was extracted from."""
VALID_TO = PREFIX + "valid_to"
"""When a record stopped being current: a newer record replaced it (its valid time ended; it stays)."""
SUPERSEDED_BY = PREFIX + "superseded_by"
EVENT = "event"
RECORD = "record"
MANUAL_STRATEGY = "manual"
"""The ``memoryStrategyId`` of a record created without one (the model requires one on every record)."""
BLOB_MIME = "application/json"
BLOB_NAMES = {"blob": "agentcore.blob", "json": "agentcore.json"}
ROLES = {"USER": "user", "ASSISTANT": "assistant", "TOOL": "tool", "OTHER": "other"}
_ROLE_OF_AUTHOR = {"user": "USER", "assistant": "ASSISTANT", "model": "ASSISTANT", "tool": "TOOL"}
_ACTOR_WORDS = {"actor", "actors", "user", "users"}
MAX_NAMESPACE_SEGMENTS = 31
_ARN = re.compile(r"^arn:[a-z-]+:bedrock-agentcore:[^:]*:[^:]*:memory/(.+)$")
_RECORD_ID = re.compile(r"^mem-([0-9A-HJKMNP-TV-Z]{26})-([a-z0-9]{10})$")
_REF_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
ACTOR_ROW = "ACTOR#"
REF_ROW = "REF#"


MODEL_NEEDED = "model_not_configured"


def model_needed(operation: str) -> InvalidInput:
    """What an operation that needs a model answers when none is configured."""
    return InvalidInput(
        f"{operation} needs a model, and none is configured (MEMORY_MODEL; in the cloud, EXTRACTION_MODEL at "
        "deploy): strategies are kept but nothing is extracted. See docs/extraction.md; records can be written "
        "with BatchCreateMemoryRecords",
        code=MODEL_NEEDED,
    )


def app_of_memory(memory_id: str) -> str:
    """The app a memory id names: the id itself, or the last part of its ARN."""
    match = _ARN.match(memory_id)
    return validate_id(match.group(1) if match else memory_id, "memoryId")


# -- identifiers -----------------------------------------------------------------------------------


def _ulid_value(entry_id: str) -> int:
    value = 0
    for char in entry_id:
        value = value * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".index(char)
    return value


_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def is_entry_id(text: str) -> bool:
    """Whether ``text`` is an entry id (a ULID of Crockford's alphabet), which :func:`event_id` spells."""
    return bool(_ULID.match(text))


def event_id(entry_id: str) -> str:
    value = _ulid_value(entry_id)
    return f"{value >> 80:019d}#{value:032x}"


def entry_of_event(event: str) -> str | None:
    """The entry id an event id spells; None when it spells none (no such event)."""
    millis, _, hexa = event.partition("#")
    try:
        value = int(hexa, 16)
    except ValueError:
        return None
    if len(hexa) != 32 or not millis.isdigit() or int(millis) != value >> 80:
        return None
    return crockford(value)


def record_id(entry_id: str, ref: str) -> str:
    return f"mem-{entry_id}-{ref}"


def parse_record_id(record: str) -> tuple[str, str] | None:
    """(entry id, owner ref) of a record id this service gave; None for any other."""
    match = _RECORD_ID.match(record)
    return (match.group(1), match.group(2)) if match else None


def epoch(stamp: str) -> float:
    """A stored RFC 3339 time as the epoch seconds botocore reads."""
    return parse_timestamp(stamp).timestamp()


def created_at(entry_id: str) -> float:
    """When an entry was first written: the milliseconds its id begins with."""
    return (_ulid_value(entry_id) >> 80) / 1000


# -- the actor index -------------------------------------------------------------------------------


def index_partition(app: str) -> str:
    return f"AC#{escape(app)}"


def actor_row(user: UserRef, ref: str) -> Item:
    return {"pk": index_partition(user.app), "sk": ACTOR_ROW + escape(user.user), "actor": user.user, "ref": ref}


def ref_row(user: UserRef, ref: str) -> Item:
    return {"pk": index_partition(user.app), "sk": REF_ROW + ref, "actor": user.user}


def new_ref() -> str:
    return "".join(secrets.choice(_REF_ALPHABET) for _ in range(10))


def actor_keys(table: Table, user: UserRef) -> list[Key]:
    """The keys of the user's rows in the app's actor index (none when the user never used this API): what
    an erasure deletes besides the user's own partitions."""
    row = table.get(index_partition(user.app), ACTOR_ROW + escape(user.user))
    if row is None:
        return []
    return [(row["pk"], row["sk"]), (row["pk"], REF_ROW + str(row["ref"]))]


# -- namespaces ------------------------------------------------------------------------------------


def segments(namespace: str) -> list[str]:
    return [part for part in namespace.split("/") if part]


def owner_of(namespace: str) -> str:
    """The actor a namespace names, who owns its records, as far as the namespace alone tells: the segment
    after ``actors``, ``actor``, ``users`` or ``user`` (``/strategies/{memoryStrategyId}/actors/{actorId}/``,
    ``/users/{actorId}/facts``), else the second segment (``/facts/{actorId}/``,
    ``/summaries/{actorId}/{sessionId}/``), unless the first is ``strategies`` (AgentCore's own templates name
    the actor after ``actors``). An actor id may hold ``/`` (``org/alice``): :func:`owners_of` gives every
    actor the namespace may name."""
    return owners_of(namespace)[0]


def owners_of(namespace: str) -> list[str]:
    """Every actor a namespace may name, shortest first: the segment at the owner's place (:func:`owner_of`)
    and that segment with each part after it (``/actors/org/alice/`` may name ``org``, ``org/alice`` or
    ``org/alice/``), since AgentCore's actor ids may hold ``/`` and a template fills ``{actorId}`` as it is."""
    parts = namespace.split("/")
    named = [i for i, part in enumerate(parts) if part]
    if len(named) > MAX_NAMESPACE_SEGMENTS:
        raise InvalidInput(f"a namespace holds at most {MAX_NAMESPACE_SEGMENTS} segments here")
    place = next((named[k + 1] for k in range(len(named) - 1) if parts[named[k]].lower() in _ACTOR_WORDS), None)
    if place is None and len(named) >= 2 and parts[named[0]].lower() != "strategies":
        place = named[1]
    if place is None or "*" in parts[place]:
        raise InvalidInput(
            f"the namespace {namespace!r} names no actor: a record belongs to the actor its namespace names "
            "(/facts/{actorId}/, /users/{actorId}/..., .../actors/{actorId}/), so that erasing the actor erases it"
        )
    return ["/".join(parts[place:end]) for end in range(place + 1, len(parts) + 1)]


def path_of(namespace: str) -> str:
    """The namespace as a path prefix (``namespacePath`` matches whole segments)."""
    return "/" + "".join(part + "/" for part in segments(namespace))


def paths_of(namespace: str) -> list[str]:
    parts = segments(namespace)
    return ["/" + "".join(part + "/" for part in parts[:depth]) for depth in range(1, len(parts) + 1)]


def check_template(template: str) -> str:
    """A strategy's namespace template whose records always belong to the actor extracted for: it names
    ``{actorId}`` where :func:`owner_of` reads a namespace's owner."""
    marker = "\x00actor\x00"
    if "{actorId}" not in template:
        raise InvalidInput(f"the namespace template {template!r} must name {{actorId}}: a record belongs to an actor")
    filled = template.replace("{actorId}", marker).replace("{sessionId}", "s").replace("{memoryStrategyId}", "m")
    try:
        owner = owner_of(filled)
    except InvalidInput:
        owner = ""
    if owner != marker:
        raise InvalidInput(
            f"the namespace template {template!r} must put {{actorId}} where a namespace's owner is read: after "
            "actors (or actor, users, user), or second (/facts/{actorId}/)"
        )
    return template


# -- metadata --------------------------------------------------------------------------------------


def check_key(key: str) -> str:
    """An AgentCore metadata key kept as a metadata key of ours: within our key's characters, not ours."""
    if not KEY_PATTERN.fullmatch(key):
        raise InvalidInput(f"metadata key {key!r}: this service's keys are 1..64 characters of A-Z a-z 0-9 _ . -")
    if key.startswith(PREFIX):
        raise InvalidInput(f"metadata key {key!r}: keys beginning with {PREFIX!r} are this service's own")
    return key


def user_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if not k.startswith(PREFIX)}


def typed_value(value: Any, dates: Sequence[str], key: str) -> dict[str, Any] | None:
    """A stored metadata value as a ``MemoryRecordMetadataValue``."""
    if key in dates and isinstance(value, str):
        try:
            return {"dateTimeValue": epoch(value)}
        except ValueError:  # not a time after all (metadata written around this API): shown as a string
            return {"stringValue": value}
    if isinstance(value, bool):
        return {"stringValue": str(value).lower()}
    if isinstance(value, str):
        return {"stringValue": value} if value else None
    if isinstance(value, int | float):
        return {"numberValue": float(value)}
    if isinstance(value, list) and value:
        return {"stringListValue": [str(v) for v in value]}
    return None


def stored_value(value: Any) -> Any:
    """A ``MemoryRecordMetadataValue`` (the model's member names, as parsed) as a metadata value of ours."""
    if value.date_time_value is not None:
        return format_timestamp(value.date_time_value)
    if value.string_list_value is not None:
        return list(value.string_list_value)
    if value.number_value is not None:
        return value.number_value
    return value.string_value


# -- payloads --------------------------------------------------------------------------------------


def payload_parts(payload: Sequence[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The content parts of an event's payload items, and each item's kind (its role, ``blob`` or ``json``)."""
    parts: list[dict[str, Any]] = []
    kinds: list[str] = []
    for item in payload:
        if item.conversational is not None:
            parts.append({"text": item.conversational.content.text})
            kinds.append(item.conversational.role)
        else:
            kind, value = ("json", item.json_.content) if item.json_ is not None else ("blob", item.blob)
            data = base64.b64encode(json.dumps(value, ensure_ascii=False).encode("utf-8")).decode("ascii")
            parts.append({"inline_data": {"mime_type": BLOB_MIME, "data": data, "display_name": BLOB_NAMES[kind]}})
            kinds.append(kind)
    return parts, kinds


def _blob_value(blob: Any) -> tuple[Any] | None:
    """The JSON value an ``inline_data`` part of ours holds (in a 1-tuple: it may be null); None when it holds
    none (not base64 of UTF-8 JSON)."""
    if not isinstance(blob, dict) or not isinstance(blob.get("data"), str):
        return None
    try:
        return (json.loads(base64.b64decode(blob["data"], validate=True).decode("utf-8")),)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def payload_of(content: Mapping[str, Any], metadata: Mapping[str, Any], author: str | None) -> list[dict[str, Any]]:
    """An entry's content as an event's payload: as written through this API, or, for an entry written
    through the REST API, each text part a conversational item of its author's role and any other part a
    blob of its JSON."""
    kinds = str(metadata.get(PAYLOAD) or "").split()
    parts = list(content.get("parts") or [])
    default_role = _ROLE_OF_AUTHOR.get(str(content.get("role") or author or "").lower(), "OTHER")
    payload: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        kind = kinds[index] if index < len(kinds) else None
        text = part.get("text")
        if isinstance(text, str) and kind not in ("blob", "json"):
            role = kind if kind in ROLES else default_role
            payload.append({"conversational": {"content": {"text": text}, "role": role}})
            continue
        blob = part.get("inline_data") or part.get("inlineData")
        value = _blob_value(blob) if kind in ("blob", "json") else None
        if value is not None:
            payload.append({"json": {"content": value[0]}} if kind == "json" else {"blob": value[0]})
        else:  # a part this API did not write (or metadata that does not match it): given as it is stored
            payload.append({"blob": part})
    return payload
