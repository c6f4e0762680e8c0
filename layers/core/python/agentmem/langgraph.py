"""LangGraph's long-term memory store over this service: ``AgentMemoryStore``, a ``BaseStore``.

``pip install "./layers/core[langgraph]"``, then::

    store = AgentMemoryStore("http://127.0.0.1:8000", app="my-app")
    agent = create_react_agent(model, tools, store=store)

Namespaces map onto this service's users by a template chosen at construction, default
``("memories", "{user}")``: ``("memories", "u1", "prefs")`` is the namespace ``("prefs",)`` of user
``u1`` of the app named here (the app is never read from a namespace; an API key only reaches its
own). ``"{project}"`` in the template maps a label onto a project. A namespace that stops above the
user is refused (``InvalidNamespaceError``), never widened to several users. Each item is a memory
entry of that user (searched by the service's ranking, exported, erased with the user).

A ``batch`` sends its reads (up to 100 operations a request), then its writes, as LangGraph's stores
apply a batch (reads first). A read batch the service refuses as too large to read or to answer is
split in two and sent again; a search the service cut to its response budget is completed with the
next offsets. See docs/langgraph.md.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from agentmem.client import AsyncMemoryClient, MemoryClient
from agentmem.clock import parse_timestamp
from agentmem.errors import MemoryServiceError

USER = "{user}"
PROJECT = "{project}"
DEFAULT_TEMPLATE = ("memories", USER)
OPS_PER_REQUEST = 100
SPLIT_CODES = frozenset({"batch_reads_too_much", "response_too_large"})
"""The service's refusals of a batch that fits once split."""

Exchange = Generator[list[dict[str, Any]], "dict[str, Any] | MemoryServiceError", list[Any]]


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a namespace lives: a user, a project (or the user's global scope) and the path below them."""

    user: str
    project_id: str | None
    path: tuple[str, ...]
    above: tuple[str, ...]
    """The labels the template resolved to (prefixed back onto the paths the service answers)."""

    def op(self, **fields: Any) -> dict[str, Any]:
        return {"user": self.user, "project_id": self.project_id, **fields}


class NamespaceTemplate:
    """Reads ``(user, project, path)`` off a namespace: literal labels, ``{user}`` once, ``{project}`` at most once."""

    def __init__(self, labels: Sequence[str], project_id: str | None = None) -> None:
        labels = tuple(labels)
        if labels.count(USER) != 1 or labels.count(PROJECT) > 1:
            raise ValueError(f'a namespace template names "{{user}}" once and "{{project}}" at most once: {labels}')
        if PROJECT in labels and project_id is not None:
            raise ValueError("give the project in the template or as project_id, not both")
        self.labels = labels
        self.project_id = project_id

    def place(self, namespace: Sequence[str], *, prefix: bool = False) -> _Place:
        namespace = tuple(namespace)
        if len(namespace) < len(self.labels):
            what = "namespace prefix" if prefix else "namespace"
            raise InvalidNamespaceError(
                f"{what} {namespace} stops above the user level of the template {self.labels}: each "
                "operation reaches one user's items (name the user, e.g. "
                f"{_example(self.labels)})"
            )
        user, project = None, self.project_id
        for label, wanted in zip(namespace, self.labels, strict=False):
            if wanted == USER:
                user = label
            elif wanted == PROJECT:
                project = label
            elif label != wanted:
                raise InvalidNamespaceError(f"namespace {namespace} does not match the template {self.labels}")
        assert user is not None
        depth = len(self.labels)
        return _Place(user, project, namespace[depth:], namespace[:depth])


class AgentMemoryStore(BaseStore):
    """LangGraph's ``BaseStore`` on the memory service's HTTP API (sync ``batch``, async ``abatch``)."""

    supports_ttl = True

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        app: str,
        api_key: str | None = None,
        namespace: Sequence[str] = DEFAULT_TEMPLATE,
        project_id: str | None = None,
        index: dict[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        timeout: float = 30.0,
    ) -> None:
        """``index``: LangGraph's index config; only its ``fields`` are read (which parts of a value are
        searched; the service embeds with its own model). ``ttl``: ``default_ttl`` (minutes) and
        ``refresh_on_read``."""
        self.app = app
        self.template = NamespaceTemplate(namespace, project_id)
        self.ttl_config = ttl
        self.index_fields = [(p, tokenize_path(p)) for p in (index or {}).get("fields") or [] if p != "$"]
        self.client = MemoryClient(base_url, api_key=api_key, timeout=timeout)
        self.async_client = AsyncMemoryClient(base_url, api_key=api_key, timeout=timeout)

    # -- the two entry points ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = _Plan(self, ops)
        exchange = plan.exchange()
        request = next(exchange)
        while True:
            reply: dict[str, Any] | MemoryServiceError
            try:
                reply = self.client.store_batch_reply(self.app, request)
            except MemoryServiceError as error:
                reply = error
            try:
                request = exchange.send(reply)
            except StopIteration as done:
                return plan.results(done.value)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plan = _Plan(self, ops)
        exchange = plan.exchange()
        request = next(exchange)
        while True:
            reply: dict[str, Any] | MemoryServiceError
            try:
                reply = await self.async_client.store_batch_reply(self.app, request)
            except MemoryServiceError as error:
                reply = error
            try:
                request = exchange.send(reply)
            except StopIteration as done:
                return plan.results(done.value)

    def text_of(self, value: Mapping[str, Any], index: bool | list[str] | None) -> str | None:
        """What the service searches of a value: None lets it take every string of the value."""
        if index is False:
            return ""
        paths = None if index is None or index is True else list(index)
        fields = self.index_fields if paths is None else [(p, tokenize_path(p)) for p in paths if p != "$"]
        if (paths is not None and "$" in paths) or not fields:
            return None
        return "\n".join(text for _, path in fields for text in get_text_at_path(value, path))


class _Plan:
    """A batch's ops as the service's operations, and its answers as LangGraph's results."""

    def __init__(self, store: AgentMemoryStore, ops: Iterable[Op]) -> None:
        self.store = store
        self.ops = list(ops)
        self.places: list[_Place] = []
        self.wire: list[dict[str, Any]] = []
        for op in self.ops:
            validate_op_namespace(op)
            place, wire = self._translate(op)
            self.places.append(place)
            self.wire.append(wire)

    def _translate(self, op: Op) -> tuple[_Place, dict[str, Any]]:
        template = self.store.template
        if isinstance(op, GetOp):
            place = template.place(op.namespace)
            return place, place.op(op="get", namespace=list(place.path), key=op.key, refresh_ttl=op.refresh_ttl)
        if isinstance(op, PutOp):
            place = template.place(op.namespace)
            fields: dict[str, Any] = {"op": "put", "namespace": list(place.path), "key": op.key, "value": op.value}
            if op.value is not None:
                fields["text"] = self.store.text_of(op.value, op.index)
                fields["ttl_minutes"] = op.ttl
            return place, place.op(**fields)
        if isinstance(op, SearchOp):
            place = template.place(op.namespace_prefix, prefix=True)
            return place, place.op(
                op="search",
                namespace_prefix=list(place.path),
                query=op.query,
                filter=op.filter,
                limit=op.limit,
                offset=op.offset,
                refresh_ttl=op.refresh_ttl,
            )
        if isinstance(op, ListNamespacesOp):
            place = _listing_place(template, op.match_conditions or ())
            return place, place.op(op="list_namespaces", prefix=list(place.path))
        raise ValueError(f"unknown operation: {type(op).__name__}")

    def exchange(self) -> Exchange:
        """The requests of the batch, each sent and its reply (or refusal) sent back: the reads, in batches
        of at most 100 split while refused as too large, each cut search completed; then the writes."""
        answers: list[Any] = [None] * len(self.wire)
        reads = [i for i, wire in enumerate(self.wire) if wire["op"] != "put"]
        writes = [i for i, wire in enumerate(self.wire) if wire["op"] == "put"]
        pending = [reads[i : i + OPS_PER_REQUEST] for i in range(0, len(reads), OPS_PER_REQUEST)]
        while pending:
            group = pending.pop(0)
            reply = yield [self.wire[i] for i in group]
            if isinstance(reply, MemoryServiceError):
                if reply.code in SPLIT_CODES and len(group) > 1:
                    pending[:0] = [group[: len(group) // 2], group[len(group) // 2 :]]
                    continue
                raise reply
            for i, result in zip(group, reply["results"], strict=True):
                answers[i] = result
            for position in reply.get("truncated") or []:
                answers[group[position]] = yield from _rest_of_search(
                    self.wire[group[position]], answers[group[position]]
                )
        for start in range(0, len(writes), OPS_PER_REQUEST):
            group = writes[start : start + OPS_PER_REQUEST]
            reply = yield [self.wire[i] for i in group]
            if isinstance(reply, MemoryServiceError):
                raise reply
        return answers

    def results(self, answers: list[Any]) -> list[Result]:
        return [_result(op, place, answer) for op, place, answer in zip(self.ops, self.places, answers, strict=True)]


def _rest_of_search(wire: dict[str, Any], found: list[Any]) -> Exchange:
    """A search the service cut to its response budget, completed by asking for the items after ``found``."""
    found = list(found)
    while len(found) < wire["limit"]:
        reply = yield [{**wire, "offset": wire["offset"] + len(found), "limit": wire["limit"] - len(found)}]
        if isinstance(reply, MemoryServiceError):
            raise reply
        found += reply["results"][0]
        if not reply.get("truncated"):
            break
    return found


def _listing_place(template: NamespaceTemplate, conditions: Sequence[MatchCondition]) -> _Place:
    """The user a listing reaches, from a prefix condition that names the template's labels (wildcards
    after them narrow nothing on the server: the listing is filtered here)."""
    for condition in conditions:
        if condition.match_type != "prefix" or len(condition.path) < len(template.labels):
            continue
        if "*" in condition.path[: len(template.labels)]:
            continue
        place = template.place(tuple(condition.path), prefix=True)
        concrete = []
        for label in place.path:
            if label == "*":
                break
            concrete.append(label)
        return _Place(place.user, place.project_id, tuple(concrete), place.above)
    raise InvalidNamespaceError(
        f"list_namespaces reaches one user's namespaces: give a prefix that names the user, "
        f"e.g. {_example(template.labels)}"
    )


def _result(op: Op, place: _Place, answer: Any) -> Result:
    if isinstance(op, GetOp):
        return None if answer is None else _item(place, answer)
    if isinstance(op, SearchOp):
        return [_item(place, hit, found=True) for hit in answer]
    if isinstance(op, ListNamespacesOp):
        return _namespaces(op, [place.above + tuple(path) for path in answer])
    return None


def _item(place: _Place, answer: dict[str, Any], *, found: bool = False) -> SearchItem | Item:
    fields = {
        "namespace": place.above + tuple(answer["namespace"]),
        "key": answer["key"],
        "value": answer["value"],
        "created_at": _moment(answer["created_at"]),
        "updated_at": _moment(answer["updated_at"]),
    }
    if found:
        return SearchItem(**fields, score=answer.get("score"))
    return Item(**fields)


def _example(labels: Sequence[str]) -> tuple[str, ...]:
    return tuple("<user id>" if label == USER else label for label in labels)


def _moment(text: str) -> datetime:
    return parse_timestamp(text)


def _namespaces(op: ListNamespacesOp, namespaces: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """LangGraph's listing over the user's namespaces: match conditions, ``max_depth``, sorted, paged."""
    kept = [ns for ns in namespaces if all(_matches(c, ns) for c in op.match_conditions or ())]
    kept = sorted({ns[: op.max_depth] for ns in kept} if op.max_depth is not None else kept)
    return kept[op.offset : op.offset + op.limit]


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "suffix":
        namespace, path = namespace[::-1], path[::-1]
    pairs = zip(namespace, path, strict=False)
    return all(wanted == "*" or label == wanted for label, wanted in pairs)


__all__ = ["AgentMemoryStore", "NamespaceTemplate"]
