"""Time and identifiers. Ids are time-ordered (ULID layout) so sorting by id sorts by creation."""

from __future__ import annotations

import base64
import os
import threading
import time
from datetime import UTC, datetime

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_FROM_BASE32 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD.encode("ascii"))
_lock = threading.Lock()
_last = [0, 0]  # last millisecond, last random part: ids of one millisecond grow within a process


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with millisecond precision and a ``Z``, the year in four digits (stored timestamps
    compare as strings: ``999-...`` would sort after ``2026-...``). OverflowError for a moment whose UTC
    falls outside years 1..9999."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}:"
        f"{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )


def parse_timestamp(text: str) -> datetime:
    """An RFC 3339 time as an aware datetime: ``Z``/``z`` or an offset, ``T``/``t`` or a space between date and
    time. ValueError when ``text`` is not one, a time without a zone included. The one parser of RFC 3339
    times: what a client sends, and what this service stored (:func:`format_timestamp`)."""
    moment = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment


def new_id(now_ms: int | None = None) -> str:
    """A 26-character ULID: 48 bits of milliseconds (now, or the entry's own time) then 80 random bits.

    Consecutive ids of the same millisecond increase, so entries of one session keep their order.
    """
    millis = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        rand = _last[1] + 1 if millis == _last[0] else int.from_bytes(os.urandom(10), "big") >> 1
        _last[0], _last[1] = millis, rand
    value = (millis << 80) | (rand & ((1 << 80) - 1))
    return crockford(value)


def crockford(value: int) -> str:
    """The 26 Crockford base-32 digits of a 128-bit value: the last 26 of the base-32 spelling of its 160 bits
    (base64's encoder, in C, with the alphabet swapped)."""
    return base64.b32encode(value.to_bytes(20, "big"))[-26:].translate(_FROM_BASE32).decode("ascii")
