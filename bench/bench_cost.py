"""`make bench ONLY=cost`: what each call costs in the cloud, what a deployment costs at rest, and the monthly
bill of three workloads beside Bedrock AgentCore Memory's, for both search backends.

How it is measured (nothing here is a guess; the assumptions that are not prices are named in
bench/cost_model.py and printed):
- Each backend's stack is synthesized (prod stage: the table backend and OpenSearch Serverless) and brought
  up in moto by the cloud rehearsal (tests/cloud/rehearsal.py): every function runs its real handler with
  the environment and memory size its template gives it, behind the template's API Gateway methods and
  authorizers. The OpenSearch stack's collection is the real local node.
- Per call: the API Gateway requests and authorizer invocations the gateway made; each function's
  invocations and billed duration (our code's time here, scaled to the CPU share Lambda gives the
  function's memory, plus a modelled round trip for each AWS call it made: moto's time is an emulator's);
  DynamoDB request units counted from the items each call read and wrote (agentmem/capacity.py, the
  on-demand rules); Titan v2 tokens of the texts embedded; Step Functions transitions of the erasure's
  execution; CloudWatch log bytes the functions wrote (Powertools' lines, EMF metrics, Lambda's three
  platform lines, the gateway's access log line); stream records the indexer read.
- Extraction of long-term memories (issue 34): the real pipeline over LoCoMo's dev conversations (the sample
  conversation at a hundredth), sessions written whole and turn by turn, with a scripted model of a model's answer
  lengths: the model's tokens per 1,000 turns by strategy, counted from its requests (bench/extraction_use.py), or
  a real model's where ``make bench ONLY=extraction`` wrote bench/out/extraction.json; priced at Nova Micro, Nova
  Lite and Claude Haiku list prices, beside AgentCore's long-term record rates for the same records.
- A cold search (issue 35): a user of 1,000 / 10,000 / 100,000 memories (Titan-sized vectors) written through
  the memory service on SQLite, loaded by a process that does not hold it: before, the partition read whole;
  after, the snapshot (one object) and the change log's rows since it, 0 to 99 turns behind; read units as
  DynamoDB bills them, the snapshot's bytes, its decode time here.
- The held indexes' cache: each workload's agents (sessions of turns, Poisson in time) over the API function's
  containers, each holding users' indexes within half its memory (cost_model.simulate_cache, its assumptions
  stated there): the hit rate, and a search's cost with the cold loads, catch-ups and snapshots it causes.
- Prices: agentmem/costs/prices.csv, one line each with region, date and source.
The figures are printed and written to bench/out/cost.json (not committed).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import math
import os
import random
import sys
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import cost_model
from benchlib import SCALE, scaled, sentence, vocabulary
from cost_model import CallUse, FunctionUse, Workload

from agentmem import capacity, costs
from agentmem.costs import price, prices
from agentmem.embeddings.bedrock import estimated_tokens

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "cost.json"
EXTRACTION_OUT = ROOT / "bench" / "out" / "extraction.json"
"""A real model's tokens and records per turn (``make bench ONLY=extraction``), preferred where present."""
SYNTH_DIR = ROOT / ".data" / "bench-cost-cdk.out"
APP = "shop"
USER = "alice"
SCOPE = f"/v1/apps/{APP}/users/{USER}"
MEMORIES = scaled(1000, 10)
FACTS = scaled(100, 5)
REPEATS = scaled(5, 1)
AGENTCORE_RECORDS = scaled(100, 5)
"""Memory records of the user that RetrieveMemoryRecords ranks."""
LAMBDA_FULL_CPU_MB = cost_model.LAMBDA_FULL_CPU_MB
"""Our code's time here is scaled by 1769 / memory for the function's CPU share (this machine's core is taken
as fast as a Graviton core)."""
AWS_ROUND_TRIP_MS = {
    ("dynamodb", "GetItem"): 4,
    ("dynamodb", "Query"): 5,
    ("dynamodb", "BatchGetItem"): 6,
    ("dynamodb", "PutItem"): 6,
    ("dynamodb", "UpdateItem"): 6,
    ("dynamodb", "DeleteItem"): 6,
    ("dynamodb", "BatchWriteItem"): 10,
    ("dynamodb", "TransactWriteItems"): 15,
    ("bedrock-runtime", "InvokeModel"): 40,
    ("secrets-manager", "GetSecretValue"): 15,
    ("sfn", "StartExecution"): 25,
    ("sfn", "DescribeExecution"): 10,
    ("opensearch", "search"): 20,
    ("opensearch", "bulk"): 40,
}
"""Assumed in-region round trips (ms) of each AWS call a function waits on: DynamoDB's single-digit
milliseconds (transactions and batches more), Titan v2 embeddings some tens of ms. Calls are taken one
after another (the writes the table sends concurrently are counted each: an upper bound)."""
DEFAULT_ROUND_TRIP_MS = 10
LAMBDA_PLATFORM_LOG_BYTES = cost_model.LAMBDA_PLATFORM_LOG_BYTES
ACCESS_LOG_BYTES = 450
"""The gateway's access log line per request, in the template's JSON format with its standard fields."""

STACKS = {"table": "AgentMemory-prod-table", "opensearch": "AgentMemory-prod"}
EMBEDDING_SHARES = "MEMORY_EMBEDDING_SHARES"
"""Each tenant's embedding calls a minute (issue 41): the bench keeps their metering and lifts the limit, since it
runs a month of one user's calls in seconds."""
DEV_STACK = "AgentMemory-dev-table"
"""A dev stage on the table backend: priced idle only (its floor), not measured."""


# -- the stacks ------------------------------------------------------------------------------------


def _sources_digest() -> str:
    digest = hashlib.sha256()
    files = sorted((ROOT / "infra").rglob("*.py")) + sorted((ROOT / "infra").rglob("*.json"))
    files += [ROOT / "layers/core/python/agentmem/settings.py"]
    files += sorted((ROOT / "layers/core/python/agentmem/deletion").glob("*.json"))
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def synthesized() -> Any:
    """Both stacks, synthesized once and kept in .data/ until infra/ changes."""
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from tests.synthesis import Synthesized

    stamp = SYNTH_DIR / "sources.sha256"
    digest = _sources_digest()
    names = [*STACKS.values(), DEV_STACK]
    held = all((SYNTH_DIR / f"{name}.template.json").is_file() for name in names)
    if not (held and stamp.is_file() and stamp.read_text() == digest):
        from aws_cdk import App

        from infra.stack import DeploymentOptions, MemoryServiceStack

        print("synthesizing the prod stacks (table, opensearch)...", file=sys.stderr, flush=True)
        app = App(outdir=str(SYNTH_DIR), context={"aws:cdk:bundling-stacks": [], "dependency_layer": "source"})
        for backend, name in STACKS.items():
            options = DeploymentOptions(stage="prod", search_backend=backend, alarm_email="alarms@example.com")
            MemoryServiceStack(app, name, options=options)
        MemoryServiceStack(app, DEV_STACK, options=DeploymentOptions(stage="dev", search_backend="table"))
        app.synth()
        stamp.write_text(digest)
    templates = {name: json.loads((SYNTH_DIR / f"{name}.template.json").read_text()) for name in names}
    return Synthesized(SYNTH_DIR, templates, {})


# -- what each function run used -------------------------------------------------------------------


@dataclass
class Run:
    function: str
    code_ms: float
    aws_calls: Counter[tuple[str, str]]
    consumption: capacity.Consumption
    log_bytes: int
    tokens: int


@dataclass
class _Waits:
    seconds: float = 0.0
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    tokens: int = 0


_waits: ContextVar[_Waits | None] = ContextVar("bench_cost_waits", default=None)
_emf_metrics: set[tuple[str, str, str]] = set()


def _before_call(model: Any, context: dict[str, Any], **_: Any) -> None:
    context["bench_cost_started"] = time.perf_counter()


def _after_call(model: Any, context: dict[str, Any], **_: Any) -> None:
    waits = _waits.get()
    started = context.get("bench_cost_started")
    if model.name == "InvokeModel":
        return  # counted per round of concurrent calls by _counted_titan
    if waits is not None and started is not None:
        waits.seconds += time.perf_counter() - started
        waits.calls[(model.service_model.service_id.hyphenize(), model.name)] += 1


class _LogBytes(logging.Handler):
    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__()
        self.setFormatter(formatter)
        self.count = 0
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock2:
            self.count += len(self.format(record).encode()) + 1


class _Printed(io.StringIO):
    """What a function prints (Powertools' EMF metrics): counted as log bytes; metric names kept."""

    def write(self, text: str) -> int:
        for line in text.splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                blob = json.loads(line)
                for directive in blob.get("_aws", {}).get("CloudWatchMetrics", []):
                    for metric in directive.get("Metrics", []):
                        dims = ",".join(sorted(d for group in directive.get("Dimensions", []) for d in group))
                        _emf_metrics.add((directive.get("Namespace", ""), metric.get("Name", ""), dims))
        return super().write(text)


_printed: ContextVar[_Printed | None] = ContextVar("bench_cost_printed", default=None)


class _RoutedStdout(io.TextIOBase):
    """sys.stdout while the bench runs functions: what a function run prints goes to its own sink (each
    run in its thread and context), everything else to the real stdout."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, text: str) -> int:
        sink = _printed.get()
        return (sink if sink is not None else self.real).write(text)

    def flush(self) -> None:
        self.real.flush()


def _metered_deployment_class() -> type:
    from tests.cloud.rehearsal import Deployment

    class MeteredDeployment(Deployment):  # type: ignore[misc, valid-type]
        """The rehearsal's deployment, with each function run measured (and the drain not waited: a Wait
        state costs one transition however long it waits)."""

        runs: list[Run]
        log_handler: _LogBytes

        def lambda_environment(self, fn: Any) -> dict[str, str]:
            env: dict[str, str] = super().lambda_environment(fn)
            env["MEMORY_DELETION_DRAIN_SECONDS"] = "0"
            return env

        def memory_of(self, name: str) -> int:
            return int(self.template.properties(self.functions[name].logical_id).get("MemorySize", 128))

        def invoke(self, name: str, event: Any) -> Any:
            waits = _Waits()
            printed = _Printed()
            token, sink = _waits.set(waits), _printed.set(printed)
            logged_before = self.log_handler.count
            try:
                with capacity.measuring() as used:
                    started = time.perf_counter()
                    result = super().invoke(name, event)
                    elapsed = time.perf_counter() - started
            finally:
                _waits.reset(token)
                _printed.reset(sink)
            log_bytes = self.log_handler.count - logged_before + len(printed.getvalue().encode())
            self.runs.append(Run(name, (elapsed - waits.seconds) * 1000, waits.calls, used, log_bytes, waits.tokens))
            return result

    return MeteredDeployment


def _billed_ms(run: Run, memory_mb: int) -> float:
    cpu = run.code_ms * LAMBDA_FULL_CPU_MB / memory_mb
    aws = sum(AWS_ROUND_TRIP_MS.get(call, DEFAULT_ROUND_TRIP_MS) * n for call, n in run.aws_calls.items())
    return math.ceil(cpu + aws)


@contextlib.contextmanager
def deployment_of(stack: str, opensearch_url: str | None) -> Iterator[Any]:
    """The stack brought up in moto, its runs measured."""
    import botocore.handlers

    from agentmem.observability import logger

    hooks = [("before-call", _before_call), ("after-call", _after_call)]
    botocore.handlers.BUILTIN_HANDLERS.extend(hooks)
    cls = _metered_deployment_class()
    deployment = cls(synthesized(), stack, opensearch_url=opensearch_url)
    deployment.runs = []
    std_logger = logging.getLogger(logger.service)
    saved_handlers, saved_level = list(std_logger.handlers), std_logger.level
    deployment.log_handler = _LogBytes(logger.registered_formatter)
    std_logger.handlers = [deployment.log_handler]
    std_logger.setLevel(logging.INFO)  # the template's POWERTOOLS_LOG_LEVEL
    real_stdout, sys.stdout = sys.stdout, _RoutedStdout(sys.stdout)
    try:
        with deployment.deployed(), _counted_opensearch(), _counted_titan():
            for function in deployment.functions.values():  # a month of one user's calls in seconds: metered, no 429
                if EMBEDDING_SHARES in function.variables:
                    limits = ",".join(f"{tier}:{10**9}" for tier in ("starter", "standard", "scale"))
                    function.variables[EMBEDDING_SHARES] = limits
            yield deployment
    finally:
        sys.stdout = real_stdout
        std_logger.handlers = saved_handlers
        std_logger.setLevel(saved_level)
        for hook in hooks:
            botocore.handlers.BUILTIN_HANDLERS.remove(hook)


@contextlib.contextmanager
def _counted_opensearch() -> Iterator[None]:
    from opensearchpy.transport import Transport

    patched = Transport.perform_request

    def perform_request(transport: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        waits = _waits.get()
        started = time.perf_counter()
        try:
            return patched(transport, method, url, *args, **kwargs)
        finally:
            if waits is not None:
                waits.seconds += time.perf_counter() - started
                waits.calls[("opensearch", "bulk" if "_bulk" in url else "search")] += 1

    with mock.patch.object(Transport, "perform_request", perform_request):
        yield


@contextlib.contextmanager
def _counted_titan() -> Iterator[None]:
    """Titan's tokens and round trips: the embedder sends a batch as concurrent calls from its own
    threads (which do not see the run's context), so a batch is counted where it is sent, one round trip
    per round of concurrent calls, its wall time as waiting."""
    from agentmem.embeddings.bedrock import BedrockEmbedder

    patched = BedrockEmbedder.embed

    def embed(embedder: Any, texts: Any) -> Any:
        waits = _waits.get()
        started = time.perf_counter()
        try:
            return patched(embedder, texts)
        finally:
            if waits is not None:
                waits.seconds += time.perf_counter() - started
                rounds = len(texts) if len(texts) <= 1 else math.ceil(len(texts) / embedder._concurrency)
                waits.calls[("bedrock-runtime", "InvokeModel")] += rounds
                waits.tokens += sum(estimated_tokens(text) for text in texts)

    with mock.patch.object(BedrockEmbedder, "embed", embed):
        yield


# -- the calls -------------------------------------------------------------------------------------


@dataclass
class Bench:
    deployment: Any
    gateway: Any
    key: str
    rng: random.Random = field(default_factory=lambda: random.Random(25))
    words: list[str] = field(default_factory=lambda: vocabulary(3000))
    sessions: int = 0

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        reply = self.gateway.request(method, path, body, api_key=self.key, **kw)
        assert reply.status < 300, (method, path, reply.status, reply.body)
        return reply

    def turn(self) -> dict[str, Any]:
        return {
            "content": {"role": "user", "parts": [{"text": sentence(self.rng, self.words, (10, 28))}]},
            "author": self.rng.choice(["user", "assistant"]),
        }

    def session(self, user: str = USER) -> Any:
        self.sessions += 1
        body = {"entries": [self.turn() for _ in range(10)]}
        return self.request("PUT", f"/v1/apps/{APP}/users/{user}/sessions/s{self.sessions}/memories", body)

    def query(self) -> str:
        return sentence(self.rng, self.words, (4, 9))

    def pump(self) -> None:
        if "indexer" in self.deployment.functions:
            self.deployment.pump_stream()


def measure(bench: Bench, kind: str, call: Callable[[], Any], repeats: int = REPEATS, **extra: float) -> CallUse:
    """Run ``call`` ``repeats`` times (after one unmeasured run that warms the containers) and average."""
    call()
    bench.pump()
    deployment, gateway = bench.deployment, bench.gateway
    before_runs, before_auth = len(deployment.runs), len(gateway.authorizer_calls)
    requests = 0
    sent_out = 0
    original = gateway.send

    def counted_send(*args: Any, **kwargs: Any) -> Any:
        nonlocal requests, sent_out
        requests += 1
        reply = original(*args, **kwargs)
        sent_out += len(reply.raw.encode("utf-8")) + cost_model.RESPONSE_OVERHEAD_BYTES
        return reply

    with mock.patch.object(gateway, "send", counted_send):
        for _ in range(repeats):
            call()
            bench.pump()
    use = CallUse(kind, api_requests=requests / repeats, response_bytes=sent_out / repeats)
    use.authorizer_invocations = (len(gateway.authorizer_calls) - before_auth) / repeats
    for run in deployment.runs[before_runs:]:
        fn = use.function(run.function)
        fn.memory_mb = deployment.memory_of(run.function)
        fn.invocations += 1 / repeats
        fn.billed_ms += _billed_ms(run, fn.memory_mb) / repeats
        use.read_units += run.consumption.read_units / repeats
        use.write_units += run.consumption.write_units / repeats
        use.titan_tokens += run.tokens / repeats
        use.log_bytes += (run.log_bytes + LAMBDA_PLATFORM_LOG_BYTES) / repeats
    use.log_bytes += use.api_requests * ACCESS_LOG_BYTES
    for name, value in extra.items():
        setattr(use, name, value)
    return use


def erase(bench: Bench, user: str) -> float:
    """Erase ``user`` through the API and wait for the workflow; return its state transitions."""
    import boto3

    reply = bench.request("DELETE", f"/v1/apps/{APP}/users/{user}")
    deletion = f"/v1/apps/{APP}/users/{user}/deletions/{reply.body['deletion_id']}"
    deadline = time.monotonic() + 600
    while True:
        time.sleep(0.2)
        status = bench.gateway.request("GET", deletion, api_key=bench.key)
        if status.status == 200 and status.body["status"] != "RUNNING":
            break
        assert time.monotonic() < deadline, "the erasure did not finish"
    assert status.body["status"] == "SUCCEEDED", status.body
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    executions = sfn.list_executions(stateMachineArn=bench.deployment.state_machine_arn)["executions"]
    newest = max(executions, key=lambda e: e["startDate"])
    events = sfn.get_execution_history(executionArn=newest["executionArn"], maxResults=1000)["events"]
    return float(sum(1 for e in events if e["type"].endswith("StateEntered")))


def fill_user(bench: Bench, user: str, memories: int, facts: int) -> None:
    for _ in range(max(1, memories // 10)):
        bench.session(user)
    for n in range(max(1, facts // 5)):
        body = {"entity": f"thing {n}", "entity_type": "thing", "facts": [bench.query() for _ in range(5)]}
        bench.request("POST", f"/v1/apps/{APP}/users/{user}/graph/tools/remember", body)
    bench.pump()


def measure_stack(backend: str, opensearch_url: str | None) -> dict[str, Any]:
    from agentmem.stores.dynamo_table import DynamoTable
    from agentmem.tenancy.keys import TenantService
    from tests.cloud.rehearsal import Gateway

    stack = STACKS[backend]
    with deployment_of(stack, opensearch_url) as deployment, contextlib.ExitStack() as aged:
        if backend == "opensearch":
            from agentmem.vectors.opensearch import OpenSearchVectorIndex

            index = deployment.functions["api"].variables.get("MEMORY_OPENSEARCH_INDEX", "agent-memory-vectors")
            OpenSearchVectorIndex(opensearch_url or "", index=index, engine="lucene").create_index(1024)
        key = TenantService(DynamoTable(deployment.table_name)).create_key(APP).secret
        bench = Bench(deployment, Gateway(deployment), key)
        print(f"[{backend}] filling {USER}: {MEMORIES} memories, {FACTS} facts...", file=sys.stderr, flush=True)
        fill_user(bench, USER, MEMORIES, FACTS)
        held = _bytes_held(deployment.table_name)
        aged.enter_context(_fill_aged())
        uses: list[CallUse] = []

        def search(mode: str) -> Callable[[], Any]:
            return lambda: bench.request(
                "POST", f"{SCOPE}/memories/search", {"query": bench.query(), "mode": mode, "top_k": 10}
            )

        mcp_call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_memory", "arguments": {"query": "what did I say about the weather"}},
        }
        uses.append(measure(bench, "store a 10-turn session", lambda: bench.session("writer")))
        uses.append(
            measure(
                bench,
                "add one entry",
                lambda: bench.request("POST", f"{SCOPE}/memories", {"entry": bench.turn(), "session_id": "live"}),
            )
        )
        history = {"filter": {"session_id": "live"}, "limit": 10}
        uses.append(
            measure(
                bench,
                "session history (last 10 turns)",
                lambda: bench.request("POST", f"{SCOPE}/memories/query", history),
            )
        )
        for mode in ("keyword", "semantic", "hybrid"):
            uses.append(measure(bench, f"search ({mode})", search(mode)))
        remember = {"entity": "Pixel", "entity_type": "dog", "facts": ["likes the beach"]}
        relate = {"source": "alice", "relation": "owns", "target": "Pixel"}
        uses.append(
            measure(
                bench,
                "graph remember",
                lambda: bench.request("POST", f"{SCOPE}/graph/tools/remember", {**remember, "facts": [bench.query()]}),
            )
        )
        uses.append(
            measure(bench, "graph relate", lambda: bench.request("POST", f"{SCOPE}/graph/tools/relate", relate))
        )
        uses.append(
            measure(
                bench,
                "graph search_nodes",
                lambda: bench.request("GET", f"{SCOPE}/graph/search", query={"q": bench.query()}),
            )
        )
        uses.append(
            measure(
                bench, "graph open_nodes", lambda: bench.request("GET", f"{SCOPE}/graph/nodes", query={"name": "Pixel"})
            )
        )
        uses.append(measure(bench, "profile card", lambda: bench.request("GET", f"{SCOPE}/graph/profile-card")))
        put = {"op": "put", "user": "bob", "namespace": ["prefs"], "key": "theme", "value": {"content": "dark theme"}}
        find = {"op": "search", "user": "bob", "namespace_prefix": ["prefs"], "query": "which theme?", "limit": 10}
        uses.append(
            measure(bench, "store put", lambda: bench.request("POST", f"/v1/apps/{APP}/store/batch", {"ops": [put]}))
        )
        uses.append(
            measure(
                bench, "store search", lambda: bench.request("POST", f"/v1/apps/{APP}/store/batch", {"ops": [find]})
            )
        )
        uses.append(
            measure(
                bench,
                "MCP tool call (search_memory)",
                lambda: bench.request("POST", f"{SCOPE}/mcp", mcp_call, headers={"Accept": "application/json"}),
            )
        )

        # The AgentCore Memory data plane (docs/agentcore.md): an actor's event, its session's events, and a
        # retrieval among the actor's records (beside the MEMORIES entries of the fill, in the same partition).
        agentcore = f"/agentcore/memories/{APP}"
        records = [
            {
                "requestIdentifier": f"r{n}",
                "namespaces": [f"/facts/{USER}/"],
                "content": {"text": bench.query()},
                "timestamp": time.time(),
            }
            for n in range(AGENTCORE_RECORDS)
        ]
        bench.request("POST", f"{agentcore}/memoryRecords/batchCreate", {"records": records})

        def create_event() -> Any:
            text = bench.turn()["content"]["parts"][0]["text"]
            said = {"conversational": {"content": {"text": text}, "role": "USER"}}
            event = {"actorId": USER, "sessionId": "agentcore", "eventTimestamp": time.time(), "payload": [said]}
            event["clientToken"] = f"{bench.rng.getrandbits(128):032x}"  # botocore sends one with every call
            return bench.request("POST", f"{agentcore}/events", event)

        uses.append(measure(bench, "AgentCore CreateEvent", create_event))
        uses.append(
            measure(
                bench,
                "AgentCore ListEvents",
                lambda: bench.request("POST", f"{agentcore}/actor/{USER}/sessions/agentcore", {"maxResults": 20}),
            )
        )
        uses.append(
            measure(
                bench,
                "AgentCore RetrieveMemoryRecords",
                lambda: bench.request(
                    "POST",
                    f"{agentcore}/retrieve",
                    {"namespace": f"/facts/{USER}/", "searchCriteria": {"searchQuery": bench.query(), "topK": 10}},
                ),
            )
        )

        def export() -> None:
            reply = bench.request("GET", f"{SCOPE}/export")
            while reply.body.get("next_cursor"):
                reply = bench.request("GET", f"{SCOPE}/export", query={"cursor": reply.body["next_cursor"]})

        uses.append(measure(bench, f"export of {MEMORIES:,} entries", export, repeats=1))

        # The erasure of a user holding MEMORIES entries and FACTS facts: filled anew for each run.
        uses.append(_measure_erasure(bench))
        facts = template_facts(deployment.template)
        facts["custom_metrics"] = len(_emf_metrics)
        ttl = _authorizer_ttl(deployment)
    return {"uses": uses, "held_bytes_per_memory": held, "facts": facts, "authorizer_ttl": ttl}


@contextlib.contextmanager
def _fill_aged() -> Iterator[None]:
    """The fill written more than a refresh interval ago, as a user's memories are: a search on OpenSearch
    Serverless reads from the table only what was written within its refresh (the change log's clock moved
    on by that much; what is written from now on is as recent as it is)."""
    from agentmem.search import changes
    from agentmem.vectors.opensearch import SERVERLESS_REFRESH_SECONDS

    later = types.SimpleNamespace(time=lambda: time.time() + SERVERLESS_REFRESH_SECONDS + 5)
    with mock.patch.object(changes, "time", later):
        yield


def _measure_erasure(bench: Bench) -> CallUse:
    """The erasure's own runs only (the user's filling before it is not its cost)."""
    deployment, gateway = bench.deployment, bench.gateway
    use = CallUse(f"erase a user ({MEMORIES:,} entries, {FACTS} facts)")
    repeats = max(1, REPEATS // 2)
    transitions: list[float] = []
    for _ in range(repeats):
        victim = f"erased-{len(transitions)}"
        fill_user(bench, victim, MEMORIES, FACTS)
        runs_before, auth_before = len(deployment.runs), len(gateway.authorizer_calls)
        transitions.append(erase(bench, victim))
        bench.pump()
        runs = deployment.runs[runs_before:]
        use.authorizer_invocations += (len(gateway.authorizer_calls) - auth_before) / repeats
        for run in runs:
            fn = use.function(run.function)
            fn.memory_mb = deployment.memory_of(run.function)
            fn.invocations += 1 / repeats
            fn.billed_ms += _billed_ms(run, fn.memory_mb) / repeats
            use.read_units += run.consumption.read_units / repeats
            use.write_units += run.consumption.write_units / repeats
            use.log_bytes += (run.log_bytes + LAMBDA_PLATFORM_LOG_BYTES) / repeats
    use.api_requests = 2  # the DELETE and one status read
    use.log_bytes += use.api_requests * ACCESS_LOG_BYTES
    use.transitions = sum(transitions) / len(transitions)
    return use


def _bytes_held(table_name: str) -> float:
    """DynamoDB storage per memory of the filled user: every item of the user (entries, derived rows,
    graph, bookkeeping) with DynamoDB's 100 bytes of per-item overhead, over its memories."""
    import boto3
    from boto3.dynamodb.types import TypeDeserializer

    client = boto3.client("dynamodb", region_name="us-east-1")
    deserialize = TypeDeserializer().deserialize
    total = 0
    for page in client.get_paginator("scan").paginate(TableName=table_name):
        for raw in page["Items"]:
            if f"#{APP}#{USER}" in raw["pk"]["S"]:
                item = {k: deserialize(v) for k, v in raw.items()}
                total += capacity.item_size({k: bytes(v) if hasattr(v, "value") else v for k, v in item.items()})
                total += 100
    return total / MEMORIES


CONTRIBUTOR_INSIGHTS_RULES_PER_TABLE = 4
"""The rules DynamoDB makes for a table with a sort key (most accessed and most throttled, by partition key and by
item), budgeted whole: the throttled-keys mode may keep fewer."""


def template_facts(t: Any) -> dict[str, float]:
    """What a stack costs at rest, read off its template (``of_type(kind)``: its resources of a type)."""
    alarms = 0
    for resource in t.of_type("AWS::CloudWatch::Alarm").values():
        metrics = resource["Properties"].get("Metrics")
        alarms += sum(1 for m in metrics if "MetricStat" in m) if metrics else 1
    methods = len(t.of_type("AWS::ApiGateway::Method"))
    stage = next(iter(t.of_type("AWS::ApiGateway::Stage").values()))["Properties"]
    detailed = any(s.get("MetricsEnabled") for s in stage.get("MethodSettings", []))
    collections = t.of_type("AWS::OpenSearchServerless::Collection")
    ocus = 0.0
    for resource in collections.values():
        ocus = 2.0 if resource["Properties"].get("StandbyReplicas", "ENABLED") == "ENABLED" else 1.0
    acls = t.of_type("AWS::WAFv2::WebACL")
    insights = [
        table
        for table in t.of_type("AWS::DynamoDB::Table").values()
        if table["Properties"].get("ContributorInsightsSpecification", {}).get("Enabled")
    ]
    copies_here = copies_there = 0.0
    for plan in t.of_type("AWS::Backup::BackupPlan").values():
        for rule in plan["Properties"]["BackupPlan"]["BackupPlanRule"]:
            copies_here += rule["Lifecycle"]["DeleteAfterDays"] / cost_model.BACKUP_INTERVAL_DAYS
            for action in rule.get("CopyActions", []):
                copies_there += action["Lifecycle"]["DeleteAfterDays"] / cost_model.BACKUP_INTERVAL_DAYS
    if copies_here and not copies_there:  # the copy to another account is an option of the template (a context)
        from infra.components.backup import KEPT_THERE

        copies_there = KEPT_THERE.to_days() / cost_model.BACKUP_INTERVAL_DAYS
    queues = set(t.of_type("AWS::SQS::Queue"))
    polled = [
        mapping
        for mapping in t.of_type("AWS::Lambda::EventSourceMapping").values()
        if (mapping["Properties"].get("EventSourceArn") or {}).get("Fn::GetAtt", [None])[0] in queues
    ]
    return {
        "backup_copies_here": copies_here,
        "backup_copies_there": copies_there,
        "rotated_keys": float(
            sum(1 for key in t.of_type("AWS::KMS::Key").values() if key["Properties"].get("EnableKeyRotation"))
        ),
        "sqs_event_sources": float(len(polled)),
        "contributor_insights_rules": float(CONTRIBUTOR_INSIGHTS_RULES_PER_TABLE * len(insights)),
        "waf_acls": float(len(acls)),
        "waf_rules": float(sum(len(a["Properties"].get("Rules", [])) for a in acls.values())),
        "keys": float(len(t.of_type("AWS::KMS::Key"))),
        "secrets": float(len(t.of_type("AWS::SecretsManager::Secret"))),
        "alarm_metrics": float(alarms),
        "dashboards": float(len(t.of_type("AWS::CloudWatch::Dashboard"))),
        "detailed_metrics": float(methods * 5 if detailed else 0),
        "ocus": ocus,
    }


def stack_floors(custom_metrics: float) -> dict[str, Any]:
    """Each synthesized stack's fixed monthly floor, idle: prod's two backends and a dev stage (``custom_metrics``:
    the EMF metrics the code emits, measured by the run, the same in every stack)."""
    from tests.cloud.template import Template

    floors = {}
    for name, body in synthesized().templates.items():
        facts = {**template_facts(Template(name, body)), "custom_metrics": custom_metrics}
        floor = cost_model.floor(facts)
        floors[name] = {"usd_month": floor.total, "parts": floor.parts, "facts": facts, "arithmetic": floor.arithmetic}
    return floors


def _authorizer_ttl(deployment: Any) -> float:
    """The REST routes' authorizer result cache TTL (the one keyed by x-api-key)."""
    for resource in deployment.template.of_type("AWS::ApiGateway::Authorizer").values():
        props = resource["Properties"]
        if "x-api-key" in str(props.get("IdentitySource", "")):
            return float(props.get("AuthorizerResultTtlInSeconds", 300))
    return 0.0


# -- a cold search: one user's index loaded by a process that does not hold it (issue 35) -------------

COLD_ENTRIES = tuple(scaled(n, 20) for n in (1_000, 10_000, 100_000))
CATCH_UP_LAGS = (0, 1, 10, 24, 50, 99)
"""Change-log rows written (one turn each) after the snapshot, for the catch-up a cold load reads: a load
asks for a new snapshot at ``SNAPSHOT_LAG`` (25) rows, so a load is 0 to 24 rows behind (50 and 99 for the
what-if lags)."""
DECODES = 5
TITAN_DIMENSION = 1024
DYNAMODB_PAGE_BYTES = 2**20
"""A Query returns at most 1 MB a page (the SQLite table pages by items only): the pages a whole read takes."""


class TitanLikeEmbedder:
    """Unit vectors of 1,024 dense components, as Titan v2 returns them (normalized), one per text and
    the same for the same text; no meaning (the cold load's costs do not depend on it)."""

    dimension = TITAN_DIMENSION
    model_id = "amazon.titan-embed-text-v2:0"

    def embed(self, texts: Any) -> list[list[float]]:
        import numpy as np

        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            vector = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
            out.append((vector / np.linalg.norm(vector)).tolist())
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]


def cold_search(entries: int, folder: Path) -> dict[str, Any]:
    """One user of ``entries`` memories (texts as the bench's turns, Titan-sized vectors) written through the
    memory service on a SQLite table (which charges DynamoDB's read units, agentmem/capacity.py): what a
    process new to the user reads before (the partition whole) and after (the snapshot, one object, and the
    change log's rows since it), and the snapshot's decode time here."""
    import statistics

    from agentmem.keys import Scope
    from agentmem.memory import records as entry_records
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.search.snapshot import decode
    from agentmem.search.snapshots import FileSnapshots
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.stores.table import query_all
    from agentmem.vectors.exact import ExactVectorIndex

    class CountedSnapshots(FileSnapshots):
        reads = 0

        def get(self, partition: str) -> bytes | None:
            self.reads += 1
            return super().get(partition)

    rng, words = random.Random(35), vocabulary(3000)

    def entry() -> MemoryEntry:
        text = sentence(rng, words, (10, 28))
        return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"})

    table = SqliteTable(folder / f"cold-{entries}.db")
    store = CountedSnapshots(folder / f"snapshots-{entries}")
    service = MemoryService(table, embedder=TitanLikeEmbedder(), vector_index=ExactVectorIndex(table, max_entries=None))
    scope = Scope(APP, f"cold-{entries}")
    partition = scope.partition
    started = time.perf_counter()
    for start in range(0, entries, 500):
        service.add_session(scope, f"s{start}", [entry() for _ in range(min(500, entries - start))])
    fill_s = time.perf_counter() - started

    # Before: a process without a snapshot reads every entry (pages of a Query)
    whole = ExactVectorIndex(table, max_entries=None)
    with capacity.measuring() as before:
        started = time.perf_counter()
        whole.held(partition)
        whole_ms = (time.perf_counter() - started) * 1000
    whole_bytes = sum(capacity.item_size(item) for item in query_all(table, partition, entry_records.ENTRY))
    # The snapshot, as the snapshot function writes it (from the index it holds, brought to now)
    started = time.perf_counter()
    data, _, _ = whole.snapshot(partition)
    encode_ms = (time.perf_counter() - started) * 1000
    store.put(partition, data)
    decode_ms = []
    for _ in range(DECODES):
        started = time.perf_counter()
        decoded = decode(data)
        decode_ms.append((time.perf_counter() - started) * 1000)
    held_bytes = decoded.nbytes
    del whole, decoded

    # After: a process new to the user, the snapshot 0..99 turns behind
    by_lag: dict[str, dict[str, Any]] = {}
    written = 0
    for lag in CATCH_UP_LAGS:
        while written < lag:
            service.add_entry(scope, entry())
            written += 1
        fresh = ExactVectorIndex(table, snapshots=store, max_entries=None)
        store.reads = 0
        with capacity.measuring() as after:
            loaded = fresh.held(partition)
        assert len(loaded) == entries + lag, (len(loaded), entries, lag)
        by_lag[str(lag)] = {  # the statistics read, the snapshot's GET, the log's Query and the entries' BatchGet
            "requests": sum(after.calls.values()) + store.reads,
            "read_units": after.read_units,
            "table_calls": dict(after.calls),
            "snapshot_gets": store.reads,
        }
        del fresh, loaded
    at_zero = by_lag["0"]
    return {
        "entries": entries,
        "requests": at_zero["requests"],
        "read_units": at_zero["read_units"],
        "bytes": len(data),
        "decode_ms": statistics.median(decode_ms),
        "encode_ms": encode_ms,
        "held_bytes": held_bytes,
        "catch_up_by_lag": by_lag,
        "before": {
            "requests": before.calls["GetItem"]
            + max(before.calls["Query"], math.ceil(whole_bytes / DYNAMODB_PAGE_BYTES)),
            "read_units": before.read_units,
            "bytes": whole_bytes,
            "load_ms": whole_ms,
        },
        "fill_seconds": fill_s,
    }


def cold_searches() -> dict[str, dict[str, Any]]:
    import tempfile

    from agentmem.search.snapshots import SNAPSHOT_LAG

    assert SNAPSHOT_LAG == cost_model.SNAPSHOT_LAG, "bench/cost_model.py's SNAPSHOT_LAG is the code's"
    out = {}
    (ROOT / ".data").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ROOT / ".data", prefix="bench-cold-") as folder:
        for entries in COLD_ENTRIES:
            print(f"cold search: {entries:,} entries...", file=sys.stderr, flush=True)
            out[str(entries)] = cold_search(entries, Path(folder))
    return out


def cold_load(row: dict[str, Any]) -> cost_model.ColdLoad:
    return cost_model.ColdLoad(
        entries=int(row["entries"]),
        snapshot_bytes=row["bytes"],
        held_bytes=row["held_bytes"],
        decode_ms=row["decode_ms"],
        encode_ms=row["encode_ms"],
        units_by_lag={int(lag): v["read_units"] for lag, v in row["catch_up_by_lag"].items()},
    )


def report_cold(cold: dict[str, dict[str, Any]]) -> None:
    import statistics

    print("\na cold search: a process new to the user loads its index (issue 35, point 1; Titan-sized 1,024-d vectors)")
    print(
        "| entries | before: requests | before: read units | before: bytes | before: load ms here "
        "| after: requests | after: read units | after: snapshot bytes | decode ms here | bytes after/before |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for entries, row in cold.items():
        before = row["before"]
        print(
            f"| {int(entries):,} | {before['requests']:,} | {before['read_units']:,.0f} | {before['bytes']:,} | "
            f"{before['load_ms']:,.0f} | {row['requests']} | {row['read_units']:,.0f} | {row['bytes']:,} | "
            f"{row['decode_ms']:,.1f} | {row['bytes'] / before['bytes']:.2f} |"
        )
    print("(after: the snapshot current; the table's statistics item, read by every search, counted in both)")
    print("catch-up past the snapshot, per cold load (requests / read units), by rows written since it:")
    for entries, row in cold.items():
        print(
            f"  {int(entries):,} entries: "
            + "; ".join(
                f"{lag} rows {v['requests']} / {v['read_units']:,.0f}" for lag, v in row["catch_up_by_lag"].items()
            )
            + f" (over 0..{cost_model.SNAPSHOT_LAG - 1} rows evenly: "
            f"{1 + statistics.mean(map(cold_load(row).catch_up_units, range(cost_model.SNAPSHOT_LAG))):,.1f} read "
            f"units); encode {row['encode_ms']:,.0f} ms; held in process {row['held_bytes'] / 2**20:,.1f} MiB"
        )


# -- the report ------------------------------------------------------------------------------------


SIM_SECONDS = scaled(3600, 60)
SIM_SESSIONS = scaled(20_000, 200)
"""The cache is simulated over at least an hour and this many sessions (after a warm-up of an idle expiry and a
session), at the month's average rate: the month is taken as steady (no daily peak)."""
_simulated: dict[tuple[str, int, int, int], tuple[cost_model.CacheRun, float]] = {}
WHAT_IF_LAGS = (100, 50, 10)
"""Snapshot lags the 1,000,000-user workload is also simulated at (the code asks at SNAPSHOT_LAG = 25 rows)."""


def simulated(
    backend: str,
    measured: dict[str, Any],
    workload: Workload,
    load: cost_model.ColdLoad,
    snapshot_lag: int = cost_model.SNAPSHOT_LAG,
) -> tuple[Any, float]:
    """The API function's containers under ``workload``'s agents (cost_model.simulate_cache), each holding
    what its budget (half the function's memory, agentmem/search/changes.py) allows of users' indexes; with
    the seconds counted. OpenSearch holds no index in the container: its searches are all 'hits'."""
    key = (backend, workload.users, workload.memories, snapshot_lag)
    if key not in _simulated:
        uses = {use.kind: use for use in measured["uses"]}
        api = uses["search (hybrid)"].functions["api"]
        turn_seconds = {
            "history": uses["session history (last 10 turns)"].functions["api"].billed_ms / 1000,
            "search": api.billed_ms / 1000,
            "store": uses["add one entry"].functions["api"].billed_ms / 1000,
        }
        sessions_per_second = workload.users * workload.sessions / cost_model.MONTH_SECONDS
        warm_up = cost_model.CONTAINER_IDLE_SECONDS + cost_model.SESSION_SECONDS
        window = max(SIM_SECONDS, SIM_SESSIONS / sessions_per_second)
        requests = cost_model.agent_requests(workload, warm_up + window, random.Random(35), turn_seconds=turn_seconds)
        lags = random.Random(36)
        table = backend == "table"
        run = cost_model.simulate_cache(
            requests,
            index_bytes=int(load.held_bytes) if table else 0,
            budget_bytes=api.memory_mb * 2**20 // 2,
            load_seconds=load.load_ms(cost_model.SNAPSHOT_LAG // 2, api.memory_mb) / 1000 if table else 0.0,
            snapshot_lag=snapshot_lag,
            initial_lag=lambda _: lags.randrange(snapshot_lag),
            counted_from=warm_up,
        )
        _simulated[key] = (run, window)
    return _simulated[key]


@dataclass
class SearchAllIn:
    """What searching costs once the cache is simulated: the warm search as measured, plus the cold loads it
    causes, the catch-ups of what other containers wrote, and the snapshots those loads ask for."""

    searches: float
    hit_rate: float | None
    warm: float
    cold_loads: float
    warm_catch_up: float
    refreshes: float

    @property
    def per_1k(self) -> float:
        return 1000 * (self.warm + self.cold_loads + self.warm_catch_up + self.refreshes)


def search_all_in(
    backend: str,
    measured: dict[str, Any],
    workload: Workload,
    load: cost_model.ColdLoad,
    warm_each: float,
    snapshot_lag: int = cost_model.SNAPSHOT_LAG,
) -> tuple[SearchAllIn, Any, float]:
    run, window = simulated(backend, measured, workload, load, snapshot_lag)
    searches = max(1, run.searches)
    if backend != "table":
        return SearchAllIn(searches, None, warm_each, 0.0, 0.0, 0.0), run, window
    memory = next(u for u in measured["uses"] if u.kind == "search (hybrid)").functions["api"].memory_mb
    cold = sum(n * load.load_usd(lag, memory) for lag, n in run.lag_at_load.items()) / searches
    caught = sum(n * load.warm_catch_up_usd(rows, memory) for rows, n in run.rows_at_hit.items()) / searches
    refreshes = run.refreshes * load.refresh_usd() / searches
    return SearchAllIn(searches, run.hit_rate, warm_each, cold, caught, refreshes), run, window


def workload_bill(
    backend: str,
    measured: dict[str, Any],
    workload: Workload,
    floor: cost_model.Floor,
    load: cost_model.ColdLoad,
) -> tuple[float, list[str], dict[str, Any]]:
    """One month of ``workload`` on ``backend``: every call priced with the cache, tracing and cold
    starts of its traffic, the held indexes' cache simulated, storage, and the floor; the arithmetic in
    lines, and the figures cost.json keeps."""
    uses = {use.kind: use for use in measured["uses"]}
    rate = workload.requests_per_second()
    traced = cost_model.traced_share(rate)
    auth_share = cost_model.authorizer_share(rate, measured["authorizer_ttl"])
    lines = [f"traffic {rate:.3f} requests/s; X-Ray records {traced:.1%}, the authorizer runs for {auth_share:.1%}"]
    total = 0.0
    warm_search = 0.0
    month: list[tuple[str, CallUse, float]] = []  # each kind of call the workload makes, as measured, and how often
    for kind, calls in workload.calls().items():
        use = next((u for k, u in uses.items() if k.startswith(kind)), None)
        assert use is not None, kind
        month.append((kind, use, calls))
    for kind, use, calls in month:
        each = sum(cost_model.call_cost(use, authorizer_share=auth_share, traced_share=traced).values())
        if kind.startswith("search"):
            warm_search = each
        total += each * calls
        lines.append(f"{kind}: {calls:,.0f} x ${each * 1000:.4f}/1k = ${each * calls:,.2f}")
    memories = workload.users * workload.memories
    gb = memories * measured["held_bytes_per_memory"] / cost_model.GB
    storage = price("dynamodb.storage").of(gb) + price("dynamodb.pitr").of(gb)
    total += storage
    lines.append(
        f"DynamoDB storage {gb:,.2f} GB ({measured['held_bytes_per_memory']:,.0f} B a memory) x "
        f"(${price('dynamodb.storage').usd} + ${price('dynamodb.pitr').usd} PITR) = ${storage:,.2f}"
    )
    facts = measured["facts"]
    backed_up = cost_model.backups(gb, facts.get("backup_copies_here", 0))
    copied = cost_model.backups(gb, facts.get("backup_copies_there", 0)) if backed_up else 0.0
    total += backed_up
    lines.append(
        f"backups: {facts.get('backup_copies_here', 0):.0f} daily full copies of {gb:,.2f} GB x "
        f"${price('dynamodb.backup_storage').usd} = ${backed_up:,.2f}"
        + (
            f"; with the copy to another account ({facts.get('backup_copies_there', 0):.0f} more), ${copied:,.2f} more"
            if copied
            else ""
        )
    )
    requests = sum(use.api_requests * calls for _, use, calls in month)
    saving = cost_model.api_tier_saving(requests)
    waf = price("waf.requests").of(requests) if facts.get("waf_acls") else 0.0
    out_gb = sum(use.response_bytes * calls for _, use, calls in month) / cost_model.GB
    transfer = cost_model.data_transfer_out(out_gb)
    total += waf + transfer - saving
    lines.append(
        f"API Gateway {requests:,.0f} requests: tiers past 333 million save ${saving:,.2f}; WAF inspects them all "
        f"(${price('waf.requests').usd}/M) ${waf:,.2f}; {out_gb:,.1f} GB out (the first "
        f"{cost_model.DATA_TRANSFER_FREE_GB} free) x ${price('data_transfer.out_gb').usd} = ${transfer:,.2f}"
    )
    api = uses["search (hybrid)"].functions.get("api", FunctionUse())
    seconds = api.billed_ms / 1000 or 0.05
    containers = cost_model.concurrency(rate, seconds)
    kms = cost_model.kms_requests(rate, containers)
    total += price("kms.requests").of(kms)
    lines.append(
        f"KMS table-key refreshes {kms:,.0f} x ${price('kms.requests').usd}/10k = ${price('kms.requests').of(kms):,.2f}"
    )
    all_in, run, window = search_all_in(backend, measured, workload, load, warm_search)
    month = workload.users * workload.searches
    figures: dict[str, Any] = {
        "backups_usd_month": backed_up,
        "backups_copy_usd_month": copied,
        "waf_requests_usd_month": waf,
        "api_tier_saving_usd_month": saving,
        "data_transfer_out_usd_month": transfer,
        "cache_hit_rate": all_in.hit_rate,
        "search_all_in_usd_per_1k": all_in.per_1k,
        "search_warm_usd_per_1k": 1000 * warm_search,
        "simulated": {
            "seconds": window,
            "requests": run.requests,
            "searches": run.searches,
            "cold_loads": run.cold_loads,
            "containers_started": run.containers_started,
            "most_containers": run.most_containers,
            "refreshes": run.refreshes,
            "mean_lag_at_load": sum(lag * n for lag, n in run.lag_at_load.items()) / max(1, run.cold_loads),
        },
    }
    lines.append(
        f"cache simulated ({window / 3600:,.1f} h, {run.searches:,} searches, at most {run.most_containers} "
        f"containers): "
        + (f"hit rate {all_in.hit_rate:.1%}" if all_in.hit_rate is not None else "no per-user index in the function")
    )
    if backend == "table":
        cold = month * all_in.cold_loads
        caught = month * all_in.warm_catch_up
        refreshes = month * all_in.refreshes
        snapshots = load.storage_usd_month(workload.users)
        total += cold + caught + refreshes + snapshots
        upkeep = refreshes + snapshots
        figures.update(
            cold_loads_usd_month=cold,
            warm_catch_up_usd_month=caught,
            snapshot_upkeep_usd_month=upkeep,
            snapshot_refreshes_month=month * run.refreshes / max(1, run.searches),
        )
        lines.append(
            f"cold loads: {run.cold_loads / max(1, run.searches):.1%} of searches x "
            f"{figures['simulated']['mean_lag_at_load']:.0f} rows behind on average (S3 GET, catch-up, decode "
            f"{load.decode_ms:.1f} ms here) = ${cold:,.2f}; catch-ups of other containers' writes = ${caught:,.2f}"
        )
        lines.append(
            f"snapshot upkeep: {figures['snapshot_refreshes_month']:,.0f} snapshots written (SQS, the snapshot "
            f"function, S3 GET and PUT) ${refreshes:,.2f}; S3 storage {workload.users:,} x "
            f"{load.snapshot_bytes / 1e6:,.2f} MB = ${snapshots:,.2f}"
        )
    else:
        vectors = memories
        per_vector = 1.1 * (4 * 1024 + 8 * cost_model.HNSW_M) * (2 if floor.parts["opensearch_ocus"] else 1)
        ram_ocus = vectors * per_vector / (cost_model.OCU_RAM_BYTES * cost_model.OCU_RAM_FOR_GRAPHS)
        extra = max(
            0.0, ram_ocus - floor.parts["opensearch_ocus"] / price("aoss.ocu_hour").usd / cost_model.MONTH_HOURS / 2
        )
        ocu_cost = price("aoss.ocu_hour").of(extra * cost_model.MONTH_HOURS)
        aoss_gb = vectors * 6_000 / cost_model.GB
        total += ocu_cost + price("aoss.storage").of(aoss_gb)
        lines.append(
            f"OpenSearch vectors in RAM {vectors:,.0f} x {per_vector:,.0f} B: {ram_ocus:,.1f} search OCUs "
            f"({extra:,.1f} above the floor) = ${ocu_cost:,.2f}; storage {aoss_gb:,.1f} GB = "
            f"${price('aoss.storage').of(aoss_gb):,.2f}"
        )
    cold_starts = run.containers_started / window * cost_model.MONTH_SECONDS
    init = price("lambda.arm64_gb_second").of(cold_starts * measured["init_ms"] / 1000)
    total += init
    lines.append(
        f"cold starts (containers started, simulated) {cold_starts:,.0f} x {measured['init_ms']:.0f} ms INIT at 1 GB"
        f" = ${init:,.2f}"
    )
    total += floor.total
    lines.append(f"fixed floor ${floor.total:,.2f}")
    figures["usd_month"] = total
    figures["usd_month_with_backup_copy"] = total + copied
    return total, lines, figures


def report_extraction(uses: list[cost_model.ExtractionUse]) -> dict[str, Any]:
    """Extraction per 1,000 turns for each way turns arrive: tokens and dollars per strategy and together at each
    model's list price, the target, and the same records at AgentCore's long-term rates."""
    models = cost_model.EXTRACTION_MODELS
    together = cost_model.TOGETHER
    print("\nextraction of long-term memories, per 1,000 turns (issue 34; prices from agentmem/costs/prices.csv):")
    print("| turns arrive | strategy | model calls | input tokens | output tokens | " + " | ".join(models) + " |")
    print("|---|---|---|---|---|" + "---|" * len(models))
    out: dict[str, Any] = {"models": dict(models), "arrivals": {}, "workloads": {}}
    for use in uses:
        figures: dict[str, Any] = {"source": use.source, "strategies": {}}
        for strategy, (tokens_in, tokens_out) in use.tokens.items():
            usd = {name: cost_model.model_cost(model, tokens_in, tokens_out) for name, model in models.items()}
            figures["strategies"][strategy] = {
                "model_calls": use.calls[strategy],
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "usd": usd,
            }
            print(
                f"| {use.arrival} | {strategy} | {use.calls[strategy]:,.0f} | {tokens_in:,.0f} | {tokens_out:,.0f} | "
                + " | ".join(f"${value:.4f}" for value in usd.values())
                + " |"
            )
        figures.update(
            records=use.records,
            dynamodb_read_units=use.read_units,
            dynamodb_write_units=use.write_units,
            titan_tokens=use.titan_tokens,
            metered_tokens={"input": use.metered_tokens[0], "output": use.metered_tokens[1]},
            ours_usd={name: cost_model.extraction_cost(use, model) for name, model in models.items()},
            agentcore_usd={name: cost_model.agentcore_extraction(use, model) for name, model in models.items()},
        )
        out["arrivals"][use.arrival] = figures
    for use in uses:
        print(f"  {use.arrival}: {use.source}")
    target = cost_model.EXTRACTION_TARGET_USD_PER_1K_TURNS
    target_model = models[cost_model.EXTRACTION_TARGET_MODEL]
    at_target = {use.arrival: cost_model.model_cost(target_model, *use.tokens[together]) for use in uses}
    met = all(usd <= target for usd in at_target.values())
    out["target"] = {"usd_per_1k_turns": target, "model": target_model, "usd": at_target, "met": met}
    print(
        f"target: the three strategies at {cost_model.EXTRACTION_TARGET_MODEL} list price at most ${target:.2f} per "
        f"1,000 turns: "
        + "; ".join(f"{arrival} ${usd:.4f}" for arrival, usd in at_target.items())
        + (" (met)" if met else " (NOT met)")
    )
    print("\nthe same long-term records, held a month, per 1,000 turns: our service beside AgentCore Memory")
    print(
        "| turns arrive | records | ours: DynamoDB RRU / WRU, Titan tokens | model | ours (model + DynamoDB + Titan) "
        "| AgentCore built-in (model included) | AgentCore self-managed (records + the model's tokens) |"
    )
    print("|---|---|---|---|---|---|---|")
    for use in uses:
        ours_units = f"{use.read_units:,.0f} / {use.write_units:,.0f}, {use.titan_tokens:,.0f}"
        for name, model in models.items():
            ours = sum(cost_model.extraction_cost(use, model).values())
            theirs = cost_model.agentcore_extraction(use, model)
            print(
                f"| {use.arrival} | {use.records:,.0f} | {ours_units} | {name} | ${ours:.4f} | "
                f"${theirs['built_in']:.4f} | ${theirs['self_managed']:.4f} |"
            )
    print(
        f"(AgentCore: ${price('agentcore.memory_records_month').usd} per 1,000 records a month with built-in "
        f"strategies, ${price('agentcore.memory_records_month_self_managed').usd} with override or self-managed ones, "
        "whose model Bedrock bills apart; records are billed every month they are held, ours are DynamoDB items. Not "
        "in ours: the extraction function's duration, mostly its wait on the model (Bedrock's latency, not measured "
        f"here): ${price('lambda.arm64_gb_second').usd:.10f} per GB-second, over "
        + ", ".join(f"{use.calls[together]:,.0f} model calls ({use.arrival})" for use in uses)
        + " per 1,000 turns)"
    )
    return out


EXTRACTION_FUNCTION_MB = 1024
"""The extraction function's memory (infra/components/extraction.py)."""


def extraction_month(workload: Workload, use: cost_model.ExtractionUse) -> dict[str, Any]:
    """A month of ``workload``'s turns extracted (as ``use`` measured: turn by turn, as the workload writes), the
    extraction function's time included, and its records held that month."""
    turns = workload.users * workload.sessions * workload.turns
    scale = turns / 1000
    models = cost_model.EXTRACTION_MODELS
    compute = scale * cost_model.extraction_compute(use, EXTRACTION_FUNCTION_MB)
    ours = {
        name: scale * sum(cost_model.extraction_cost(use, model).values()) + compute for name, model in models.items()
    }
    agentcore = {
        name: {part: scale * usd for part, usd in cost_model.agentcore_extraction(use, model).items()}
        for name, model in models.items()
    }
    micro = cost_model.EXTRACTION_TARGET_MODEL
    print(
        f"  extraction, three strategies ({turns:,} turns, {use.arrival}; {scale * use.records:,.0f} records held "
        f"that month): ours at {micro} ${ours[micro]:,.2f} (its function's time ${compute:,.2f}); AgentCore built-in "
        f"${agentcore[micro]['built_in']:,.2f}, self-managed with {micro} ${agentcore[micro]['self_managed']:,.2f}"
    )
    tokens_in, tokens_out = use.tokens[cost_model.TOGETHER]
    return {
        "turns": turns,
        "records": scale * use.records,
        "ours_usd": ours,
        "model_usd": {name: scale * cost_model.model_cost(m, tokens_in, tokens_out) for name, m in models.items()},
        "compute_usd": compute,
        "agentcore_usd": agentcore,
    }


TABLE_MAX_ENTRIES = 20_000
"""The table backend's entries a user by default (agentmem/vectors/exact.py MAX_ENTRIES; MEMORY_MAX_ENTRIES)."""
LAMBDA_MEMORY_STEP_MB = 64


def table_needs(measured: dict[str, Any], workload: Workload, index_bytes: float, api_mb: int) -> dict[str, Any]:
    """What the table backend needs to serve ``workload``'s users: an API function whose half holds one user's index
    (``index_bytes``) and an entry limit of the memories a user holds; and what that memory costs more a month (the
    API function's time at the larger memory)."""
    memory_mb = max(api_mb, math.ceil(2 * index_bytes / 2**20 / LAMBDA_MEMORY_STEP_MB) * LAMBDA_MEMORY_STEP_MB)
    api_gb_seconds = 0.0
    for kind, calls in workload.calls().items():
        use = next(u for u in measured["uses"] if u.kind.startswith(kind))
        api_gb_seconds += use.functions.get("api", FunctionUse()).gb_seconds() * calls
    more = price("lambda.arm64_gb_second").of(api_gb_seconds * (memory_mb / api_mb - 1))
    return {
        "memory_mb": memory_mb,
        "max_entries": max(TABLE_MAX_ENTRIES, workload.memories),
        "index_mb_a_user": index_bytes / 2**20,
        "more_usd_month": more,
    }


def init_ms() -> float:
    """A cold start's INIT: importing the API function's handler in a fresh interpreter (scaled to the
    API's CPU share), median of three."""
    import subprocess

    code = "import time; t = time.perf_counter(); import functions.api.handler; print(time.perf_counter() - t)"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'layers/core/python'}"}
    samples = sorted(
        float(
            subprocess.run(
                [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(3)
    )
    return samples[1] * 1000 * LAMBDA_FULL_CPU_MB / 1024


def main() -> None:
    import extraction_use

    from tests import opensearch_node

    cold = cold_searches()
    runs = extraction_use.measure_all(lambda line: print(line, file=sys.stderr, flush=True))
    results: dict[str, Any] = {}
    node = opensearch_node.start()
    try:
        for backend in STACKS:
            results[backend] = measure_stack(backend, node.url if backend == "opensearch" else None)
    finally:
        node.stop()
    start = init_ms()
    for measured in results.values():
        measured["init_ms"] = start
    uses = [extraction_use.per_thousand_turns(run) for run in runs]
    report(results, uses, cold)


def records_per_session(use: cost_model.ExtractionUse | None) -> tuple[float, str]:
    """Long-term records a session, as the pipeline measured here kept them (``use``: the scripted model of a
    model's answer lengths, bench/extraction_use.py), else the stated assumption. A real model's run of ``make bench
    ONLY=extraction`` (bench/out/extraction.json) is shown beside it, never priced in its place: the last one, a
    135M model, learns almost nothing."""
    if use is not None and use.records:
        turns_a_session = Workload(1).turns
        return use.records * turns_a_session / 1000, f"measured: the pipeline here, {use.arrival}, scripted answers"
    return cost_model.AGENTCORE_RECORDS_PER_SESSION, "assumed (no extraction run)"


def real_model_run() -> str | None:
    """What a real model's ``make bench ONLY=extraction`` measured, to print beside the priced figures."""
    if not EXTRACTION_OUT.is_file():
        return None
    pipeline = json.loads(EXTRACTION_OUT.read_text(encoding="utf-8")).get("pipeline") or {}
    model = str(pipeline.get("model") or "")
    if not model or model.startswith("scripted") or not pipeline.get("turns"):
        return None
    return (
        f"{model}: {float(pipeline['input_tokens_per_turn']):,.0f} tokens in and "
        f"{float(pipeline['output_tokens_per_turn']):,.0f} out a turn, {pipeline.get('records_per_session', 0):.2f} "
        "records a session (bench/out/extraction.json; shown, not priced)"
    )


def report(
    results: dict[str, Any],
    extraction: list[cost_model.ExtractionUse] | None,
    cold: dict[str, dict[str, Any]],
) -> None:
    print(f"prices: agentmem/costs/prices.csv ({len(prices())} lines): {costs.basis()}")
    print(f"memories per user: {MEMORIES:,}; facts: {FACTS}; each call measured {REPEATS} times after a warm-up")
    print("\n$ per 1,000 calls (warm; authorizer uncached; X-Ray at 5%):")
    kinds = [use.kind for use in results["table"]["uses"]]
    print("| call | table | opensearch | table: DynamoDB RRU / WRU per call | table: Lambda ms |")
    print("|---|---|---|---|---|")
    out: dict[str, Any] = {"calls": {}, "workloads": {}, "floors": {}}
    for kind in kinds:
        table = next(u for u in results["table"]["uses"] if u.kind == kind)
        search = next(u for u in results["opensearch"]["uses"] if u.kind == kind)
        lambda_ms = sum(f.billed_ms for n, f in table.functions.items() if n != "authorizer")
        print(
            f"| {kind} | ${cost_model.per_thousand(table):.4f} | ${cost_model.per_thousand(search):.4f} | "
            f"{table.read_units:.1f} / {table.write_units:.1f} | {lambda_ms:.0f} |"
        )
        out["calls"][kind] = {
            backend: {
                "usd_per_1k": cost_model.per_thousand(use),
                "parts_per_1k": {k: 1000 * v for k, v in cost_model.call_cost(use).items()},
                "use": asdict(use),
            }
            for backend, use in (("table", table), ("opensearch", search))
        }
    print("\nAgentCore Memory's own list prices for these calls (agentmem/costs/prices.csv):")
    print("| call | AgentCore Memory | table | opensearch |")
    print("|---|---|---|---|")
    listed = {
        "AgentCore CreateEvent": price("agentcore.memory_events").of(1000),
        "AgentCore ListEvents": 0.0,
        "AgentCore RetrieveMemoryRecords": price("agentcore.memory_retrievals").of(1000),
    }
    for kind, usd in listed.items():
        ours = [cost_model.per_thousand(next(u for u in results[b]["uses"] if u.kind == kind)) for b in results]
        theirs = f"${usd:.2f}" if usd else "not priced"
        print(f"| {kind} | {theirs} | ${ours[0]:.4f} | ${ours[1]:.4f} |")
    print("(no per-session write throttle below DynamoDB's own; AgentCore allows one CreateEvent every 4 s a session)")
    floors = stack_floors(results["table"]["facts"]["custom_metrics"])
    for name, floor in floors.items():
        out["floors"][name] = {key: floor[key] for key in ("usd_month", "parts", "facts")}
        print(f"\n{name}: fixed monthly floor ${floor['usd_month']:,.2f}: " + "; ".join(floor["arithmetic"]))
    if extraction:
        out["extraction"] = report_extraction(extraction)
    report_cold(cold)
    out["cold_search"] = {"table": cold}
    load = cold_load(cold[min(cold, key=lambda entries: abs(int(entries) - 1000))]).for_entries(1000)
    turn_by_turn = next((use for use in extraction or [] if use.arrival == "turn by turn"), None)
    per_session, per_session_source = records_per_session(turn_by_turn)
    real = real_model_run()
    if real:
        print(f"a real model's extraction run: {real}")
        out["real_model_extraction"] = real
    retrieval_per_1k = price("agentcore.memory_retrievals").of(1000)
    for users in (100, 10_000, 1_000_000):
        workload = Workload(users)
        agentcore, _ = cost_model.agentcore_bill(workload)
        agentcore_now = cost_model.agentcore_bills(workload, per_session)
        out["workloads"][str(users)] = {
            "agentcore_usd_month": agentcore,
            "agentcore_short_term_usd_month": agentcore_now.short_term,
            "agentcore_with_long_term_usd_month": agentcore_now.long_term_built_in,
            "agentcore_with_long_term_self_managed_usd_month": agentcore_now.long_term_self_managed,
            "agentcore_records_per_session": per_session,
        }
        print(
            f"\nworkload: {users:,} users a month (each: 30 sessions of 10 turns, a turn = the session's history "
            "read, a search, the turn stored; 20 graph writes, 1,000 memories held; an erasure per 1,000 users)"
        )
        for backend, measured in results.items():
            bill, lines, figures = workload_bill(
                backend, measured, workload, cost_model.floor(measured["facts"]), load.for_entries(workload.memories)
            )
            figures["agentcore_usd_month"] = agentcore
            figures["search_vs_agentcore_retrieval"] = retrieval_per_1k / figures["search_all_in_usd_per_1k"]
            if backend == "table":
                cold_part = figures["cold_loads_usd_month"] + figures["warm_catch_up_usd_month"]
                figures["cold_loads_share_of_bill"] = cold_part / bill
                figures["cold_loads_and_upkeep_share_of_bill"] = (
                    cold_part + figures["snapshot_upkeep_usd_month"]
                ) / bill
            out["workloads"][str(users)][backend] = figures
            hit = figures["cache_hit_rate"]
            print(
                f"  {backend}: ${bill:,.2f} a month (${bill / users:.4f} a user); a search all-in "
                f"${figures['search_all_in_usd_per_1k']:.4f}/1k (warm ${figures['search_warm_usd_per_1k']:.4f}/1k"
                + (f", cache hit rate {hit:.1%}" if hit is not None else "")
                + f"): 1/{figures['search_vs_agentcore_retrieval']:,.0f} of AgentCore's retrieval"
            )
            for line in lines:
                print(f"    {line}")
            if backend == "table":
                print(
                    f"    cold loads and catch-ups {figures['cold_loads_share_of_bill']:.1%} of the bill; with the "
                    f"snapshots' upkeep {figures['cold_loads_and_upkeep_share_of_bill']:.1%}"
                )
        print(
            f"  AgentCore Memory, short-term only: ${agentcore_now.short_term:,.2f} a month; with long-term memory: "
            f"${agentcore_now.long_term_built_in:,.2f} (built-in strategies), "
            f"${agentcore_now.long_term_self_managed:,.2f} (self-managed; the model's tokens apart); "
            f"{per_session:.2f} records a session ({per_session_source})"
        )
        for line in agentcore_now.arithmetic:
            print(f"    {line}")
        print(f"  (before issue 35 the comparison priced every memory held as a record: ${agentcore:,.2f})")
        if extraction and turn_by_turn is not None:
            month = extraction_month(workload, turn_by_turn)
            out["extraction"]["workloads"][str(users)] = month
            micro = cost_model.EXTRACTION_TARGET_MODEL
            table = out["workloads"][str(users)]["table"]
            learning = month["ours_usd"][micro]
            table["table_with_extraction_usd_month"] = table["usd_month"] + learning
            # AgentCore's self-managed strategies: its records at the lower rate, the model's tokens and the compute
            # that runs them billed apart (priced as ours: the same tokens, the same function time)
            out["workloads"][str(users)]["agentcore_self_managed_with_model_usd_month"] = (
                agentcore_now.long_term_self_managed + month["model_usd"][micro] + month["compute_usd"]
            )
            print(
                f"  like for like (extraction on, turn by turn, {micro}): ours "
                f"${table['table_with_extraction_usd_month']:,.2f} beside AgentCore with built-in strategies "
                f"${agentcore_now.long_term_built_in:,.2f}; without "
                f"extraction ours ${table['usd_month']:,.2f} beside AgentCore short-term only "
                f"${agentcore_now.short_term:,.2f}"
            )
    workload = Workload(1_000_000)
    warm = out["workloads"]["1000000"]["table"]["search_warm_usd_per_1k"] / 1000
    print(
        "\nwhat if a cold load asked for a new snapshot sooner (the code asks at "
        f"{cost_model.SNAPSHOT_LAG} rows behind): the 1,000,000-user workload, table backend"
    )
    print("| snapshot asked at rows behind | mean rows caught up a cold load | search all-in $/1k | of which upkeep |")
    print("|---|---|---|---|")
    out["snapshot_lag_what_if"] = {}
    for lag in (cost_model.SNAPSHOT_LAG, *WHAT_IF_LAGS):
        all_in, run, _ = search_all_in("table", results["table"], workload, load, warm, snapshot_lag=lag)
        mean = sum(rows * n for rows, n in run.lag_at_load.items()) / max(1, run.cold_loads)
        out["snapshot_lag_what_if"][str(lag)] = {"search_all_in_usd_per_1k": all_in.per_1k, "mean_lag_at_load": mean}
        print(f"| {lag} | {mean:.1f} | ${all_in.per_1k:.4f} | ${1000 * all_in.refreshes:.4f} |")
    print("\nwhen OpenSearch pays off: the 10,000-user workload with more memories held per user (a month)")
    print(
        "| memories a user | table: needs | table | table: cache hit rate | table: search all-in $/1k | opensearch "
        "| cheaper |"
    )
    print("|---|---|---|---|---|---|---|")
    out["memories_per_user"] = {}
    api_mb = next(u for u in results["table"]["uses"] if u.kind == "search (hybrid)").functions["api"].memory_mb
    for memories in (1_000, 10_000, 30_000, 100_000):
        workload = Workload(10_000, memories=memories)
        nearest = cold_load(cold[min(cold, key=lambda entries: abs(int(entries) - memories))])
        figures = {
            backend: workload_bill(
                backend, measured, workload, cost_model.floor(measured["facts"]), nearest.for_entries(memories)
            )[2]
            for backend, measured in results.items()
        }
        bills = {backend: f["usd_month"] for backend, f in figures.items()}
        needs = table_needs(results["table"], workload, nearest.for_entries(memories).held_bytes, api_mb)
        bills["table"] += needs["more_usd_month"]
        out["memories_per_user"][str(memories)] = {
            **bills,
            "table_needs": needs,
            "table_cache_hit_rate": figures["table"]["cache_hit_rate"],
            "table_search_all_in_usd_per_1k": figures["table"]["search_all_in_usd_per_1k"],
        }
        cheaper = min(bills, key=lambda backend: bills[backend])
        print(
            f"| {memories:,} | {needs['memory_mb']:,} MB, MEMORY_MAX_ENTRIES {needs['max_entries']:,} | "
            f"${bills['table']:,.0f} | {figures['table']['cache_hit_rate']:.1%} | "
            f"${figures['table']['search_all_in_usd_per_1k']:.4f} | ${bills['opensearch']:,.0f} | {cheaper} |"
        )
    print(
        f"(the table backend holds a user's index in the API function's memory, half of it for indexes: at "
        f"{api_mb:,} MB as deployed, {api_mb * 2**20 // 2 / max(1.0, nearest.for_entries(1000).held_bytes):,.0f} "
        f"users of 1,000 memories a container; a row whose user's index does not fit is priced at the memory it "
        f"needs (the API function's time at that memory: an upper bound, its CPU-bound part would shrink), and past "
        f"{TABLE_MAX_ENTRIES:,} entries a user it needs MEMORY_MAX_ENTRIES raised)"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2, default=str))
    print(f"\nwritten: {OUT.relative_to(ROOT)}")
    if SCALE == 1:  # a full run is the docs' figures (a run at a hundredth is not)
        import cost_figures

        changed = cost_figures.write(json.loads(OUT.read_text()), floors)
        print(f"written: {cost_figures.FIGURES.relative_to(ROOT)}; docs rewritten: {', '.join(changed) or 'none'}")


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    main()
