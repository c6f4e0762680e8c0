"""The cost model's arithmetic: what the bench measured of each call (bench_cost.py) priced from the one
file of list prices (agentmem/costs/prices.csv), per 1,000 calls, per month at rest, and for three
workloads beside Bedrock AgentCore Memory's bill for the same work. Nothing here is measured; every
assumption that is not a price is a named constant with its reason."""

from __future__ import annotations

import math
from collections.abc import Mapping
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
    (API Gateway's per-method metrics), ``custom_metrics`` (EMF), ``secrets``, ``keys``, and ``waf_acls`` and
    ``waf_rules`` (a web ACL and its rules, prod)."""
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
    ]
    return Floor(parts, arithmetic)


@dataclass(frozen=True)
class Workload:
    """A month of an app's users: ``users`` each with ``sessions`` sessions of ``turns`` turns, ``searches``
    searches, ``graph_writes`` graph writes and ``memories`` memories held; one erasure per
    ``erasure_per_users`` users."""

    users: int
    sessions: int = 30
    turns: int = 10
    searches: int = 300
    graph_writes: int = 20
    memories: int = 1000
    erasure_per_users: int = 1000

    def calls(self) -> dict[str, float]:
        """Calls of each kind a month (the turns stored a session at a time)."""
        return {
            "store a 10-turn session": self.users * self.sessions * self.turns / 10,
            "search (hybrid)": self.users * self.searches,
            "graph remember": self.users * self.graph_writes,
            "erase a user (1,000 entries, 100 facts)": self.users / self.erasure_per_users,
        }

    def requests_per_second(self) -> float:
        return sum(calls for kind, calls in self.calls().items()) / MONTH_SECONDS


def agentcore_bill(workload: Workload) -> tuple[float, list[str]]:
    """Bedrock AgentCore Memory's list price for the same work: each turn an event, each search a
    retrieval, each memory held a long-term record (graph facts among them); erasure is not priced."""
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
    "Claude Haiku 4.5": "global.anthropic.claude-haiku-4-5-20251001-v1:0",
}
"""The Bedrock models extraction is priced at, on demand (prices.csv: ``bedrock.chat.<id>.input_tokens`` and
``.output_tokens``; Claude Haiku 4.5 through its global inference profile, the cheaper of its two)."""
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
