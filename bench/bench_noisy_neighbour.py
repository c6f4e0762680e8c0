"""Noisy neighbour (issue 41, point 7): tenant A at the full rate of its costliest requests, tenant B at a steady
light load; B's latency and errors with and without A, and the largest share of the API A held. Written to
bench/out/tenancy.json.

1. **The local server** (``agentmem serve``, its default workers, keys required, the hashing embedder so that the
   figure is the server's and not the model's): A keeps 12 session uploads of about 640 KB in flight at once, again
   and again (the review's flood); B searches 10 times a second. Measured over HTTP. A's share is the most of its
   requests that were held by the server at once (admitted, not refused), over the server's request threads.
2. **The cloud, modelled**: the stage as the template sizes it (prod's API reservation, its tiers' in-flight limits
   and usage plans, from infra/). A is a scale tenant sending its plan's 100 requests a second (burst 200) of the
   costliest kind: each would run the API function's whole 25 s timeout; B is a starter tenant at 2 requests a
   second of 100 ms. Modelled from AWS's documentation, in simulated time: API Gateway's per-key token bucket
   (rate, burst: 429 past it), Lambda's reserved concurrency (a request past it is throttled: the gateway answers
   500). Not modelled: the in-flight count, which is the real code (agentmem/tenancy/admission.py) on a real
   SQLite table, driven by the simulated clock. Run twice: with the in-flight limits, and without (as before).
"""

from __future__ import annotations

import heapq
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import LocalServer, percentiles, scaled

OUT = Path(__file__).resolve().parent / "out" / "tenancy.json"
FLOOD = 12
B_RATE = 10.0


def _keys(db: Path) -> tuple[str, str]:
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.tenancy.keys import TenantService

    table = SqliteTable(db)
    try:
        tenants = TenantService(table)
        return tenants.create_key("noisy", tier="scale").secret, tenants.create_key("quiet", tier="starter").secret
    finally:
        table.close()


def _local(seconds: float) -> dict[str, Any]:
    import httpx

    from agentmem.local.server import REQUEST_THREADS, TENANT_THREADS, default_workers

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "memory.db"
        noisy, quiet = _keys(db)
        with LocalServer(db, embedder="hashing", env={"MEMORY_AUTH": "required"}) as server:
            workers = default_workers()
            quiet_path = "/v1/apps/quiet/users/bo"
            with httpx.Client(base_url=server.base, timeout=60, headers={"x-api-key": quiet}) as client:
                for i in range(20):
                    entry = {"entry": {"content": {"role": "user", "parts": [{"text": f"bo likes jazz {i}"}]}}}
                    client.post(f"{quiet_path}/memories", json=entry).raise_for_status()

            def light_load(stop_at: float) -> tuple[list[float], int]:
                samples: list[float] = []
                errors = 0
                with httpx.Client(base_url=server.base, timeout=60, headers={"x-api-key": quiet}) as client:
                    next_at = time.monotonic()
                    while next_at < stop_at:
                        time.sleep(max(0.0, next_at - time.monotonic()))
                        started = time.perf_counter()
                        try:
                            reply = client.post(f"{quiet_path}/memories/search", json={"query": "jazz"})
                            errors += reply.status_code != 200
                        except httpx.HTTPError:
                            errors += 1
                        samples.append((time.perf_counter() - started) * 1000)
                        next_at += 1 / B_RATE
                return samples, errors

            alone, alone_errors = light_load(time.monotonic() + seconds)
            turn = " ".join(f"word{j} of the long meeting notes" for j in range(300))
            upload = {
                "entries": [{"content": {"role": "user", "parts": [{"text": f"{i}: {turn}"}]}} for i in range(60)]
            }
            held: list[tuple[float, float]] = []
            counts = {"answered": 0, "refused": 0, "other": 0}
            lock = threading.Lock()
            stop_at = time.monotonic() + seconds

            def flood(n: int) -> None:
                with httpx.Client(base_url=server.base, timeout=120, headers={"x-api-key": noisy}) as client:
                    while time.monotonic() < stop_at:
                        started = time.monotonic()
                        try:
                            reply = client.put(f"/v1/apps/noisy/users/u{n}/sessions/s/memories", json=upload)
                            status = reply.status_code
                        except httpx.HTTPError:
                            status = 0
                        with lock:
                            if status == 200:
                                counts["answered"] += 1
                                held.append((started, time.monotonic()))
                            elif status == 429:
                                counts["refused"] += 1
                            else:
                                counts["other"] += 1

            threads = [threading.Thread(target=flood, args=(n,), daemon=True) for n in range(FLOOD)]
            for thread in threads:
                thread.start()
            time.sleep(min(1.0, seconds / 4))
            crowded, crowded_errors = light_load(stop_at)
            for thread in threads:
                thread.join(180)
    most = _most_at_once(held)
    threads_total = workers * REQUEST_THREADS
    return {
        "server": f"agentmem serve, {workers} workers of {REQUEST_THREADS} request threads, hashing embedder",
        "flood": f"A: {FLOOD} session uploads of {len(json.dumps(upload)) // 1000} KB in flight at once",
        "b_alone": _latency(alone, alone_errors),
        "b_with_a": _latency(crowded, crowded_errors),
        "a": {
            **counts,
            "most_held_at_once": most,
            "of_request_threads": threads_total,
            "cap_per_worker": TENANT_THREADS,
        },
        "a_largest_share": round(most / threads_total, 3),
    }


def _most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def _latency(samples: list[float], errors: int) -> dict[str, Any]:
    ordered = sorted(samples)
    p50, _ = percentiles(ordered)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"requests": len(samples), "p50_ms": round(p50, 1), "p99_ms": round(p99, 1), "errors": errors}


# -- the cloud, modelled -------------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _cloud(seconds: float, *, limited: bool) -> dict[str, Any]:
    from agentmem.errors import TooManyInFlight
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.tenancy.admission import Admission, TierLimits, in_flight_limits
    from infra.components.compute import API_TIMEOUT_SECONDS, Concurrency
    from infra.components.throttling import IN_FLIGHT_SHARES, PLAN_TIERS

    reserved = Concurrency.for_stage(True, account=1000, extraction=5, snapshots=True).api
    limits = in_flight_limits(reserved, IN_FLIGHT_SHARES)
    plans = {tier.name: tier for tier in PLAN_TIERS}
    tenants = {"A": ("scale", API_TIMEOUT_SECONDS), "B": ("starter", 0.1)}
    rates = {"A": float(plans["scale"].rate_limit), "B": 2.0}
    buckets = {name: float(plans[tier].burst_limit) for name, (tier, _) in tenants.items()}
    clock = _Clock()
    with tempfile.TemporaryDirectory() as folder:
        table = SqliteTable(Path(folder) / "model.db")
        admission = Admission(table, limits if limited else TierLimits({}), clock=clock)
        # events: (time, order, kind, tenant, context manager of a running request)
        events: list[tuple[float, int, str, str, Any]] = []
        order = 0
        for name in tenants:
            heapq.heappush(events, (clock.now, order, "arrive", name, None))
            order += 1
        start, end = clock.now, clock.now + seconds
        running = {"A": 0, "B": 0}
        most_a = 0
        last_refill = dict.fromkeys(tenants, clock.now)
        b_outcomes = {"ok": 0, "throttled_by_lambda": 0, "refused_429": 0}
        b_latency: list[float] = []
        a_outcomes = {"ok": 0, "throttled_by_lambda": 0, "refused_429": 0}
        while events:
            at, _, kind, name, held = heapq.heappop(events)
            clock.now = at
            if kind == "end":
                running[name] -= 1
                held.__exit__(None, None, None)
                continue
            if at >= end:
                continue
            heapq.heappush(events, (at + 1 / rates[name], order, "arrive", name, None))
            order += 1
            tier, duration = tenants[name]
            outcomes = a_outcomes if name == "A" else b_outcomes
            # API Gateway: the key's token bucket (rate, burst)
            plan = plans[tier]
            buckets[name] = min(plan.burst_limit, buckets[name] + (at - last_refill[name]) * plan.rate_limit)
            last_refill[name] = at
            if buckets[name] < 1:
                outcomes["refused_429"] += 1
                continue
            buckets[name] -= 1
            # Lambda: the API function's reserved concurrency
            if running["A"] + running["B"] >= reserved:
                outcomes["throttled_by_lambda"] += 1
                continue
            # The function: the tenant's requests in flight (the real count)
            request = admission.admitted(name, tier)
            try:
                request.__enter__()
            except TooManyInFlight:
                outcomes["refused_429"] += 1
                if name == "B":
                    b_latency.append(20.0)
                continue
            running[name] += 1
            most_a = max(most_a, running["A"])
            outcomes["ok"] += 1
            if name == "B":
                b_latency.append(duration * 1000)
            heapq.heappush(events, (at + duration, order, "end", name, request))
            order += 1
        table.close()
    b_errors = b_outcomes["throttled_by_lambda"] + b_outcomes["refused_429"]
    return {
        "api_reserved_concurrency": reserved,
        "in_flight_limits": limits.per_tier if limited else "none",
        "seconds_simulated": end - start,
        "a": {**a_outcomes, "most_held_at_once": most_a},
        "a_largest_share": round(most_a / reserved, 3),
        "b": {**b_outcomes, "errors": b_errors, "requests": sum(b_outcomes.values())},
    }


def main() -> None:
    seconds = float(scaled(20, 2))
    local = _local(seconds)
    modelled_seconds = float(scaled(120, 15))
    cloud = {
        "with_limits": _cloud(modelled_seconds, limited=True),
        "without_limits": _cloud(modelled_seconds, limited=False),
    }
    figures = {"local_server": local, "cloud_model": cloud}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(figures, indent=2) + "\n")
    alone, crowded = local["b_alone"], local["b_with_a"]
    print(f"noisy neighbour, local server ({local['server']}; {local['flood']}; B searches {B_RATE:.0f}/s):")
    print(
        f"  B alone:   p50 {alone['p50_ms']:7.1f} ms  p99 {alone['p99_ms']:7.1f} ms  errors {alone['errors']} "
        f"of {alone['requests']}"
    )
    print(
        f"  B with A:  p50 {crowded['p50_ms']:7.1f} ms  p99 {crowded['p99_ms']:7.1f} ms  errors {crowded['errors']} "
        f"of {crowded['requests']}"
    )
    a = local["a"]
    print(
        f"  A: {a['answered']} uploads answered, {a['refused']} refused 429, {a['other']} other; held at most "
        f"{a['most_held_at_once']} of {a['of_request_threads']} request threads ({local['a_largest_share']:.0%})"
    )
    for label, run in cloud.items():
        print(
            f"noisy neighbour, cloud model {label.replace('_', ' ')} (API reservation "
            f"{run['api_reserved_concurrency']}, {run['seconds_simulated']:.0f} s simulated): B errors "
            f"{run['b']['errors']} of {run['b']['requests']}; "
            f"A held at most {run['a']['most_held_at_once']} ({run['a_largest_share']:.0%}), "
            f"throttled by Lambda {run['a']['throttled_by_lambda']}, refused 429 {run['a']['refused_429']}"
        )
    print(f"(written to {OUT.relative_to(OUT.parents[1])})")
