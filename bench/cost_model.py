"""The cost model's arithmetic: what the bench measured of each call (bench_cost.py) priced from the one
file of list prices (agentmem/costs/prices.csv), per 1,000 calls, per month at rest, and for three
workloads beside Bedrock AgentCore Memory's bill for the same work. Nothing here is measured; every
assumption that is not a price is a named constant with its reason."""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from agentmem.costs import chat_model_prices, price

MONTH_HOURS = 730
MONTH_SECONDS = MONTH_HOURS * 3600
GB = 1e9

XRAY_RESERVOIR_PER_SECOND = 1
XRAY_RATE = 0.05
"""Lambda's fixed sampling: the first request each second and 5% of the rest (AWS X-Ray guide)."""
LAMBDA_PLATFORM_LOG_BYTES = 270
"""START, END and REPORT: the three lines Lambda writes per invocation (AWS Lambda operator guide)."""
KMS_KEY_REFRESH_SECONDS = 300
"""DynamoDB refreshes the table key from KMS once every 5 minutes per connection with traffic."""
CONTAINER_IDLE_SECONDS = 600
"""A Lambda container is assumed gone after 10 idle minutes (AWS publishes no figure): a call that
finds none warm starts one (cold start), and a process cache (the table backend's vectors) starts empty."""
CONTAINER_LIFETIME_HOURS = 2
"""Lambda recycles even busy containers "every few hours": each busy container is replaced this often."""
SESSION_SECONDS = 600
"""An agent's session (its turns and searches) is assumed to last 10 minutes."""
LOG_MONTHS_KEPT = 1
"""Log storage priced for one month per GB ingested (logs compress; retention is the stack's)."""
RESPONSE_OVERHEAD_BYTES = 400
"""What a response carries out besides its body: the status line and API Gateway's headers, TLS framing."""
DATA_TRANSFER_FREE_GB = 100
"""Data out to the internet an account gets free each month (all its services together): the bills give it whole
to this stack, the most it can save."""
API_TIERS = (
    (333e6, "apigateway.rest_requests"),
    (667e6, "apigateway.rest_requests_next_667m"),
    (19e9, "apigateway.rest_requests_next_19b"),
)
"""REST API requests a month priced at each tier's price, in order (the first 333 million, the next 667 million,
the next 19 billion)."""
KMS_ROTATIONS_PRICED = 2
"""A key with automatic rotation costs $1 more a month for each of its first two rotations (later ones add
nothing): priced at that, what a yearly-rotated key costs from its third year ($3 a month)."""
SQS_IDLE_POLLERS = 5
SQS_LONG_POLL_SECONDS = 20
"""Lambda polls an SQS event source with about five long-polling connections while the queue is idle, each a
ReceiveMessage of at most 20 s: about 657,000 requests a month a queue, whether or not a message comes (Lambda
developer guide, "Using Lambda with Amazon SQS"; the number of pollers is AWS's, assumed)."""
BACKUP_INTERVAL_DAYS = 1
"""The backup plan's rule runs every day (infra/components/backup.py: cron at 03:00): it keeps a full copy of the
table for each day of its retention."""
HNSW_M = 16
OCU_RAM_BYTES = 6 * 2**30
OCU_RAM_FOR_GRAPHS = 0.5
"""OpenSearch's k-NN circuit breaker lets graphs use half of the memory by default (OpenSearch docs)."""


@dataclass
class FunctionUse:
    invocations: float = 0.0
    billed_ms: float = 0.0
    memory_mb: int = 1024

    def gb_seconds(self) -> float:
        return self.billed_ms / 1000 * self.memory_mb / 1024


@dataclass
class CallUse:
    """What one call of a kind used, as the bench measured it."""

    kind: str
    api_requests: float = 1.0
    authorizer_invocations: float = 0.0
    """Uncached: every request that reached the authorizer function (workloads apply its cache)."""
    functions: dict[str, FunctionUse] = field(default_factory=dict)
    read_units: float = 0.0
    write_units: float = 0.0
    titan_tokens: float = 0.0
    transitions: float = 0.0
    log_bytes: float = 0.0
    stream_records: float = 0.0
    response_bytes: float = 0.0
    """What the call sends out to the client (its bodies and :data:`RESPONSE_OVERHEAD_BYTES` a request)."""
    note: str = ""

    def function(self, name: str) -> FunctionUse:
        return self.functions.setdefault(name, FunctionUse())


def call_cost(use: CallUse, *, authorizer_share: float = 1.0, traced_share: float = XRAY_RATE) -> dict[str, float]:
    """US dollars of one call, per part. ``authorizer_share``: the share of its authorizer invocations the
    cache does not answer; ``traced_share``: the share of its requests X-Ray records."""
    lambda_requests = price("lambda.requests")
    gb_second = price("lambda.arm64_gb_second")
    parts = {
        "api_gateway": price("apigateway.rest_requests").of(use.api_requests),
        "lambda": sum(
            lambda_requests.of(fn.invocations * (authorizer_share if name == "authorizer" else 1.0))
            + gb_second.of(fn.gb_seconds() * (authorizer_share if name == "authorizer" else 1.0))
            for name, fn in use.functions.items()
        ),
        "dynamodb_reads": price("dynamodb.read_request_units").of(use.read_units),
        "dynamodb_writes": price("dynamodb.write_request_units").of(use.write_units),
        "bedrock": price("bedrock.titan_embed_v2_tokens").of(use.titan_tokens),
        "step_functions": price("stepfunctions.standard_transitions").of(use.transitions),
        "logs": price("logs.ingestion").of(use.log_bytes / GB)
        + price("logs.storage").of(use.log_bytes / GB * LOG_MONTHS_KEPT),
        "xray": price("xray.traces_recorded").of(use.api_requests * traced_share),
    }
    return parts


def per_thousand(use: CallUse) -> float:
    return 1000 * sum(call_cost(use).values())


@dataclass
class Floor:
    """What a deployment costs a month before its first call."""

    parts: dict[str, float]
    arithmetic: list[str]

    @property
    def total(self) -> float:
        return sum(self.parts.values())


def floor(template_facts: Mapping[str, float]) -> Floor:
    """The fixed monthly costs of a stack, from the facts the bench read off its template: ``ocus`` (the
    OpenSearch Serverless minimum, 0 without), ``alarm_metrics``, ``dashboards``, ``detailed_metrics``
    (API Gateway's per-method metrics), ``custom_metrics`` (EMF), ``secrets``, ``keys``, ``waf_acls`` and
    ``waf_rules`` (a web ACL and its rules, prod), and ``contributor_insights_rules`` (the table's, prod)."""
    facts = dict(template_facts)
    parts = {
        "kms_key": price("kms.key_month").of(facts["keys"]),
        "secret": price("secretsmanager.secret_month").of(facts["secrets"]),
        "alarms": price("cloudwatch.alarm_metric_month").of(facts["alarm_metrics"]),
        "dashboard": price("cloudwatch.dashboard_month").of(facts["dashboards"]),
        "api_detailed_metrics": price("cloudwatch.custom_metric_month").of(facts["detailed_metrics"]),
        "custom_metrics": price("cloudwatch.custom_metric_month").of(facts["custom_metrics"]),
        "opensearch_ocus": price("aoss.ocu_hour").of(facts["ocus"] * MONTH_HOURS),
        "waf": price("waf.web_acl_month").of(facts.get("waf_acls", 0))
        + price("waf.rule_month").of(facts.get("waf_rules", 0)),
        "contributor_insights": price("cloudwatch.contributor_insights_rule_month").of(
            facts.get("contributor_insights_rules", 0)
        ),
        "kms_rotation": price("kms.rotated_key_month").of(facts.get("rotated_keys", 0) * KMS_ROTATIONS_PRICED),
        "sqs_idle_polling": price("sqs.requests").of(facts.get("sqs_event_sources", 0) * sqs_idle_requests()),
    }
    arithmetic = [
        f"KMS key {facts['keys']:.0f} x ${price('kms.key_month').usd}",
        f"secret {facts['secrets']:.0f} x ${price('secretsmanager.secret_month').usd}",
        f"alarm metrics {facts['alarm_metrics']:.0f} x ${price('cloudwatch.alarm_metric_month').usd}",
        f"dashboards {facts['dashboards']:.0f} x ${price('cloudwatch.dashboard_month').usd} (beyond 3 free)",
        f"API Gateway detailed metrics {facts['detailed_metrics']:.0f} x "
        f"${price('cloudwatch.custom_metric_month').usd}",
        f"EMF custom metrics {facts['custom_metrics']:.0f} x ${price('cloudwatch.custom_metric_month').usd}",
        f"OpenSearch Serverless {facts['ocus']:.1f} OCU x {MONTH_HOURS} h x ${price('aoss.ocu_hour').usd}",
        f"WAF {facts.get('waf_acls', 0):.0f} web ACL x ${price('waf.web_acl_month').usd} + "
        f"{facts.get('waf_rules', 0):.0f} rules x ${price('waf.rule_month').usd} (its requests: "
        f"${price('waf.requests').usd} per million, not in the floor)",
        f"Contributor Insights {facts.get('contributor_insights_rules', 0):.0f} rules x "
        f"${price('cloudwatch.contributor_insights_rule_month').usd} (its events: "
        f"${price('cloudwatch.contributor_insights_dynamodb_events').usd} per million, throttled requests only)",
        f"KMS rotation {facts.get('rotated_keys', 0):.0f} rotated keys x {KMS_ROTATIONS_PRICED} rotations x "
        f"${price('kms.rotated_key_month').usd} (from a key's third year)",
        f"SQS idle polling {facts.get('sqs_event_sources', 0):.0f} queues Lambda polls x {sqs_idle_requests():,.0f} "
        f"requests x ${price('sqs.requests').usd}/M",
    ]
    return Floor(parts, arithmetic)


def sqs_idle_requests() -> float:
    """ReceiveMessage requests a month Lambda's pollers make on one idle queue."""
    return SQS_IDLE_POLLERS * MONTH_SECONDS / SQS_LONG_POLL_SECONDS


def api_tier_saving(requests: float) -> float:
    """What ``requests`` REST API requests a month cost less than at the first tier's price (every call is priced
    at the first tier's by :func:`call_cost`)."""
    first = price(API_TIERS[0][1])
    tiered, left = 0.0, requests
    for size, key in API_TIERS:
        taken = min(left, size)
        tiered += price(key).of(taken)
        left -= taken
    tiered += price(API_TIERS[-1][1]).of(left)  # past 20 billion: priced at the last tier's (it is lower still)
    return first.of(requests) - tiered


def data_transfer_out(gb: float) -> float:
    """US dollars of ``gb`` out to the internet a month, past the account's free 100 GB."""
    return price("data_transfer.out_gb").of(max(0.0, gb - DATA_TRANSFER_FREE_GB))


def backups(gb: float, copies: float) -> float:
    """A month of ``copies`` full backups of a table of ``gb`` (each DynamoDB backup is a full copy)."""
    return price("dynamodb.backup_storage").of(gb * copies)


@dataclass(frozen=True)
class Workload:
    """A month of an app's users: ``users`` each with ``sessions`` sessions of ``turns`` turns, ``searches``
    searches, ``graph_writes`` graph writes and ``memories`` memories held; one erasure per
    ``erasure_per_users`` users. An agent's turn reads the session's history, then stores the turn (one
    entry, as an agent's loop stores it: not a session of ten at the end)."""

    users: int
    sessions: int = 30
    turns: int = 10
    searches: int = 300
    graph_writes: int = 20
    memories: int = 1000
    erasure_per_users: int = 1000

    def calls(self) -> dict[str, float]:
        """Calls of each kind a month, named as the bench measured them."""
        turns = self.users * self.sessions * self.turns
        return {
            "add one entry": turns,
            "session history (last 10 turns)": turns,
            "search (hybrid)": self.users * self.searches,
            "graph remember": self.users * self.graph_writes,
            "erase a user": self.users / self.erasure_per_users,
        }

    def requests_per_second(self) -> float:
        return sum(calls for kind, calls in self.calls().items()) / MONTH_SECONDS


AGENTCORE_RECORDS_PER_SESSION = 1.5
"""Long-term records AgentCore's strategies keep per session when bench/out/extraction.json holds no real
model's run: the last real run measured 1.5 (SmolLM2-135M-Instruct on LoCoMo's first dev conversation,
docs/extraction.md). A larger model may keep more."""


@dataclass(frozen=True)
class AgentCoreBill:
    """Bedrock AgentCore Memory's list price for a workload, a month."""

    short_term: float
    """Every turn stored an event; the history read (ListEvents) is not priced."""
    long_term_built_in: float
    """Short-term, plus each search a retrieval and the records held at the built-in strategies' rate."""
    long_term_self_managed: float
    """The same at the self-managed rate (the extraction model's tokens, billed apart, not included)."""
    records_held: float
    arithmetic: list[str]


def agentcore_bills(workload: Workload, records_per_session: float) -> AgentCoreBill:
    """AgentCore Memory on the same work: each turn an event; long-term records only what extraction keeps
    (``records_per_session``), held for the sessions the user's memories came from (``memories / turns``
    sessions), each search a retrieval."""
    events = workload.users * workload.sessions * workload.turns
    retrievals = workload.users * workload.searches
    records = workload.users * workload.memories / workload.turns * records_per_session
    event_usd = price("agentcore.memory_events").of(events)
    retrieval_usd = price("agentcore.memory_retrievals").of(retrievals)
    built_in = price("agentcore.memory_records_month").of(records)
    self_managed = price("agentcore.memory_records_month_self_managed").of(records)
    arithmetic = [
        f"{events:,.0f} events x ${price('agentcore.memory_events').usd}/1k = ${event_usd:,.2f} (short-term only)",
        f"{retrievals:,.0f} retrievals x ${price('agentcore.memory_retrievals').usd}/1k = ${retrieval_usd:,.2f}",
        f"{records:,.0f} records held ({workload.memories // workload.turns} sessions x {records_per_session:.2f}"
        f" a user) x ${price('agentcore.memory_records_month').usd}/1k built-in = ${built_in:,.2f}, x "
        f"${price('agentcore.memory_records_month_self_managed').usd}/1k self-managed = ${self_managed:,.2f}",
    ]
    return AgentCoreBill(
        short_term=event_usd,
        long_term_built_in=event_usd + retrieval_usd + built_in,
        long_term_self_managed=event_usd + retrieval_usd + self_managed,
        records_held=records,
        arithmetic=arithmetic,
    )


def agentcore_bill(workload: Workload) -> tuple[float, list[str]]:
    """The comparison as it was priced before issue 35 (kept beside the new rows): each turn an event, each
    search a retrieval, each memory held a long-term record (graph facts among them)."""
    events = workload.users * workload.sessions * workload.turns
    retrievals = workload.users * workload.searches
    records = workload.users * workload.memories
    parts = [
        price("agentcore.memory_events").of(events),
        price("agentcore.memory_retrievals").of(retrievals),
        price("agentcore.memory_records_month").of(records),
    ]
    arithmetic = [
        f"{events:,.0f} events x ${price('agentcore.memory_events').usd}/1k = ${parts[0]:,.2f}",
        f"{retrievals:,.0f} retrievals x ${price('agentcore.memory_retrievals').usd}/1k = ${parts[1]:,.2f}",
        f"{records:,.0f} records held x ${price('agentcore.memory_records_month').usd}/1k = ${parts[2]:,.2f}",
    ]
    return sum(parts), arithmetic


# -- extraction (issue 34: what it costs) -------------------------------------------------------------

EXTRACTION_MODELS = {
    "Nova Micro": "amazon.nova-micro-v1:0",
    "Nova Lite": "amazon.nova-lite-v1:0",
    "Claude 3 Haiku": "anthropic.claude-3-haiku-20240307-v1:0",
    "Claude Haiku 4.5": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
}
"""The Bedrock models extraction is priced at, on demand (prices.csv: ``bedrock.chat.<id>.input_tokens`` and
``.output_tokens``; Claude Haiku 4.5 through the US inference profile, as the stack allows: it refuses the global
one, which would be 10% cheaper)."""
EXTRACTION_CALL_SECONDS = 2.0
"""The extraction function's time a model call, mostly its wait on Bedrock: assumed (a call of a few thousand
tokens in and a few hundred out; Bedrock's latency is not measured here). Priced at the function's memory."""
EXTRACTION_TARGET_MODEL = "Nova Micro"
EXTRACTION_TARGET_USD_PER_1K_TURNS = 0.05
"""Issue 34's target: the three strategies together, at Nova Micro's list price, per 1,000 turns."""
TOGETHER = "together"


@dataclass
class ExtractionUse:
    """What extraction used per 1,000 turns, as the bench counted it (bench/extraction_use.py)."""

    arrival: str
    tokens: dict[str, tuple[float, float]]
    """Model input and output tokens per 1,000 turns, by strategy and :data:`TOGETHER`."""
    calls: dict[str, float]
    """Model calls per 1,000 turns, by strategy and :data:`TOGETHER`."""
    records: float
    """Long-term records held per 1,000 turns."""
    read_units: float = 0.0
    """DynamoDB request units and Titan tokens extraction's steps metered, per 1,000 turns."""
    write_units: float = 0.0
    titan_tokens: float = 0.0
    metered_tokens: tuple[float, float] = (0.0, 0.0)
    """Input and output tokens per 1,000 turns as the app's usage meter has them (as the endpoint reported them)."""
    source: str = ""


def model_cost(model_id: str, input_tokens: float, output_tokens: float) -> float:
    """US dollars of a Bedrock model's tokens at its on-demand list price."""
    prices = chat_model_prices("bedrock", model_id)
    assert prices is not None, f"prices.csv has no price for Bedrock model {model_id}"
    return prices.of(input_tokens, output_tokens)


def extraction_cost(use: ExtractionUse, model_id: str) -> dict[str, float]:
    """US dollars of 1,000 turns' extraction (the three strategies together) with our service, per part: the
    model's tokens at ``model_id``, and the DynamoDB request units and Titan tokens extraction's steps metered.
    Not in it: the extraction function's duration (mostly its wait on the model: Bedrock's latency, which is not
    measured here; each second at 1 GB costs ``lambda.arm64_gb_second``) and its invocations (one a step)."""
    input_tokens, output_tokens = use.tokens[TOGETHER]
    return {
        "model": model_cost(model_id, input_tokens, output_tokens),
        "dynamodb_reads": price("dynamodb.read_request_units").of(use.read_units),
        "dynamodb_writes": price("dynamodb.write_request_units").of(use.write_units),
        "embeddings": price("bedrock.titan_embed_v2_tokens").of(use.titan_tokens),
    }


def extraction_compute(use: ExtractionUse, memory_mb: int) -> float:
    """US dollars of the extraction function's Lambda time and invocations for 1,000 turns: a step a model call,
    each :data:`EXTRACTION_CALL_SECONDS` at ``memory_mb``."""
    calls = use.calls[TOGETHER]
    return price("lambda.requests").of(calls) + price("lambda.arm64_gb_second").of(
        calls * EXTRACTION_CALL_SECONDS * memory_mb / 1024
    )


def agentcore_extraction(use: ExtractionUse, model_id: str) -> dict[str, float]:
    """The same long-term records (those of 1,000 turns, held a month) at AgentCore Memory's rates: with its
    built-in strategies, whose record price includes the model; with override or self-managed strategies, records
    at the lower rate and the model's tokens billed by Bedrock apart (here the tokens counted for our service, at
    ``model_id``)."""
    input_tokens, output_tokens = use.tokens[TOGETHER]
    return {
        "built_in": price("agentcore.memory_records_month").of(use.records),
        "self_managed": price("agentcore.memory_records_month_self_managed").of(use.records)
        + model_cost(model_id, input_tokens, output_tokens),
    }


def concurrency(rate: float, seconds_per_call: float) -> float:
    """Containers busy on average (Little's law)."""
    return rate * seconds_per_call


def cold_share(rate: float) -> float:
    """The share of calls that find no warm container: a Poisson stream leaves a single container idle
    longer than :data:`CONTAINER_IDLE_SECONDS` between two calls with this probability; busier streams keep
    containers warm, and those are replaced every :data:`CONTAINER_LIFETIME_HOURS`."""
    idle = math.exp(-rate * CONTAINER_IDLE_SECONDS)
    recycled = 1 / max(1.0, rate * CONTAINER_LIFETIME_HOURS * 3600)
    return min(1.0, idle + recycled)


def containers_per_session(rate: float, seconds_per_call: float, calls_per_session: float) -> float:
    """How many containers one user's session of searches lands on (each call goes to any warm container
    of the function): with ``c`` containers busy, ``c * (1 - (1 - 1/c) ** n)`` distinct ones over ``n``
    calls. Each loads the user's vectors once (the table backend's cold reads)."""
    c = max(1.0, concurrency(rate, seconds_per_call))
    return c * (1 - (1 - 1 / c) ** calls_per_session)


def traced_share(rate: float) -> float:
    """The share of requests X-Ray records at ``rate`` requests a second."""
    if rate <= XRAY_RESERVOIR_PER_SECOND:
        return 1.0
    return (XRAY_RESERVOIR_PER_SECOND + XRAY_RATE * (rate - XRAY_RESERVOIR_PER_SECOND)) / rate


def authorizer_share(requests_per_second_per_key: float, ttl_seconds: float) -> float:
    """The share of requests the authorizer's result cache (one entry per key, ``ttl_seconds``) does not
    answer: at most one invocation per key per TTL."""
    if ttl_seconds <= 0 or requests_per_second_per_key <= 0:
        return 1.0
    return min(1.0, 1 / (requests_per_second_per_key * ttl_seconds))


def kms_requests(rate: float, containers: float) -> float:
    """Table-key refreshes a month: one per connection per 5 minutes of traffic, and one per call that
    comes after 5 idle minutes."""
    idle_calls = rate * MONTH_SECONDS * math.exp(-rate * KMS_KEY_REFRESH_SECONDS)
    busy = (
        max(1.0, containers) * MONTH_SECONDS / KMS_KEY_REFRESH_SECONDS * (1 - math.exp(-rate * KMS_KEY_REFRESH_SECONDS))
    )
    return idle_calls + busy


# -- the held indexes' cache (issue 35): simulated, not assumed ------------------------------------------

SNAPSHOT_LAG = 25
"""Writes a cold load may catch up past a user's snapshot before it asks for a newer one (the code's
``agentmem.search.snapshots.SNAPSHOT_LAG``; the bench checks they agree)."""


@dataclass(frozen=True, slots=True)
class Request:
    """One request to the API function: at ``at`` seconds, for ``user``, holding its container ``seconds``;
    ``search``: it needs the user's index; ``writes``: change-log rows it adds to the user's partition."""

    at: float
    user: int
    seconds: float
    search: bool = False
    writes: int = 0


@dataclass
class CacheRun:
    """What a stream of requests did to the containers and their held indexes."""

    requests: int = 0
    searches: int = 0
    hits: int = 0
    cold_loads: int = 0
    containers_started: int = 0
    most_containers: int = 0
    lag_at_load: Counter[int] = field(default_factory=Counter)
    """Change-log rows each cold load caught up past the snapshot, counted by rows."""
    rows_at_hit: Counter[int] = field(default_factory=Counter)
    """Change-log rows each search that found the index held caught up (what other containers wrote)."""
    refreshes: int = 0
    """Snapshots asked for: cold loads that found theirs :data:`SNAPSHOT_LAG` rows or more behind."""

    @property
    def hit_rate(self) -> float:
        return self.hits / self.searches if self.searches else 0.0


@dataclass
class _Container:
    born: float
    free_at: float = 0.0
    held: OrderedDict[int, int] = field(default_factory=OrderedDict)
    """user -> the log version held, least recently used first."""


def simulate_cache(
    requests: Iterable[Request],
    *,
    index_bytes: int,
    budget_bytes: int,
    idle_seconds: float = CONTAINER_IDLE_SECONDS,
    lifetime_seconds: float = CONTAINER_LIFETIME_HOURS * 3600,
    load_seconds: float = 0.0,
    snapshot_lag: int = SNAPSHOT_LAG,
    initial_lag: Callable[[int], int] = lambda user: 0,
    counted_from: float = 0.0,
) -> CacheRun:
    """Lambda's containers of one function serving ``requests`` (in time order), each container holding the
    indexes of the users it searched for, least recently used forgotten past ``budget_bytes`` (each user's
    index ``index_bytes``; the one just loaded is kept whatever its size).

    Assumptions (AWS publishes none of them): a request goes to a warm idle container, the one that went idle
    last (Lambda keeps the fewest containers warm that way), else a new container starts; a container idle
    ``idle_seconds`` is gone, and one older than ``lifetime_seconds`` is replaced when it is next idle. A
    search whose user its container does not hold is a cold load: it holds the container ``load_seconds``
    longer, catches up the rows written since the user's snapshot, and asks for a new snapshot when they are
    ``snapshot_lag`` or more (taken as written at once). ``initial_lag(user)``: the rows the user's snapshot
    is behind when the user first appears (a steady month: snapshots exist). Only requests from
    ``counted_from`` seconds on are counted (the containers start empty before)."""
    run = CacheRun()
    idle: deque[_Container] = deque()  # oldest idle first
    busy: list[tuple[float, int, _Container]] = []
    version: dict[int, int] = {}
    snapshot: dict[int, int] = {}
    for started, request in enumerate(requests):
        counted = request.at >= counted_from
        while busy and busy[0][0] <= request.at:
            _, _, freed = heapq.heappop(busy)
            idle.append(freed)
        while idle and request.at - idle[0].free_at > idle_seconds:
            idle.popleft()
        while idle and request.at - idle[-1].born > lifetime_seconds:
            idle.pop()
        if idle:
            container = idle.pop()
        else:
            container = _Container(born=request.at)
            run.containers_started += counted
        run.most_containers = max(run.most_containers, len(idle) + len(busy) + 1)
        user = request.user
        if user not in version:
            version[user] = initial_lag(user)
            snapshot[user] = 0
        seconds = request.seconds
        if request.search:
            run.searches += counted
            held = container.held.get(user)
            if held is not None:
                run.hits += counted
                if counted:
                    run.rows_at_hit[version[user] - held] += 1
                container.held.move_to_end(user)
            else:
                lag = version[user] - snapshot[user]
                if counted:
                    run.cold_loads += 1
                    run.lag_at_load[lag] += 1
                if lag >= snapshot_lag:
                    snapshot[user] = version[user]
                    run.refreshes += counted
                seconds += load_seconds
                while container.held and (len(container.held) + 1) * index_bytes > budget_bytes:
                    container.held.popitem(last=False)
            container.held[user] = version[user]
        version[user] += request.writes
        container.free_at = request.at + seconds
        heapq.heappush(busy, (container.free_at, started, container))
        run.requests += counted
    return run


def agent_requests(
    workload: Workload,
    seconds: float,
    rng: random.Random,
    *,
    turn_seconds: Mapping[str, float],
    users: int | None = None,
) -> list[Request]:
    """``seconds`` of ``workload``'s agents, in time order: sessions start as a Poisson stream at the month's
    average rate (no daily peak), each of a user drawn at random among ``users`` (the workload's by default),
    its ``turns`` turns spaced evenly over :data:`SESSION_SECONDS`; a turn reads the session's history, searches
    (the workload's searches per turn, at random when not whole) and stores the turn (one change-log row).
    ``turn_seconds``: each call's time in its container, by kind (``history``, ``search``, ``store``)."""
    population = workload.users if users is None else users
    rate = workload.users * workload.sessions / MONTH_SECONDS
    searches_per_turn = workload.searches / (workload.sessions * workload.turns)
    gap = SESSION_SECONDS / workload.turns
    out: list[Request] = []
    at = rng.expovariate(rate)
    while at < seconds:
        user = rng.randrange(population)
        for turn in range(workload.turns):
            when = at + turn * gap
            out.append(Request(when, user, turn_seconds["history"]))
            searches = int(searches_per_turn) + (rng.random() < searches_per_turn % 1)
            for n in range(searches):
                out.append(Request(when + 0.1 * (n + 1), user, turn_seconds["search"], search=True))
            out.append(Request(when + 0.1 * (searches + 1), user, turn_seconds["store"], writes=1))
        at += rng.expovariate(rate)
    out.sort(key=lambda r: r.at)
    return out


# -- what a cold load costs, from what the bench measured of one --------------------------------------

LAMBDA_FULL_CPU_MB = 1769
"""Lambda gives a function one vCPU at 1,769 MB and a proportional share below (AWS Lambda guide)."""
S3_FIRST_BYTE_MS = 30
S3_STREAM_BYTES_PER_MS = 80_000
"""Assumed, not published by AWS: an S3 GET's first byte after some tens of milliseconds in the Region, then
about 80 MB/s on one connection (AWS's S3 performance guide gives aggregate figures, not one stream's)."""
CATCH_UP_ROUND_TRIPS_MS = 5 + 6
"""A catch-up's change-log Query and its BatchGetItem of the entries the rows name (bench_cost's round trips)."""
S3_PUT_MS = 60
SNAPSHOT_FUNCTION_MB = 1024
"""The snapshot function's memory (priced at the API's: the template of this run does not hold it yet)."""
SQS_REQUESTS_PER_REFRESH = 3
"""SendMessage, the mapping's ReceiveMessage and DeleteMessage: an upper bound (receives and deletes batch)."""


@dataclass(frozen=True)
class ColdLoad:
    """One cold load of a user's index of ``entries`` memories, as the bench measured it: the snapshot's
    bytes, the index's bytes held in process, the decode and encode times here, and the read units and
    requests of the load (the statistics read every search makes, the snapshot, the catch-up) by how many
    change-log rows the snapshot was behind."""

    entries: int
    snapshot_bytes: float
    held_bytes: float
    decode_ms: float
    encode_ms: float
    units_by_lag: Mapping[int, float]

    def for_entries(self, entries: int) -> ColdLoad:
        """The same user with ``entries`` memories: bytes and times per entry as measured; the catch-up as is
        (it reads what changed, not the partition)."""
        ratio = entries / self.entries
        return ColdLoad(
            entries,
            self.snapshot_bytes * ratio,
            self.held_bytes * ratio,
            self.decode_ms * ratio,
            self.encode_ms * ratio,
            self.units_by_lag,
        )

    def catch_up_units(self, lag: int) -> float:
        """Read units of catching up ``lag`` rows, beyond the statistics read a warm search makes too: linear
        between the lags measured (and past the last, on the last segment's slope)."""
        points = sorted(self.units_by_lag.items())
        segment = points[-2:]
        for low, high in itertools.pairwise(points):
            if lag <= high[0]:
                segment = [low, high]
                break
        (low_lag, low_units), (high_lag, high_units) = segment
        units = low_units + (high_units - low_units) * (lag - low_lag) / (high_lag - low_lag)
        return max(0.0, units - points[0][1])

    def load_ms(self, lag: int, memory_mb: int) -> float:
        """Billed milliseconds a cold load adds to its search: the snapshot's GET, its decode at the
        function's CPU share, the catch-up's round trips when behind."""
        cpu = self.decode_ms * LAMBDA_FULL_CPU_MB / memory_mb
        return (
            S3_FIRST_BYTE_MS
            + self.snapshot_bytes / S3_STREAM_BYTES_PER_MS
            + cpu
            + (CATCH_UP_ROUND_TRIPS_MS if lag else 0)
        )

    def load_usd(self, lag: int, memory_mb: int) -> float:
        return (
            price("s3.get_requests").of(1)
            + price("dynamodb.read_request_units").of(self.catch_up_units(lag))
            + price("lambda.arm64_gb_second").of(self.load_ms(lag, memory_mb) / 1000 * memory_mb / 1024)
        )

    def warm_catch_up_usd(self, rows: int, memory_mb: int) -> float:
        """A search whose container holds the user, ``rows`` rows behind (what other containers wrote)."""
        if rows <= 0:
            return 0.0
        return price("dynamodb.read_request_units").of(self.catch_up_units(rows)) + price("lambda.arm64_gb_second").of(
            CATCH_UP_ROUND_TRIPS_MS / 1000 * memory_mb / 1024
        )

    def refresh_usd(self) -> float:
        """One snapshot written: the queue's messages, the function's invocation (the last snapshot's GET and
        decode, :data:`SNAPSHOT_LAG` rows caught up, the encode, the PUT) and the S3 requests."""
        ms = (
            self.load_ms(SNAPSHOT_LAG, SNAPSHOT_FUNCTION_MB)
            + self.encode_ms * LAMBDA_FULL_CPU_MB / SNAPSHOT_FUNCTION_MB
        )
        ms += S3_PUT_MS
        return (
            price("sqs.requests").of(SQS_REQUESTS_PER_REFRESH)
            + price("lambda.requests").of(1)
            + price("lambda.arm64_gb_second").of(ms / 1000 * SNAPSHOT_FUNCTION_MB / 1024)
            + price("s3.get_requests").of(1)
            + price("s3.put_requests").of(1)
            + price("dynamodb.read_request_units").of(self.catch_up_units(SNAPSHOT_LAG) + 2)
        )

    def storage_usd_month(self, users: float) -> float:
        return price("s3.storage").of(users * self.snapshot_bytes / GB)
