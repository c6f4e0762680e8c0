"""Metering: work counted where it is done, which paths belong to an app, daily counters."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

import pytest

from agentmem import costs
from agentmem.api.tenancy import app_of_path
from agentmem.settings import API_MEMORY_MB
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.tenancy.metering import (
    METER_WRITES,
    USAGE_SHARDS,
    Meter,
    count,
    count_embedded,
    counting,
    read_usage,
    record_meter,
    record_usage,
)


def test_work_is_counted_inside_counting_only() -> None:
    count(items_stored=5, embeddings=5)  # outside a request: counted nowhere
    with counting() as meter:
        count(items_stored=2)
        count(embeddings=3)
        with counting() as inner:  # a nested count is its own
            count(items_stored=1)
    assert (meter.items_stored, meter.embeddings) == (2, 3)
    assert (inner.items_stored, inner.embeddings) == (1, 0)


def test_a_meter_is_added_to_the_apps_day(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "meter.db")
    with counting() as meter:
        count(items_stored=2, embeddings=7)
        table.put({"pk": "p", "sk": "s", "blob": b"x" * 3000})  # 3 write units
        table.get("p", "s")  # 1 read unit
    record_meter(table, "A", meter)
    record_meter(table, "A", Meter())  # nothing counted but the meter's own writes
    [today] = read_usage(table, "A")
    assert (today.requests, today.items_stored, today.embeddings) == (0, 2, 7)
    assert (today.read_units, today.write_units) == (1, 3 + 2 * METER_WRITES)
    assert today.compute_gb_ms == meter.compute_gb_ms  # the time counting() measured, at the API's memory


def test_counting_times_the_work_at_the_functions_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
    with counting() as meter:
        time.sleep(0.05)
    assert meter.compute_gb_ms >= 50 * 2  # at least 50 ms at 2 GB
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
    with counting() as local:
        time.sleep(0.05)
    assert 50 * API_MEMORY_MB // 1024 <= local.compute_gb_ms < meter.compute_gb_ms


def test_embedding_is_counted_with_its_titan_tokens() -> None:
    with counting() as meter:
        count_embedded(["a" * 30, "天气很好"])
    assert (meter.embeddings, meter.embedding_tokens) == (2, 10 + 4)  # three characters a token; CJK one each


def test_app_of_path_decodes_the_segment_and_ignores_other_paths() -> None:
    assert app_of_path("/v1/apps/a%2Fb/users/u/memories") == "a/b"
    assert app_of_path("/v1/apps/acme/usage") == "acme"
    assert app_of_path("/v1/apps/acme") == "acme"
    assert app_of_path("/v1/health") is None
    assert app_of_path("/v1/applications/x") is None
    assert app_of_path("/v1/apps/%FF/usage") is None  # invalid UTF-8: the route answers 400


def test_daily_counters_add_up_per_app_and_day(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "m.db")
    try:
        # Given usage on two days for A and one for B
        record_usage(table, "A", requests=2, items_stored=5, day=date(2026, 6, 1))
        record_usage(table, "A", requests=1, embeddings=7, day=date(2026, 6, 1))
        record_usage(table, "A", requests=4, day=date(2026, 6, 3))
        record_usage(table, "B", requests=9, day=date(2026, 6, 3))
        # When A's usage is read on June 3rd / Then newest first, each day's totals, nothing of B
        days = read_usage(table, "A", today=date(2026, 6, 3))
        counted = [{k: d.to_json()[k] for k in ("date", "requests", "items_stored", "embeddings")} for d in days]
        assert counted == [
            {"date": "2026-06-03", "requests": 4, "items_stored": 0, "embeddings": 0},
            {"date": "2026-06-01", "requests": 3, "items_stored": 5, "embeddings": 7},
        ]
        # And a window of 2 days leaves June 1st out
        assert [d.date for d in read_usage(table, "A", days=2, today=date(2026, 6, 3))] == ["2026-06-03"]
    finally:
        table.close()


def test_what_requests_consumed_is_spread_over_the_days_shards_and_read_back_whole(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "shards.db")
    try:
        # Given a busy day of one app: 200 requests, each counted as it begins and metered as it ends
        for _ in range(200):
            assert record_usage(table, "busy", requests=1).requests >= 1
            with counting() as meter:
                count(items_stored=1, embeddings=2)
            record_meter(table, "busy", meter)
        # Then the consumption went to the day's shards, never to the day's own item (one item a write: at most
        # a quarter of the writes each, not every one), and the requests to the day's own item, which the quota reads
        items = table.query("T#busy", "USAGE#").items
        own = [i for i in items if i["sk"].count("#") == 1]
        shards = [i for i in items if i["sk"].count("#") == 2]
        assert len(own) == 1
        assert own[0]["requests"] == 200
        assert "items_stored" not in own[0]
        assert 2 <= len(shards) <= USAGE_SHARDS
        assert sum(i["items_stored"] for i in shards) == 200
        # And the usage read adds them up: one day, every count
        (day,) = read_usage(table, "busy")
        assert (day.requests, day.items_stored, day.embeddings) == (200, 200, 400)
        assert day.write_units >= 200 * METER_WRITES
    finally:
        table.close()


def test_a_days_cost_is_its_counts_at_list_prices(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "cost.db")
    try:
        record_usage(
            table, "A", requests=1000, read_units=8000, write_units=20000, compute_gb_ms=40_000, embedding_tokens=9000
        )
        [day] = read_usage(table, "A")
        cost = day.to_json()["estimated_cost_usd"]
        prices = costs.prices()
        assert cost["api_gateway"] == pytest.approx(1000 * prices["apigateway.rest_requests"].usd / 1e6)
        assert cost["dynamodb_reads"] == pytest.approx(8000 * prices["dynamodb.read_request_units"].usd / 1e6)
        assert cost["dynamodb_writes"] == pytest.approx(20000 * prices["dynamodb.write_request_units"].usd / 1e6)
        assert cost["lambda_compute"] == pytest.approx(40 * prices["lambda.arm64_gb_second"].usd, abs=1e-6)
        assert cost["embeddings"] == pytest.approx(9 * prices["bedrock.titan_embed_v2_tokens"].usd, abs=1e-6)
        parts = [v for k, v in cost.items() if k != "total"]
        assert cost["total"] == pytest.approx(sum(parts), abs=1e-5)
    finally:
        table.close()


def test_the_extraction_models_tokens_are_priced_at_the_configured_bedrock_models_list_price(tmp_path: Path) -> None:
    table = SqliteTable(tmp_path / "model.db")
    try:
        # Given a day of extraction: its model's calls and tokens
        record_usage(table, "A", requests=10, model_calls=4, model_input_tokens=300_000, model_output_tokens=40_000)
        [day] = read_usage(table, "A")
        # When it is priced with Nova Micro on Bedrock configured / Then its tokens at Nova Micro's list prices
        nova = costs.chat_model_prices("bedrock", "amazon.nova-micro-v1:0")
        assert nova is not None
        prices = costs.prices()
        cost = day.to_json(nova)["estimated_cost_usd"]
        expected = (
            300_000 * prices["bedrock.chat.amazon.nova-micro-v1:0.input_tokens"].usd / 1000
            + 40_000 * prices["bedrock.chat.amazon.nova-micro-v1:0.output_tokens"].usd / 1000
        )
        assert cost["extraction_model"] == pytest.approx(expected, abs=1e-6)
        assert cost["total"] == pytest.approx(sum(v for k, v in cost.items() if k != "total"), abs=1e-5)
        # And without a priced model the tokens cost nothing in the estimate (the other parts unchanged)
        unpriced = day.to_json()["estimated_cost_usd"]
        assert unpriced["extraction_model"] == 0.0
        assert unpriced["api_gateway"] == cost["api_gateway"]
    finally:
        table.close()


def test_only_a_bedrock_model_the_prices_file_lists_is_priced_and_the_basis_says_which() -> None:
    # Given the models the cost bench prices extraction at / Then each has its input and output price
    for model_id in (
        "amazon.nova-micro-v1:0",
        "amazon.nova-lite-v1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        "global.anthropic.claude-haiku-4-5-20251001-v1:0",
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    ):
        prices = costs.chat_model_prices("bedrock", model_id)
        assert prices is not None, model_id
        assert prices.output.usd / prices.output.per > prices.input.usd / prices.input.per, model_id
        assert f"Bedrock model {model_id}" in costs.basis("bedrock", model_id)
    # And a model elsewhere, none, or a Bedrock model the file does not list is unpriced, and said to be
    for model, model_id in (
        ("openai", "llama3.2"),
        ("openai", "amazon.nova-micro-v1:0"),
        ("none", "amazon.nova-micro-v1:0"),
        ("bedrock", "amazon.nova-pro-v1:0"),
    ):
        assert costs.chat_model_prices(model, model_id) is None, (model, model_id)
        assert "unpriced" in costs.basis(model, model_id), (model, model_id)
    assert "a local model costs nothing per token" in costs.basis("openai", "llama3.2")


def test_every_price_names_its_region_date_and_source() -> None:
    # A price of $0 is a fact only where AWS charges nothing (CodeDeploy's Lambda deployments): named here, so a
    # price lost to a typo fails
    free = {key for key, price in costs.prices().items() if price.usd == 0}
    assert free == {"codedeploy.lambda_deployment"}
    for price in costs.prices().values():
        assert price.usd >= 0, price
        assert price.per > 0, price
        assert price.region == "us-east-1", price
        assert price.date, price
        assert price.source.startswith("https://"), price
