"""The cost model's cache simulation (bench/cost_model.py, issue 35) on a case worked by hand, and the
AgentCore rows on figures small enough to add up by hand."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import cost_model
from cost_model import Request, Workload, simulate_cache


def test_the_cache_simulation_matches_a_case_worked_by_hand() -> None:
    # Given containers that hold two users' indexes, go after 100 idle seconds, and serve a request in 1 s
    def search(at: float, user: int) -> Request:
        return Request(at, user, 1.0, search=True)

    requests = [
        search(0.0, 1),  # A starts: u1 cold (lag 0)
        search(0.5, 2),  # A busy until 1: B starts, u2 cold
        search(2.0, 1),  # A (idle since 1) and B (since 1.5) idle: B, the last idle, does not hold u1: cold
        search(4.0, 3),  # B again (idle since 3): u3 cold; B holds u2 and u1, forgets u2 (least recent)
        Request(5.0, 1, 1.0, writes=1),  # B stores a turn of u1: u1's log at 1
        search(6.0, 1),  # B holds u1 at 0: a hit, one row caught up
        Request(150.0, 1, 1.0, writes=1),  # A and B idle past 100 s, gone: C starts; u1's log at 2
        search(200.0, 1),  # C (idle 49 s): u1 cold, 2 rows past its snapshot: a new snapshot asked
        search(200.5, 2),  # C busy: D starts, u2 cold
    ]
    # When they are simulated with a snapshot asked for 2 rows behind
    run = simulate_cache(requests, index_bytes=10, budget_bytes=20, idle_seconds=100, snapshot_lag=2)
    # Then the hits, cold loads, lags and containers are those worked out above
    assert (run.requests, run.searches, run.hits, run.cold_loads) == (9, 7, 1, 6)
    assert run.hit_rate == pytest.approx(1 / 7)
    assert run.containers_started == 4
    assert run.most_containers == 2
    assert run.lag_at_load == {0: 5, 2: 1}
    assert run.rows_at_hit == {1: 1}
    assert run.refreshes == 1


def test_a_container_older_than_its_lifetime_is_replaced_when_next_idle() -> None:
    # Given containers replaced after 100 s, a user searched every 30 s (one container serves them all)
    requests = [Request(30.0 * n, 1, 1.0, search=True) for n in range(6)]
    run = simulate_cache(requests, index_bytes=1, budget_bytes=10, lifetime_seconds=100)
    # Then the search at 120 s finds the first container too old: a new one, cold
    assert (run.containers_started, run.cold_loads, run.hits) == (2, 2, 4)


def test_a_refreshed_snapshot_starts_the_next_load_from_the_rows_written_since() -> None:
    # Given a user whose snapshot is 3 rows behind, containers that never share (each load on a new one)
    requests = [Request(0.0, 7, 10.0, search=True), Request(1.0, 7, 10.0, writes=1), Request(2.0, 7, 10.0, search=True)]
    run = simulate_cache(requests, index_bytes=1, budget_bytes=1, snapshot_lag=3, initial_lag=lambda user: 3)
    # Then the first load catches up 3 rows and asks for a snapshot; the second starts from it, 1 row behind
    assert run.lag_at_load == {3: 1, 1: 1}
    assert run.refreshes == 1
    assert run.containers_started == 3


def test_a_container_holds_what_its_budget_allows_and_requests_before_the_count_start_are_not_counted() -> None:
    # Given one container (requests a second apart) whose budget holds 3 users, 4 users searched in turn twice
    requests = [Request(float(n), n % 4, 0.5, search=True) for n in range(8)]
    run = simulate_cache(requests, index_bytes=100, budget_bytes=300, counted_from=4.0)
    # Then each search finds its user forgotten (least recently used, cyclic): every counted search is cold
    assert (run.searches, run.hits, run.cold_loads, run.containers_started) == (4, 0, 4, 0)
    bigger = simulate_cache(requests, index_bytes=100, budget_bytes=400, counted_from=4.0)
    assert (bigger.hits, bigger.cold_loads) == (4, 0)
    assert bigger.rows_at_hit == {0: 4}


def test_agents_requests_are_a_turn_loop_at_the_workload_rate() -> None:
    workload = Workload(users=1000)
    seconds = 24 * 3600.0
    requests = cost_model.agent_requests(
        workload, seconds, random.Random(3), turn_seconds={"history": 0.01, "search": 0.05, "store": 0.02}
    )
    sessions_expected = workload.users * workload.sessions * seconds / cost_model.MONTH_SECONDS
    searches = sum(r.search for r in requests)
    writes = sum(r.writes for r in requests)
    # Each turn: a history read, a search (300 searches over 300 turns), a stored turn (one log row)
    assert searches == writes == len(requests) / 3
    assert searches / workload.turns == pytest.approx(sessions_expected, rel=0.1)
    assert [r.at for r in requests] == sorted(r.at for r in requests)


def test_agentcore_rows_price_events_alone_and_then_retrievals_and_the_extracted_records() -> None:
    # 10 users: 3,000 events ($0.75), 3,000 retrievals ($1.50); 1,000 memories = 100 sessions x 1.5 = 150
    # records a user, 1,500 held: $1.125 built-in, $0.375 self-managed
    bill = cost_model.agentcore_bills(Workload(users=10), records_per_session=1.5)
    assert bill.short_term == pytest.approx(0.75)
    assert bill.records_held == pytest.approx(1500)
    assert bill.long_term_built_in == pytest.approx(0.75 + 1.5 + 1.125)
    assert bill.long_term_self_managed == pytest.approx(0.75 + 1.5 + 0.375)


def test_a_cold_load_is_priced_from_the_catch_up_measured_at_the_nearest_lags() -> None:
    load = cost_model.ColdLoad(
        entries=1000,
        snapshot_bytes=80_000,
        held_bytes=6e6,
        decode_ms=10.0,
        encode_ms=40.0,
        units_by_lag={0: 1, 1: 3, 10: 12, 99: 101},
    )
    # Beyond the statistics read (1 unit at lag 0): linear between measured lags, past them on the last slope
    assert load.catch_up_units(0) == 0
    assert load.catch_up_units(5) == pytest.approx(3 + 9 * 4 / 9 - 1)
    assert load.catch_up_units(110) == pytest.approx(101 + 89 / 89 * 11 - 1)
    # 30 ms to the first byte + 1 ms for 80 KB + 10 ms of decode at a 1,769 MB share, at 1,769 MB
    assert load.load_ms(0, 1769) == pytest.approx(41)
    assert load.load_ms(1, 1769) == pytest.approx(41 + cost_model.CATCH_UP_ROUND_TRIPS_MS)
    assert load.for_entries(2000).snapshot_bytes == 160_000
    assert load.for_entries(2000).catch_up_units(5) == load.catch_up_units(5)


def test_api_requests_past_333_million_are_priced_at_the_lower_tiers() -> None:
    # 333 million at $3.50/M, the next 667 million at $2.80/M, 1 billion more at $2.38/M: worked by hand
    requests = 2e9
    tiered = 333 * 3.50 + 667 * 2.80 + 1000 * 2.38
    assert cost_model.api_tier_saving(requests) == pytest.approx(2000 * 3.50 - tiered)
    assert cost_model.api_tier_saving(333e6) == pytest.approx(0.0)


def test_backups_data_out_and_idle_polling_are_priced_as_the_list_prices_say() -> None:
    # 35 daily full copies of a 10 GB table at $0.10 a GB-month
    assert cost_model.backups(10, 35) == pytest.approx(35.0)
    # the first 100 GB out are free, the rest $0.09 a GB
    assert cost_model.data_transfer_out(80) == 0.0
    assert cost_model.data_transfer_out(1100) == pytest.approx(90.0)
    # five pollers, a ReceiveMessage every 20 s each, for 730 hours: 657,000 requests at $0.40 a million
    assert cost_model.sqs_idle_requests() == pytest.approx(657_000)
    facts = {
        "keys": 1,
        "secrets": 0,
        "alarm_metrics": 0,
        "dashboards": 0,
        "detailed_metrics": 0,
        "custom_metrics": 0,
        "ocus": 0,
        "rotated_keys": 1,
        "sqs_event_sources": 2,
    }
    floor = cost_model.floor(facts)
    assert floor.parts["kms_rotation"] == pytest.approx(2.0)  # a rotated key's first two rotations, $1 each
    assert floor.parts["sqs_idle_polling"] == pytest.approx(2 * 0.657 * 0.40)
