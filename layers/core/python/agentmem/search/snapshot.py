"""A held partition index as one compact object, so a process that does not hold a partition loads it in
one request instead of reading every entry of it (issue 35): what agentmem/search/partition.py holds, less
what it can rebuild, with vectors quantized to 8 bits.

The object is a header (magic, format, a JSON description) and sections, each compressed or not as it
pays: the ids, filter rows and expiries (JSON, zlib); the lengths and id order (float arrays, zlib); each
posting list as position deltas and counts (zlib); each model's vectors as int8 with one scale a row
(``value = int8 * scale``: a unit vector's cosine moves by about 1e-3). An index decoded from it ranks as
the index it was encoded from, within that quantization. It names the change log place it holds
(``epoch``, ``version``, and the versions below it whose rows its index was still waiting for): a reader catches
up from there (agentmem/search/changes.py), or reads the partition whole when the log no longer reaches back.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

from agentmem.search.changes import Caught
from agentmem.search.partition import PartitionIndex, _Columns, _Postings, _Vectors

MAGIC = b"AMSNAP"
FORMAT = 1
_LENGTH = struct.Struct("<I")


class SnapshotError(ValueError):
    """The bytes are not a snapshot this code reads (another format, cut short, corrupt)."""


def encode(index: PartitionIndex, written_at: float) -> bytes:
    """The live entries of ``index`` at its place in the log (removed positions are left out)."""
    import numpy as np

    live = [p for p, entry_id in enumerate(index.ids) if entry_id is not None]
    renumber = np.full(max(len(index.ids), 1), -1, dtype=np.int64)
    renumber[live] = np.arange(len(live))
    columns = index._columns
    sections: list[tuple[str, bytes]] = [
        (
            "entries",
            _zipped(
                json.dumps(
                    {
                        "ids": [index.ids[p] for p in live],
                        "rows": [index.rows[p] for p in live],
                        "expires": {str(int(renumber[p])): when for p, when in index._expires.items()},
                    },
                    ensure_ascii=False,
                    separators=(",", ":"),
                ).encode("utf-8")
            ),
        ),
        (
            "columns",
            _zipped(
                np.concatenate((columns.length[live], columns.contextual[live], columns.ties[live].reshape(-1)))
                .astype("<f8")
                .tobytes()
            ),
        ),
    ]
    words: dict[str, list[str]] = {}
    for name, postings in (("own", index._own), ("context", index._context)):
        kept: list[tuple[str, Any, Any]] = []
        for word, word_postings in postings.items():
            positions, counts = word_postings.as_arrays()
            alive = renumber[positions] >= 0
            if alive.any():
                kept.append((word, renumber[positions[alive]], counts[alive]))
        words[name] = [word for word, _, _ in kept]
        sizes = np.asarray([len(p) for _, p, _ in kept], dtype="<u4")
        positions = np.concatenate([p for _, p, _ in kept]) if kept else np.zeros(0, dtype=np.int64)
        starts = np.cumsum(sizes) - sizes
        deltas = positions.copy()
        if positions.size:
            deltas[1:] -= positions[:-1]
            deltas[starts[sizes > 0]] = positions[starts[sizes > 0]]  # each list restarts from its first
        counts = np.concatenate([c for _, _, c in kept]) if kept else np.zeros(0)
        sections.append(
            (
                name,
                _zipped(sizes.tobytes() + deltas.astype("<u4").tobytes() + counts.astype("<u2").tobytes()),
            )
        )
    models = []
    for model, vectors in index._vectors.items():
        rows = [i for i, p in enumerate(vectors.positions[: vectors.size].tolist()) if renumber[p] >= 0]
        if not rows:
            continue
        matrix = vectors.matrix[rows]
        scale = np.abs(matrix).max(axis=1) / 127.0
        scale[scale == 0] = 1.0
        quantized = np.rint(matrix / scale[:, None]).astype(np.int8)
        models.append({"model": model, "rows": len(rows), "dimension": int(matrix.shape[1])})
        sections.append(
            (
                f"vectors:{model}",
                _zipped(renumber[vectors.positions[rows]].astype("<u4").tobytes())
                + scale.astype("<f4").tobytes()
                + quantized.tobytes(),
            )
        )
    header = {
        "format": FORMAT,
        "epoch": index.place.epoch,
        "version": index.place.version,
        # the rows the index still waits for (their writers had taken the number, not yet logged): a process
        # started from the snapshot looks for them too, or it would never read them
        "missing": [[version, seen] for version, seen in sorted(index.place.missing.items())],
        "written_at": written_at,
        "entries": len(live),
        "words": words,
        "models": models,
        "sections": [[name, len(data)] for name, data in sections],
    }
    head = _zipped(json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return MAGIC + bytes([FORMAT]) + _LENGTH.pack(len(head)) + head + b"".join(data for _, data in sections)


def place_of(data: bytes) -> tuple[str | None, int, float]:
    """The (epoch, version, written_at) a snapshot holds, read from its header only."""
    header, _ = _header(data)
    return header["epoch"], int(header["version"]), float(header["written_at"])


def decode(data: bytes) -> PartitionIndex:
    """The index ``data`` holds, at the place in the log it names."""
    import numpy as np

    header, offset = _header(data)
    sections: dict[str, bytes] = {}
    for name, size in header["sections"]:
        sections[name] = data[offset : offset + size]
        offset += size
    if offset != len(data):
        raise SnapshotError("the snapshot's sections do not add up to its length")
    try:
        entries = json.loads(zlib.decompress(sections["entries"]))
        count = int(header["entries"])
        index = PartitionIndex(header["epoch"], int(header["version"]))
        missing = {int(version): float(seen) for version, seen in header.get("missing", [])}
        index.place = Caught(header["epoch"], int(header["version"]), missing, caught_up_at=float(header["written_at"]))
        index.ids = [str(entry_id) for entry_id in entries["ids"]]
        index.rows = [(row[0], row[1]) for row in entries["rows"]]
        index._position = {str(entry_id): p for p, entry_id in enumerate(index.ids)}
        index._expires = {int(p): when for p, when in entries["expires"].items()}
        floats = np.frombuffer(zlib.decompress(sections["columns"]), dtype="<f8")
        columns = _Columns(max(16, count))
        columns.size = count
        columns.alive[:count] = True
        columns.length[:count] = floats[:count]
        columns.contextual[:count] = floats[count : 2 * count]
        columns.ties[:count] = floats[2 * count :].reshape(count, 3)
        index._columns = columns
        for name, target in (("own", index._own), ("context", index._context)):
            words = header["words"][name]
            raw = zlib.decompress(sections[name])
            sizes = np.frombuffer(raw, dtype="<u4", count=len(words))
            total = int(sizes.sum())
            start = 4 * len(words)
            deltas = np.frombuffer(raw, dtype="<u4", count=total, offset=start).astype(np.int64)
            counts = np.frombuffer(raw, dtype="<u2", count=total, offset=start + 4 * total).astype(np.float64)
            ends = np.cumsum(sizes, dtype=np.int64)
            starts = ends - sizes
            running = np.cumsum(deltas)
            before = np.where(starts > 0, running[np.maximum(starts - 1, 0)] if total else 0, 0)
            positions = running - np.repeat(before, sizes)  # each list's deltas summed from its own start
            for word, start, end in zip(words, starts.tolist(), ends.tolist(), strict=True):
                target[word] = _Postings(arrays=(positions[start:end], counts[start:end]))
            index._postings += total
        for model in header["models"]:
            rows, dimension = int(model["rows"]), int(model["dimension"])
            raw = sections[f"vectors:{model['model']}"]
            positions_size = len(raw) - rows * 4 - rows * dimension
            positions = np.frombuffer(zlib.decompress(raw[:positions_size]), dtype="<u4").astype(np.int64)
            scale = np.frombuffer(raw, dtype="<f4", count=rows, offset=positions_size)
            quantized = np.frombuffer(raw, dtype=np.int8, offset=positions_size + 4 * rows)
            matrix = quantized.reshape(rows, dimension).astype(np.float32) * scale[:, None]
            index._vectors[model["model"]] = _Vectors(matrix, positions, rows)
    except (KeyError, ValueError, TypeError, IndexError, zlib.error) as error:
        raise SnapshotError(f"the snapshot cannot be read: {type(error).__name__}") from None
    return index


def _zipped(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def _header(data: bytes) -> tuple[dict[str, Any], int]:
    start = len(MAGIC) + 1
    if data[: len(MAGIC)] != MAGIC or len(data) < start + _LENGTH.size:
        raise SnapshotError("not a snapshot")
    if data[len(MAGIC)] != FORMAT:
        raise SnapshotError(f"a snapshot of format {data[len(MAGIC)]}, not {FORMAT}")
    (size,) = _LENGTH.unpack_from(data, start)
    offset = start + _LENGTH.size + size
    try:
        header = json.loads(zlib.decompress(data[start + _LENGTH.size : offset]))
    except (ValueError, zlib.error):
        raise SnapshotError("the snapshot's header cannot be read") from None
    return header, offset
