"""`make bench ONLY=agentcore`: the AgentCore Memory data plane (docs/agentcore.md) over HTTP, as boto3's own
``bedrock-agentcore`` client calls it, against the local server (one worker, SQLite, hashing embedder):
CreateEvent, ListEvents and RetrieveMemoryRecords latency, and how fast one session takes events.

AgentCore Memory takes one CreateEvent every 4 s in a session; this service has no per-session write throttle
below what its table allows (DynamoDB: 1,000 write units a second per partition). Their cost per 1,000 calls in
the cloud is bench_cost's (``make bench ONLY=cost``: "AgentCore ..." rows, beside AgentCore's list prices).
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import LocalServer, agentcore_client, report, scaled, sentence, timed, vocabulary

MEMORY = "agentcore-bench"
ACTOR = "alice"
CALLS = scaled(200, 5)
EVENTS = scaled(1000, 20)
RECORDS = scaled(1000, 10)


def main() -> None:
    rng = random.Random(27)
    words = vocabulary()
    with (
        tempfile.TemporaryDirectory() as folder,
        LocalServer(Path(folder) / "memory.db", workers=1, embedder="hashing") as server,
    ):
        client = agentcore_client(server)

        def event(session: str) -> Any:
            said = {"conversational": {"content": {"text": sentence(rng, words, (10, 28))}, "role": "USER"}}
            return client.create_event(
                memoryId=MEMORY, actorId=ACTOR, sessionId=session, eventTimestamp=time.time(), payload=[said]
            )

        for start in range(0, RECORDS, 100):
            records = [
                {
                    "requestIdentifier": f"r{n}",
                    "namespaces": [f"/facts/{ACTOR}/"],
                    "content": {"text": sentence(rng, words, (8, 20))},
                    "timestamp": time.time(),
                }
                for n in range(start, min(RECORDS, start + 100))
            ]
            client.batch_create_memory_records(memoryId=MEMORY, records=records)
        event("warm-up")
        print(f"boto3 over HTTP to the local server; {RECORDS:,} records of the actor, {CALLS} calls each")
        report("CreateEvent (one turn)", timed([lambda: event("s1")] * CALLS))
        report(
            "ListEvents (a session of the turns above, 20 a page)",
            timed([lambda: client.list_events(memoryId=MEMORY, actorId=ACTOR, sessionId="s1", maxResults=20)] * CALLS),
        )
        queries = [sentence(rng, words, (4, 9)) for _ in range(CALLS)]
        report(
            "RetrieveMemoryRecords (top 10 of the namespace)",
            timed(
                [
                    lambda q=q: client.retrieve_memory_records(
                        memoryId=MEMORY, namespace=f"/facts/{ACTOR}/", searchCriteria={"searchQuery": q, "topK": 10}
                    )
                    for q in queries
                ]
            ),
        )
        started = time.perf_counter()
        for _ in range(EVENTS):
            event("burst")
        rate = EVENTS / (time.perf_counter() - started)
        listed = client.list_events(memoryId=MEMORY, actorId=ACTOR, sessionId="burst", maxResults=100)["events"]
        assert len(listed) == min(100, EVENTS)
        print(
            f"one session took {EVENTS:,} CreateEvent calls back to back at {rate:,.0f} events/s, none refused "
            f"(AgentCore Memory: 0.25 a second a session)"
        )
