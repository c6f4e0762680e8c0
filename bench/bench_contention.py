"""Concurrent writes of one user on DynamoDB, with DynamoDB's transaction conflicts modelled
(tests.moto_support.TransactionConflicts, from the Developer Guide; moto has none): 16 writers of one
user, each storing single entries and a session of 30 long turns (several transactions at once). Figures:
writes acknowledged per second, writes refused (429), transactions cancelled by a conflict.

The ablation shows what each half of the fix does: the guard items every transaction checks are sharded
(a random one of 16 shards of the deletion mark and of the scope registry, instead of the one item), and a
refused write is run again up to 16 times after a jittered wait (before: transactions 8 times, single
writes refused by a transaction never; here the rows differ only in shards and attempts). moto runs one request
at a time, so the rate is the emulator's; the refusals and conflicts are the model's and are what changes.
Run: ``python bench/run.py contention``."""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from typing import Any

from benchlib import emulated_aws, scaled

REGION = "us-east-1"
WRITERS = 16
SINGLE_WRITES = scaled(6, 1)
TURNS = scaled(30, 4)


def _run(shards: int, attempts: int) -> str:
    import boto3
    from moto import mock_aws

    from agentmem import users
    from agentmem.errors import RateLimited
    from agentmem.keys import Scope
    from agentmem.memory.service import MemoryService
    from agentmem.models.memory import MemoryEntry
    from agentmem.stores import dynamo_table
    from agentmem.stores.dynamo_table import DynamoTable
    from tests.moto_support import TransactionConflicts

    def entry(text: str) -> MemoryEntry:
        return MemoryEntry.model_validate({"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"})

    saved = users.GUARD_SHARDS, dynamo_table._MAX_CONFLICT_ATTEMPTS
    users.GUARD_SHARDS, dynamo_table._MAX_CONFLICT_ATTEMPTS = shards, attempts
    try:
        with mock_aws():
            client = boto3.client("dynamodb", region_name=REGION)
            table = DynamoTable("contention", client=client)
            table.create()
            model = TransactionConflicts(client)
            memory = MemoryService(table)
            scope = Scope("bench", "busy")
            memory.add_entry(scope, entry("the first entry registers the scope"))
            outcomes: Counter[str] = Counter()
            lock = threading.Lock()
            latencies: list[float] = []
            start = threading.Barrier(WRITERS + 1)

            def write(call: Any, entries: int) -> None:
                began = time.perf_counter()
                try:
                    call()
                    outcome = "stored"
                except RateLimited:
                    outcome = "refused"
                with lock:
                    latencies.append(time.perf_counter() - began)
                    outcomes[outcome] += entries
                    outcomes[f"{outcome} writes"] += 1

            def writer(n: int) -> None:
                start.wait()
                for i in range(SINGLE_WRITES):
                    write(lambda i=i: memory.add_entry(scope, entry(f"writer {n} note {i}")), 1)
                turns = [
                    entry(f"writer {n} turn {t} " + " ".join(f"w{n}t{t}k{k}" for k in range(40))) for t in range(TURNS)
                ]
                write(lambda: memory.add_session(scope, f"s{n}", turns), TURNS)

            threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
            for thread in threads:
                thread.start()
            start.wait()
            started = time.perf_counter()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - started
            writes = outcomes["stored writes"] + outcomes["refused writes"]
            return (
                f"{outcomes['stored writes'] / seconds:6.1f} writes/s acknowledged  "
                f"refused {outcomes['refused writes']:3d}/{writes} writes "
                f"(429, {outcomes['refused']} entries)  "
                f"conflicts {model.conflicts:4d} / transactions {model.transactions:4d}  "
                f"write p50 {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s  ({seconds:.1f} s)"
            )
    finally:
        users.GUARD_SHARDS, dynamo_table._MAX_CONFLICT_ATTEMPTS = saved


def main() -> None:
    emulated_aws(REGION)
    from agentmem import users
    from agentmem.stores import dynamo_table
    from tests.moto_support import serialise_moto_dynamodb

    serialise_moto_dynamodb()
    print(
        f"{WRITERS} writers of one user, each {SINGLE_WRITES} entries then a session of {TURNS} long turns "
        "(DynamoDB on moto, transaction conflicts modelled, 10 ms per transaction)",
        flush=True,
    )
    shipped = users.GUARD_SHARDS, dynamo_table._MAX_CONFLICT_ATTEMPTS
    for label, shards, attempts in (
        ("one guard item, no retry", 1, 1),
        ("one guard item, 8 attempts (before)", 1, 8),
        (f"{shipped[0]} shards, no retry", shipped[0], 1),
        (f"{shipped[0]} shards, {shipped[1]} attempts (shipped)", *shipped),
    ):
        print(f"{label:<38} {_run(shards, attempts)}", flush=True)
