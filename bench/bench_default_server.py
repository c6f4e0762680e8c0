"""The default local server (``agentmem serve``: SQLite, the local model, one worker per core) over REST.

- hybrid search at 700 entries per user: 700 of the natural sentences of bench/data/relevance_set.py (in
  five languages, sessions of 10), its questions as queries, p50/p95 from one keep-alive client;
- 16 concurrent writers, each on its own connection, ``POST /memories`` of one of those sentences for a
  fixed time: requests per second, errors, and whether every acknowledged write is stored (the entries
  listed afterwards are counted against the 201s).

- the costliest writes the limits allow, embedded: one 64 KiB CJK entry, one 30 KB English entry, a
  session of 500 entries of 12 KB (each text is embedded from its beginning, at most the model's window,
  a request at most 16,384 tokens: agentmem/embeddings/local.py).

Natural text, because the model's cost grows with its tokens: the generated words of W1 split into three
or four tokens each and cost twice what a sentence of real words does.
"""

from __future__ import annotations

import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from benchlib import SCALE, LocalServer, data_module, percentiles

ENTRIES = max(70, round(700 * min(1.0, SCALE * 10)))
QUERIES = max(10, round(200 * min(1.0, SCALE * 10)))
WRITERS = 16
SECONDS = 10.0 * min(1.0, max(SCALE, 0.05))
APP = "bench"
HERE = Path(__file__).resolve().parent


def _turn(text: str) -> dict[str, Any]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def search_latency(client: httpx.Client, rng: random.Random, texts: list[str], questions: list[str]) -> None:
    scope = f"/v1/apps/{APP}/users/reader"
    for start in range(0, ENTRIES, 10):
        body = {"entries": [_turn(t) for t in texts[start : min(start + 10, ENTRIES)]]}
        client.put(f"{scope}/sessions/s{start}/memories", json=body).raise_for_status()
    queries = rng.sample(questions, QUERIES)
    for mode in ("hybrid", "semantic", "keyword"):
        for query in queries[:5]:  # warm both workers' caches
            client.post(f"{scope}/memories/search", json={"query": query, "mode": mode})
        samples = []
        for query in queries:
            started = time.perf_counter()
            client.post(f"{scope}/memories/search", json={"query": query, "mode": mode}).raise_for_status()
            samples.append((time.perf_counter() - started) * 1000)
        p50, p95 = percentiles(samples)
        print(
            f"REST {mode:<8} search at {ENTRIES} entries per user   p50 {p50:6.2f} ms   p95 {p95:6.2f} ms", flush=True
        )


def writers(url: str, texts: list[str]) -> None:
    acknowledged = [0] * WRITERS
    errors = [0] * WRITERS
    barrier = threading.Barrier(WRITERS)
    stop: list[float] = []

    def run(n: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            client.get("/v1/health")
            barrier.wait()
            if n == 0:
                stop.append(time.monotonic() + SECONDS)
            while not stop:
                time.sleep(0.001)
            i = n
            while time.monotonic() < stop[0]:
                body = {"entry": _turn(texts[i % len(texts)])}
                try:
                    reply = client.post(f"/v1/apps/{APP}/users/writer-{n}/memories", json=body)
                    acknowledged[n] += reply.status_code == 201
                    errors[n] += reply.status_code != 201
                except httpx.HTTPError:
                    errors[n] += 1
                i += WRITERS

    threads = [threading.Thread(target=run, args=(n,)) for n in range(WRITERS)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    stored = 0
    with httpx.Client(base_url=url, timeout=60) as client:
        for n in range(WRITERS):
            cursor = None
            while True:
                params: dict[str, Any] = {"limit": 100} | ({"cursor": cursor} if cursor else {})
                page = client.get(f"/v1/apps/{APP}/users/writer-{n}/memories", params=params).json()
                stored += len(page["entries"])
                cursor = page.get("next_cursor")
                if not cursor:
                    break
    total = sum(acknowledged)
    print(
        f"REST POST /memories, {WRITERS} concurrent writers: {total / elapsed:6.0f} req/s over {elapsed:.1f} s, "
        f"errors {sum(errors)}, acknowledged {total}, stored {stored}" + ("" if stored == total else "   LOST WRITES"),
        flush=True,
    )


def largest_writes(client: httpx.Client) -> None:
    """The costliest writes the limits allow, embedded by the local model: one entry of 64 KiB of CJK text,
    one of 30 KB of English, and a session of 500 entries of 12 KB each (6 MB)."""
    scope = f"/v1/apps/{APP}/users/large"
    cjk = "我们周末去公园散步了天气很好" * 1560  # 65,520 bytes
    english = "The quarterly report is due on Friday and the whole team is busy with it. " * 400
    for name, text in (("64 KiB of CJK", cjk[: 65_536 // 3]), ("30 KB of English", english[:30_000])):
        started = time.perf_counter()
        client.post(f"{scope}/memories", json={"entry": _turn(text)}).raise_for_status()
        print(f"REST POST /memories, one entry of {name}: {time.perf_counter() - started:6.2f} s", flush=True)
    entries = max(5, round(500 * SCALE))
    body = {"entries": [_turn(f"{n} " + english[:12_000]) for n in range(entries)]}
    started = time.perf_counter()
    client.put(f"{scope}/sessions/big/memories", json=body, timeout=600).raise_for_status()
    print(f"REST PUT a session of {entries} entries of 12 KB: {time.perf_counter() - started:6.2f} s", flush=True)


def main() -> None:
    rng = random.Random(5)
    data = data_module("relevance_set")
    memories, questions = data.build()
    texts = [m.text for m in memories]
    asked = [q.text for q in [*questions, *data.negatives()]]
    with tempfile.TemporaryDirectory() as folder, LocalServer(Path(folder) / "default.db", embedder="local") as server:
        print(f"the default server: local model, {server.base}", file=sys.stderr, flush=True)
        with httpx.Client(base_url=server.base, timeout=60) as client:
            search_latency(client, rng, texts, asked)
            largest_writes(client)
        writers(server.base, texts)


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
    main()
