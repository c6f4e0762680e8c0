"""List prices, one file (``prices.csv``: one price a line, with its region, date and source), and what a
quantity of each costs. The usage route prices each app's day from it, and ``make bench ONLY=cost`` prices
every call kind and three workloads from it (bench/bench_cost.py)."""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True, slots=True)
class Price:
    key: str
    usd: float
    per: float
    """The quantity ``usd`` buys (1,000,000 request units, 1 GB-month...)."""
    unit: str
    region: str
    date: str
    source: str

    def of(self, quantity: float) -> float:
        """What ``quantity`` units cost, in US dollars."""
        return quantity * self.usd / self.per


@functools.cache
def prices() -> dict[str, Price]:
    """Every list price, by key (read once per process from the package's ``prices.csv``)."""
    text = resources.files(__package__).joinpath("prices.csv").read_text(encoding="utf-8")
    return {
        row["key"]: Price(
            row["key"], float(row["usd"]), float(row["per"]), row["unit"], row["region"], row["date"], row["source"]
        )
        for row in csv.DictReader(io.StringIO(text))
    }


def price(key: str) -> Price:
    return prices()[key]


@dataclass(frozen=True, slots=True)
class Metered:
    """What the usage meter counts of an app's day, in the units AWS bills."""

    requests: int = 0
    read_units: int = 0
    write_units: int = 0
    compute_gb_ms: int = 0
    """Lambda duration of the requests' work times the function's memory (GB-milliseconds)."""
    embedding_tokens: int = 0


def estimate(metered: Metered) -> dict[str, float]:
    """The estimated cost of ``metered`` at list prices, per part and in total (US dollars, rounded to a
    millionth): API Gateway and Lambda requests, Lambda duration, DynamoDB reads and writes, Titan v2
    tokens. Not in it: the authorizer's invocations (cached per key), logs, traces, storage and the
    stack's fixed monthly costs (bench/bench_cost.py prices those)."""
    parts = {
        "api_gateway": price("apigateway.rest_requests").of(metered.requests),
        "lambda_requests": price("lambda.requests").of(metered.requests),
        "lambda_compute": price("lambda.arm64_gb_second").of(metered.compute_gb_ms / 1000),
        "dynamodb_reads": price("dynamodb.read_request_units").of(metered.read_units),
        "dynamodb_writes": price("dynamodb.write_request_units").of(metered.write_units),
        "embeddings": price("bedrock.titan_embed_v2_tokens").of(metered.embedding_tokens),
    }
    rounded = {name: round(value, 6) for name, value in parts.items()}
    rounded["total"] = round(sum(parts.values()), 6)
    return rounded


def basis() -> str:
    """How the estimate is made, for whoever reads it."""
    dates = sorted({p.date for p in prices().values() if p.date[:1].isdigit()})
    return (
        f"an estimate from AWS list prices ({prices()['apigateway.rest_requests'].region}, sources dated "
        f"{dates[0]} to {dates[-1]}; agentmem/costs/prices.csv), not a bill"
    )
