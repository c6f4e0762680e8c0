"""The graph's search index: per write, one segment item per hash bucket of the tokens it posts.

A segment (``GWS#<bucket>#<seg>``, see :mod:`agentmem.graph.records`) holds the (token, entity) pairs of
one write that fall into its bucket: ``o`` maps token -> entity -> how many of the write's observations
of that entity hold the token, ``n`` maps token -> the new entities whose name holds it. A write of
500 observations posts ~4,400 pairs in 128 items instead of one item per pair.

What a search adds up from segments is an upper bound of each entity's score: pairs are posted before
the facts they index and taken out after the facts leave, and a lost race can leave one behind. The
service scores the entities it returns from their facts, so a stale pair costs a read, never a result.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentmem.graph import records
from agentmem.graph.scoring import index_tokens
from agentmem.stores.retry import retry_on_conflict
from agentmem.stores.table import Condition, Delete, Item, Put, Table, WriteOp, query_all

_UNPOST_CHUNK = 90


@dataclass(frozen=True, slots=True)
class Pair:
    """One posted pair: ``token`` of entity ``name``'s observations (``count`` of them) or of its name."""

    token: str
    name: str
    count: int = 1
    in_name: bool = False


def observation_pairs(obs: Item) -> list[Pair]:
    return [Pair(token, obs["entity"]) for token in obs["tokens"]]


def name_pairs(name: str) -> list[Pair]:
    return [Pair(token, name, in_name=True) for token in index_tokens(name)]


def new_segment(seg_id: str, pairs: int) -> str:
    """The ``seg`` a write stores on what it posts: its bucket level, then its id."""
    return f"{records.segment_level(pairs)}{seg_id}"


def _sk(seg: str, token: str) -> str:
    return records.segment_bucket_prefix(int(seg[0]), token) + seg[1:]


def segment_items(partition: str, seg: str, pairs: Iterable[Pair]) -> list[Item]:
    """The segment items of one write (unconditional puts of new keys: ``seg`` is unique)."""
    observed: dict[str, dict[str, int]] = defaultdict(dict)
    named: dict[str, list[str]] = defaultdict(list)
    for pair in pairs:
        if pair.in_name:
            if pair.name not in named[pair.token]:
                named[pair.token].append(pair.name)
        else:
            counts = observed[pair.token]
            counts[pair.name] = counts.get(pair.name, 0) + pair.count
    items: dict[str, Item] = {}
    for field, by_token in (("o", observed), ("n", named)):
        for token, value in by_token.items():
            sk = _sk(seg, token)
            item = items.get(sk) or items.setdefault(sk, {"pk": partition, "sk": sk, "rev": 1, "o": {}, "n": {}})
            item[field][token] = value
    return list(items.values())


def bounds(table: Table, partitions: Sequence[str], token: str) -> tuple[dict[str, int], set[str]]:
    """For one query token: the observations counted per entity, and the entities whose name holds it."""
    counts: dict[str, int] = defaultdict(int)
    named: set[str] = set()
    for partition in partitions:
        for level in records.SEGMENT_LEVELS:
            for item in query_all(table, partition, records.segment_bucket_prefix(level, token)):
                for name, count in item.get("o", {}).get(token, {}).items():
                    counts[name] += int(count)
                named.update(item.get("n", {}).get(token, []))
    return counts, named


def unpost(table: Table, partition: str, removals: Iterable[tuple[str, Pair]]) -> None:
    """Take ``(seg, pair)`` out of their segments (a segment left empty is deleted), each segment under
    its ``rev``; bounded retries (Conflict when a segment keeps changing under us)."""
    by_sk: dict[str, list[Pair]] = defaultdict(list)
    for seg, pair in removals:
        by_sk[_sk(seg, pair.token)].append(pair)
    keys = list(by_sk)
    for start in range(0, len(keys), _UNPOST_CHUNK):
        chunk = keys[start : start + _UNPOST_CHUNK]

        def attempt(chunk: list[str] = chunk) -> None:
            ops: list[WriteOp] = []
            for item in table.batch_get([(partition, sk) for sk in chunk]):
                changed = _without(item, by_sk[item["sk"]])
                if changed is None:
                    continue
                condition = Condition(equals={"rev": int(item["rev"])})
                if changed["o"] or changed["n"]:
                    ops.append(Put(changed, condition))
                else:
                    ops.append(Delete(partition, item["sk"], condition))
            if ops:
                table.transact_write(ops)

        retry_on_conflict(attempt, what="the search index")


def _without(item: Item, pairs: Sequence[Pair]) -> Item | None:
    """``item`` with ``pairs`` taken out and its ``rev`` moved on; None when it held none of them."""
    observed = {token: dict(counts) for token, counts in item.get("o", {}).items()}
    named = {token: list(names) for token, names in item.get("n", {}).items()}
    changed = False
    for pair in pairs:
        if pair.in_name:
            names = named.get(pair.token, [])
            if pair.name in names:
                names.remove(pair.name)
                changed = True
                if not names:
                    del named[pair.token]
            continue
        counts = observed.get(pair.token, {})
        if pair.name in counts:
            counts[pair.name] = int(counts[pair.name]) - pair.count
            changed = True
            if counts[pair.name] <= 0:
                del counts[pair.name]
            if not counts:
                del observed[pair.token]
    if not changed:
        return None
    return {**item, "o": observed, "n": named, "rev": int(item["rev"]) + 1}
