"""What each Table call would cost on DynamoDB on demand, in request units, counted from the items it
read and wrote: the figure the cost model prices (agentmem/costs) and the usage meter records.

Both adapters charge the same rules at the same port boundaries, so the local server's figures are what
the cloud would bill for the same calls (a conformance test holds them equal). The rules (DynamoDB
Developer Guide, "Read/write capacity mode", "DynamoDB transactions"; list prices in costs/prices.csv):

- a read unit is 4 KiB of a strongly consistent read (every read here is one), rounded up per item for
  ``GetItem`` and ``BatchGetItem`` (a key that holds nothing still costs one unit), and per call on the
  items' total for ``Query`` (at least one unit);
- a write unit is 1 KiB of an item written, rounded up per item; a delete costs the deleted item's size
  (known when this process read or wrote it recently, else one unit), an update the larger of the item
  before and after (taken as after);
- inside ``TransactWriteItems`` every item, condition checks included, costs twice its units.

A measurement is opened with :func:`measuring`; what is charged while it is open adds to it (and to any
measurement around it), in this thread and in the threads the adapters start for one call. One opened
with :func:`bounded` also refuses the call that takes its reads past a bound.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

READ_UNIT_BYTES = 4096
WRITE_UNIT_BYTES = 1024
TRANSACTION_FACTOR = 2


@dataclass
class Consumption:
    """Request units and items of the Table calls made while a measurement was open."""

    read_units: float = 0.0
    write_units: float = 0.0
    items_read: int = 0
    items_written: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    read_bound: float | None = None
    """Read units past which the call that read them raises ``refusal()`` (:func:`bounded`)."""
    call_bound: int | None = None
    """Table calls past which the next call raises ``refusal()`` (:func:`bounded`)."""
    refusal: Callable[[], Exception] | None = None

    def over(self) -> bool:
        """Past a bound of :func:`bounded`."""
        if self.read_bound is not None and self.read_units > self.read_bound:
            return True
        return self.call_bound is not None and sum(self.calls.values()) > self.call_bound

    def add(self, other: Consumption) -> None:
        self.read_units += other.read_units
        self.write_units += other.write_units
        self.items_read += other.items_read
        self.items_written += other.items_written
        self.calls.update(other.calls)


_open: ContextVar[tuple[Consumption, ...]] = ContextVar("capacity_measurements", default=())
_lock = threading.Lock()


@contextlib.contextmanager
def measuring() -> Iterator[Consumption]:
    """Measure the Table calls made inside (nested measurements each see them)."""
    with _opened(Consumption()) as consumption:
        yield consumption


@contextlib.contextmanager
def bounded(read_units: float, refusal: Callable[[], Exception], *, calls: int | None = None) -> Iterator[Consumption]:
    """Measure the Table calls made inside, and make the call whose reads take them past ``read_units``, or
    the call past ``calls`` calls, raise ``refusal()`` once its answer is read: what is read inside is at most
    the bound and one call (a page of a query, a batch read). Every call is a round trip, whatever it reads:
    bounding the calls bounds the time (a call costs milliseconds on DynamoDB however little it reads)."""
    with _opened(Consumption(read_bound=read_units, call_bound=calls, refusal=refusal)) as consumption:
        yield consumption


@contextlib.contextmanager
def _opened(consumption: Consumption) -> Iterator[Consumption]:
    token = _open.set((*_open.get(), consumption))
    try:
        yield consumption
    finally:
        _open.reset(token)


def active() -> bool:
    return bool(_open.get())


def _charge(call: str, *, read: float = 0.0, write: float = 0.0, items_read: int = 0, items_written: int = 0) -> None:
    measurements = _open.get()
    if not measurements:
        return
    with _lock:
        for consumption in measurements:
            consumption.read_units += read
            consumption.write_units += write
            consumption.items_read += items_read
            consumption.items_written += items_written
            consumption.calls[call] += 1
    for consumption in measurements:
        if consumption.refusal is not None and consumption.over():
            raise consumption.refusal()


# -- item sizes, as DynamoDB counts them -------------------------------------------------------------


def value_size(value: Any) -> int:
    """The bytes DynamoDB counts for one attribute value (numbers: an upper bound)."""
    kind = type(value)
    if kind is str:
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if kind is dict:
        return 3 + _attributes_size(value) + len(value)
    if kind is bytes or kind is bytearray:
        return len(value)
    if value is None or kind is bool:
        return 1
    if kind is int:
        return 1 + (len(str(abs(value))) + 1) // 2 + 1
    if isinstance(value, Mapping):
        return 3 + _attributes_size(value) + len(value)
    if isinstance(value, list | tuple | set | frozenset):
        return 3 + sum(value_size(v) + 1 for v in value)
    return len(str(value).encode("utf-8", "surrogatepass"))


def _attributes_size(attributes: Mapping[str, Any]) -> int:
    """Names and values of a map's attributes; strings, the most of them, sized here without a call."""
    size = 0
    for name, value in attributes.items():
        size += len(name) if type(name) is str and name.isascii() else value_size(name)
        if type(value) is str and value.isascii():
            size += len(value)
        else:
            size += value_size(value)
    return size


def item_size(item: Mapping[str, Any]) -> int:
    """The size of an item as DynamoDB counts it (attribute names and values)."""
    return _attributes_size(item)


def read_units(size: int) -> int:
    return max(1, math.ceil(size / READ_UNIT_BYTES))


def write_units(size: int) -> int:
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


class _KnownSizes:
    """The sizes of items this process read or wrote lately, so that a delete (by key) is charged its
    item's size; bounded, oldest forgotten first."""

    def __init__(self, capacity: int = 200_000) -> None:
        self._sizes: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def note(self, item: Mapping[str, Any], size: int) -> None:
        key = (str(item.get("pk")), str(item.get("sk")))
        with self._lock:
            self._sizes[key] = size
            self._sizes.move_to_end(key)
            while len(self._sizes) > self._capacity:
                self._sizes.popitem(last=False)

    def pop(self, pk: str, sk: str) -> int | None:
        with self._lock:
            return self._sizes.pop((pk, sk), None)


_known = _KnownSizes()


def _sized(item: Mapping[str, Any]) -> int:
    size = item_size(item)
    _known.note(item, size)
    return size


# -- what each Table call is charged ---------------------------------------------------------------


def get(item: Mapping[str, Any] | None) -> None:
    if active():
        _charge("GetItem", read=read_units(_sized(item)) if item is not None else 1, items_read=1)


def batch_get(keys: int, found: Iterable[Mapping[str, Any]]) -> None:
    if not active():
        return
    items = list(found)
    units = sum(read_units(_sized(item)) for item in items) + max(0, keys - len(items))
    _charge("BatchGetItem", read=units, items_read=len(items))


def query(items: Iterable[Mapping[str, Any]]) -> None:
    """One Query call (one page) that read ``items`` (expired ones included: DynamoDB read them too)."""
    if not active():
        return
    sizes = [_sized(item) for item in items]
    _charge("Query", read=max(1, math.ceil(sum(sizes) / READ_UNIT_BYTES)), items_read=len(sizes))


def _deleted_units(pk: str, sk: str) -> int:
    known = _known.pop(pk, sk)
    return write_units(known) if known is not None else 1


def put(item: Mapping[str, Any]) -> None:
    if active():
        _charge("PutItem", write=write_units(_sized(item)), items_written=1)


def delete(pk: str, sk: str) -> None:
    if active():
        _charge("DeleteItem", write=_deleted_units(pk, sk), items_written=1)


def update(after: Mapping[str, Any]) -> None:
    if active():
        _charge("UpdateItem", write=write_units(_sized(after)), items_written=1)


def batch_write(puts: Iterable[Mapping[str, Any]], deletes: Iterable[tuple[str, str]]) -> None:
    if not active():
        return
    put_units = [write_units(_sized(item)) for item in puts]
    delete_units = [_deleted_units(pk, sk) for pk, sk in deletes]
    count = len(put_units) + len(delete_units)
    if count:
        _charge("BatchWriteItem", write=sum(put_units) + sum(delete_units), items_written=count)


def transaction(
    puts: Iterable[Mapping[str, Any]], deletes: Iterable[tuple[str, str]], *, updates: int = 0, checks: int = 0
) -> None:
    """One TransactWriteItems of ``puts``, ``deletes``, ``updates`` (counters: small items, one unit) and
    ``checks`` (condition checks, one unit each), every item at twice its units."""
    if not active():
        return
    put_units = [write_units(_sized(item)) for item in puts]
    delete_units = [_deleted_units(pk, sk) for pk, sk in deletes]
    units = sum(put_units) + sum(delete_units) + updates + checks
    written = len(put_units) + len(delete_units) + updates
    _charge("TransactWriteItems", write=TRANSACTION_FACTOR * units, items_written=written)
