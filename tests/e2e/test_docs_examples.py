"""Every example in README.md and docs/*.md runs (issue 36, point 4): a doc whose example breaks fails the build.

One live local server (the embedded SQLite store, the offline model) serves every document; in each block
``http://127.0.0.1:8000`` is that server's URL. Every fenced block names its language; ``text`` blocks are
prose. By language:

- ``sh`` / ``bash``: a document's shell blocks run in order in one bash session (``set -euo pipefail``, from
  the repository's root, ``.venv/bin`` on the PATH, the server's store as MEMORY_SQLITE_PATH), where ``curl``
  fails on any HTTP error (``--fail-with-body``): an example that answers 4xx or 5xx fails.
- ``python``: each block runs in a process of its own (from a fresh folder, with no AWS configuration or
  credentials in the environment: a block that needs a Region or credentials says so itself).
- ``ts``: a document's blocks are type-checked strictly against the TypeScript client (``tsc``), then each
  runs under Node.
- ``json``: parses.

An HTML comment just before a block says how else it is checked, ``<!-- example: KIND -->``:

- ``aws`` (needs an AWS account), ``hosted-model`` (needs a model provider's account and packages this
  project does not install), ``docker``: checked for syntax only (``bash -n``, ``compile``, TypeScript's
  parser);
- ``make``: starts a long-running process or deploys (``make serve``, ``make opensearch``, ``make deploy``):
  ``bash -n``, and each ``make`` line is planned with ``make -n`` (its targets and variables exist);
- ``install``: installs packages: ``bash -n``, and every ``./layers/core[extra]`` it names is an extra of the
  package;
- ``scripted-model`` (Python): runs, with LangChain's ``init_chat_model`` answering with a scripted model that
  calls the agent's memory tool with the user's message, as a model would (the hosted model is the part
  this project does not own);
- ``continues``: runs after the block before it of the same language in the same document, as one program.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO_ROOT, LiveServer, start_server

pytestmark = pytest.mark.xdist_group("docs-examples")

DOCUMENTS = [*sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "docs").glob("*.md")), "README.md"]
LANGUAGES = {"sh": "sh", "bash": "sh", "python": "python", "ts": "ts", "json": "json", "text": "text"}
KINDS = {"run", "aws", "hosted-model", "docker", "make", "install", "scripted-model", "continues"}
SYNTAX_ONLY = {"aws", "hosted-model", "docker"}
LOCAL_URL = "http://127.0.0.1:8000"
TYPESCRIPT = REPO_ROOT / "clients" / "typescript"
TSC = TYPESCRIPT / "node_modules" / "typescript" / "bin" / "tsc"
FENCE = re.compile(
    r"^(?:<!--\s*example:\s*(?P<kind>[\w-]+)\s*-->\n)?"
    r"(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.M | re.S,
)


INSTALLS_OR_SERVES = re.compile(r"^\s*(?:\w+=\S+\s+)*(?:make|pip3?|npm|npx|python3? -m pip|\S*agentmem serve)\b", re.M)


@dataclass(frozen=True)
class Block:
    document: str
    line: int
    language: str
    kind: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"


def blocks_of(document: str) -> list[Block]:
    text = (REPO_ROOT / document).read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        info = match["info"].strip().split()
        line = text.count("\n", 0, match.start("indent")) + 1
        assert info, f"{document}:{line}: a fenced block without a language (sh, python, ts, json or text)"
        assert info[0] in LANGUAGES, f"{document}:{line}: unknown language {info[0]!r}"
        kind = match["kind"] or "run"
        assert kind in KINDS, f"{document}:{line}: unknown example kind {kind!r}"
        body = textwrap.dedent(match["body"])
        found.append(Block(document, line, LANGUAGES[info[0]], kind, body))
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    running = start_server(
        tmp_path_factory.mktemp("docs") / "memory.db",
        {"MEMORY_EMBEDDER": "local", "MEMORY_DELETION_DRAIN_SECONDS": "30"},
    )
    yield running
    running.stop()


def _environment(server: LiveServer) -> dict[str, str]:
    """What a reader's shell has: no MEMORY_* or AWS_* settings, the venv's commands on the PATH; the store
    the commands administer is the server's."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "AWS_"))}
    return {
        **kept,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "MEMORY_SQLITE_PATH": str(server.db_path),
        "AWS_CONFIG_FILE": "/nonexistent/aws-config",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
        "PYTHONUNBUFFERED": "1",
    }


def _run(command: list[str], block: Block | str, cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    where = block.where if isinstance(block, Block) else block
    assert run.returncode == 0, (
        f"{where}: exited {run.returncode}\n--- stdout\n{run.stdout[-6000:]}\n--- stderr\n{run.stderr[-6000:]}"
    )
    return run.stdout


def _localised(body: str, server: LiveServer) -> str:
    return body.replace(LOCAL_URL, server.url)


def _check_syntax(block: Block, folder: Path, env: dict[str, str]) -> None:
    if block.language == "sh":
        _run(["bash", "-n", "-c", block.body], block, folder, env)
    elif block.language == "python":
        compile(block.body, block.where, "exec")
    elif block.language == "ts":
        script = (
            "const ts = require(process.argv[1]);"
            "const source = require('fs').readFileSync(0, 'utf8');"
            "const out = ts.transpileModule(source, {reportDiagnostics: true, fileName: 'block.ts',"
            " compilerOptions: {module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022}});"
            "if (out.diagnostics.length) { console.error(ts.formatDiagnostics(out.diagnostics,"
            " {getCanonicalFileName: (f) => f, getCurrentDirectory: () => '', getNewLine: () => '\\n'}));"
            " process.exit(1); }"
        )
        run = subprocess.run(
            ["node", "-e", script, str(TYPESCRIPT / "node_modules" / "typescript")],
            input=block.body,
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, f"{block.where}: {run.stderr}"


def _check_make(block: Block, env: dict[str, str]) -> None:
    commands = [c for line in block.body.splitlines() for c in re.split(r"&&|\|\||;", line.split(" #", 1)[0])]
    for line in commands:
        words = shlex.split(line.strip() or "#", comments=True)
        settings = []
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            settings.append(words.pop(0))
        if not words or words[0] != "make":
            continue
        planned = {**env, **dict(s.split("=", 1) for s in settings)}
        _run(["make", "-n", *words[1:]], f"{block.where}: {line.strip()}", REPO_ROOT, planned, timeout=120)


def _check_install(block: Block) -> None:
    extras = set(re.findall(r"^\s*(\w+)\s*=", (REPO_ROOT / "layers/core/pyproject.toml").read_text(), re.M))
    for named in re.findall(r"\./layers/core\[([\w,]+)\]", block.body):
        for extra in named.split(","):
            assert extra in extras, f"{block.where}: agentmem has no extra {extra!r}"


SCRIPTED_MODEL = '''
import uuid as _uuid

import langchain.chat_models as _chat_models
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel as _Fake
from langchain_core.messages import AIMessage as _AIMessage


class _ScriptedModel(_Fake):
    """Saves the user's last message with the memory tool, then answers (what a model would do here)."""

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        from langchain_core.outputs import ChatGeneration, ChatResult

        if messages[-1].type == "human":
            call = {"name": "manage_memory", "args": {"content": messages[-1].content, "action": "create"},
                    "id": "call-" + _uuid.uuid4().hex[:8]}
            reply = _AIMessage(content="", tool_calls=[call])
        else:
            reply = _AIMessage(content="Noted.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


_chat_models.init_chat_model = lambda *args, **kwargs: _ScriptedModel(messages=iter(()))
'''


def _python_program(blocks: list[Block], index: int) -> str:
    """The block at ``index``, after the blocks it continues."""
    start = index
    while blocks[start].kind == "continues":
        start -= 1
    program = "\n\n".join(b.body for b in blocks[start : index + 1])
    if any(b.kind == "scripted-model" for b in blocks[start : index + 1]):
        program = SCRIPTED_MODEL + "\n" + program
    return program


def _typescript(blocks: list[Block], server: LiveServer, folder: Path, env: dict[str, str]) -> None:
    """Type-check every TypeScript block of a document against the client, then run each under Node."""
    if not blocks:
        return
    assert TSC.exists(), (
        f"the TypeScript client's dev dependencies are missing: make test (npm ci --prefix {TYPESCRIPT})"
    )
    _run(["node", str(TSC), "-p", str(TYPESCRIPT)], "building the TypeScript client", REPO_ROOT, env)
    project = folder / "ts"
    (project / "node_modules" / "@agentmem").mkdir(parents=True)
    (project / "node_modules" / "@agentmem" / "client").symlink_to(TYPESCRIPT)
    (project / "package.json").write_text(json.dumps({"type": "module", "private": True}))
    # Node's own globals, as far as the examples use them (the client itself needs none of Node's types).
    (project / "node-globals.d.ts").write_text(
        "declare const process: { env: Record<string, string | undefined>; exitCode?: number };\n"
    )
    options = {
        "target": "ES2022",
        "module": "NodeNext",
        "moduleResolution": "NodeNext",
        "lib": ["ES2022", "DOM"],
        "types": [],
        "strict": True,
        "noUncheckedIndexedAccess": True,
        "skipLibCheck": False,
        "outDir": "out",
        "rootDir": ".",
    }
    names = []
    for number, block in enumerate(blocks):
        if block.kind in SYNTAX_ONLY:
            continue
        program = block.body if block.kind != "continues" else f"{(project / names[-1]).read_text()}\n{block.body}"
        name = f"block{number:02d}.ts"
        (project / name).write_text(f"// {block.where}\n{_localised(program, server)}\nexport {{}};\n")
        names.append(name)
    (project / "tsconfig.json").write_text(
        json.dumps({"compilerOptions": options, "files": ["node-globals.d.ts", *names]})
    )
    _run(["node", str(TSC), "-p", str(project)], f"{blocks[0].document}: tsc", project, env)
    for name in names:
        _run(["node", str(project / "out" / name.replace(".ts", ".js"))], f"{blocks[0].document}: {name}", project, env)


class Shell:
    """One bash session for a document's shell blocks, in order (their variables carry over, as in a
    reader's terminal); a block that fails ends the session."""

    PRELUDE = 'set -euo pipefail\ncurl() { command curl --fail-with-body --show-error "$@"; echo; }\n'

    def __init__(self, env: dict[str, str]) -> None:
        self._process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._send(self.PRELUDE)
        self._count = 0

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, text: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(text)
        self._process.stdin.flush()

    def run(self, block: Block, body: str, timeout: float = 180) -> str:
        self._count += 1
        marker = f"__example_{self._count}_done__"
        self._send(f"# {block.where}\n{body}\necho {marker}\n")
        output: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"{block.where}: still running after {timeout} s\n{''.join(output)[-6000:]}"
                ) from None
            if line is None:
                code = self._process.wait()
                raise AssertionError(f"{block.where}: failed (exit {code})\n{''.join(output)[-6000:]}")
            if line.strip() == marker:
                return "".join(output)
            output.append(line)

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_example_of_the_document_runs(document: str, server: LiveServer, tmp_path: Path) -> None:
    blocks = blocks_of(document)
    env = _environment(server)
    folder = tmp_path / "reader"
    folder.mkdir()
    python = [b for b in blocks if b.language == "python"]
    shell: Shell | None = None
    try:
        for block in blocks:
            if block.language == "json":
                if block.kind == "run":
                    json.loads(block.body)
                continue
            if block.language == "text":
                continue
            _check_syntax(block, folder, env)
            if block.kind in SYNTAX_ONLY:
                continue
            if block.kind == "make":
                _check_make(block, env)
            elif block.kind == "install":
                _check_install(block)
            elif block.language == "sh":
                # (a block that installs or starts a server must say so: it is never run here)
                assert not INSTALLS_OR_SERVES.search(block.body), f"{block.where}: mark it make or install"
                shell = shell or Shell(env)
                shell.run(block, _localised(block.body, server))
            elif block.language == "python":
                index = python.index(block)
                if index + 1 < len(python) and python[index + 1].kind == "continues":
                    continue
                program = _localised(_python_program(python, index), server)
                _run([sys.executable, "-c", program], block, folder, env)
    finally:
        if shell is not None:
            shell.close()
    _typescript([b for b in blocks if b.language == "ts"], server, tmp_path, env)


COMMAND = re.compile(
    r"^\s*(?:\$ )?(?:curl |make [\w-]+(?:\s|$)|pip |npm |\.venv/bin/|agentmem [\w-]+ --"
    r"|import \w|from \S+ import |export \w)",
    re.M,
)


def test_no_example_hides_as_prose() -> None:
    # Given every block of every document
    prose = [b for d in DOCUMENTS for b in blocks_of(d) if b.language == "text"]
    # Then a block that holds commands or code says its language, so that it is run or checked
    assert [b.where for b in prose if COMMAND.search(b.body)] == []
    assert sum(len(blocks_of(d)) for d in DOCUMENTS) > 40
