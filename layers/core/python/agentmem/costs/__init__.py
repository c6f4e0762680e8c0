"""List prices, one file (``prices.csv``: one price a line, with its region, date and source), and what a
quantity of each costs. The usage route prices each app's day from it, and ``make bench ONLY=cost`` prices
every call kind and three workloads from it (bench/bench_cost.py).

Bedrock chat models are priced by model id (or inference profile id) as ``bedrock.chat.<id>.input_tokens`` and
``bedrock.chat.<id>.output_tokens`` (:func:`chat_model_prices`): the extraction model's tokens are priced when
the file has the configured model, and not otherwise."""

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
class TokenPrices:
    """A chat model's list prices per input and output token."""

    model_id: str
    input: Price
    output: Price

    def of(self, input_tokens: float, output_tokens: float) -> float:
        return self.input.of(input_tokens) + self.output.of(output_tokens)


def chat_model_prices(model: str, model_id: str) -> TokenPrices | None:
    """The list prices of the tokens of the extraction model configured (``MEMORY_MODEL`` and
    ``MEMORY_MODEL_ID``): a Bedrock model whose id (or inference profile id) the file prices; None for any other
    (an OpenAI-compatible endpoint, a local model costing nothing per token, a Bedrock model the file lacks)."""
    if model != "bedrock":
        return None
    found = prices()
    key = f"bedrock.chat.{model_id}"
    input_price, output_price = found.get(f"{key}.input_tokens"), found.get(f"{key}.output_tokens")
    if input_price is None or output_price is None:
        return None
    return TokenPrices(model_id, input_price, output_price)


@dataclass(frozen=True, slots=True)
class Metered:
    """What the usage meter counts of an app's day, in the units AWS bills."""

    requests: int = 0
    read_units: int = 0
    write_units: int = 0
    compute_gb_ms: int = 0
    """Lambda duration of the requests' work times the function's memory (GB-milliseconds)."""
    embedding_tokens: int = 0
    model_input_tokens: int = 0
    """Tokens the extraction model read and wrote (as the model reported them)."""
    model_output_tokens: int = 0


def estimate(metered: Metered, model: TokenPrices | None = None) -> dict[str, float]:
    """The estimated cost of ``metered`` at list prices, per part and in total (US dollars, rounded to a
    millionth): API Gateway and Lambda requests, Lambda duration, DynamoDB reads and writes, Titan v2
    tokens, and the extraction model's tokens at ``model``'s prices (0 when it is not priced: see
    :func:`chat_model_prices`). Not in it: the authorizer's invocations (cached per key), logs, traces,
    storage and the stack's fixed monthly costs (bench/bench_cost.py prices those)."""
    parts = {
        "api_gateway": price("apigateway.rest_requests").of(metered.requests),
        "lambda_requests": price("lambda.requests").of(metered.requests),
        "lambda_compute": price("lambda.arm64_gb_second").of(metered.compute_gb_ms / 1000),
        "dynamodb_reads": price("dynamodb.read_request_units").of(metered.read_units),
        "dynamodb_writes": price("dynamodb.write_request_units").of(metered.write_units),
        "embeddings": price("bedrock.titan_embed_v2_tokens").of(metered.embedding_tokens),
        "extraction_model": model.of(metered.model_input_tokens, metered.model_output_tokens) if model else 0.0,
    }
    rounded = {name: round(value, 6) for name, value in parts.items()}
    rounded["total"] = round(sum(parts.values()), 6)
    return rounded


def basis(model: str = "none", model_id: str = "") -> str:
    """How the estimate is made, for whoever reads it: with ``model`` and ``model_id`` (the extraction model
    configured), whether its tokens are priced."""
    dates = sorted({p.date for p in prices().values() if p.date[:1].isdigit()})
    return (
        f"an estimate from AWS list prices ({prices()['apigateway.rest_requests'].region}, sources dated "
        f"{dates[0]} to {dates[-1]}; agentmem/costs/prices.csv), not a bill; {_model_basis(model, model_id)}"
    )


def _model_basis(model: str, model_id: str) -> str:
    if chat_model_prices(model, model_id) is not None:
        return f"extraction model tokens at the list price of Bedrock model {model_id} (on-demand)"
    if model == "bedrock":
        return f"extraction model tokens unpriced (0): Bedrock model {model_id} has no price in prices.csv"
    if model == "none":
        return "no extraction model is configured (its tokens, if any, are unpriced: 0)"
    return (
        f"extraction model tokens unpriced (0): MEMORY_MODEL={model} is not Bedrock "
        "(a local model costs nothing per token)"
    )
