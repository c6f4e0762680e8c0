"""Time and identifiers. Ids are time-ordered (ULID layout) so sorting by id sorts by creation."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last = [0, 0]  # last millisecond, last random part: ids of one millisecond grow within a process


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with millisecond precision and a ``Z``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_id(now_ms: int | None = None) -> str:
    """A 26-character ULID: 48 bits of milliseconds (now, or the entry's own time) then 80 random bits.

    Consecutive ids of the same millisecond increase, so entries of one session keep their order.
    """
    millis = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        rand = _last[1] + 1 if millis == _last[0] else int.from_bytes(os.urandom(10), "big") >> 1
        _last[0], _last[1] = millis, rand
    value = (millis << 80) | (rand & ((1 << 80) - 1))
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))
