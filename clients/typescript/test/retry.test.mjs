// The client's retry logic against a tiny scripted HTTP server (it tests the client, not the API): each
// request takes the next scripted answer, and every request is recorded with its headers.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, beforeEach, test } from "node:test";

import { MemoryClient, NotFound, RateLimited, RetryPolicy, Unavailable, UNREACHABLE, retryAfterMs } from "@agentmem/client";
import { freePort } from "./server.mjs";

let script = [];
let seen = [];
let base;
let fake;

before(async () => {
  fake = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      seen.push({ method: request.method, url: request.url, headers: request.headers, body, at: Date.now() });
      const next = script.shift() ?? { status: 500 };
      if (next.hang) return; // never answers
      const headers = { "Content-Type": "application/json", ...(next.headers ?? {}) };
      response.writeHead(next.status, headers);
      response.end(next.body === undefined ? errorBody(next.status) : JSON.stringify(next.body));
    });
  });
  await new Promise((done) => fake.listen(0, "127.0.0.1", done));
  base = `http://127.0.0.1:${fake.address().port}`;
});
after(() => {
  fake.closeAllConnections();
  fake.close();
});
beforeEach(() => {
  script = [];
  seen = [];
});

function errorBody(status) {
  return JSON.stringify({ error: { code: status === 429 ? "rate_limited" : "dependency_unavailable", message: `scripted ${status}`, request_id: `req-${seen.length}` } });
}

const fast = (options = {}) => new MemoryClient(base, { retry: { baseMs: 1, capMs: 5, ...options } });
const entry = { id: "e1", session_id: null, project_id: null, content: {}, author: "user", timestamp: "2026-01-01T00:00:00Z" };

test("a write answered 503 then 201 is sent again with the same Idempotency-Key", async () => {
  script = [{ status: 503, headers: { "Retry-After": "0" } }, { status: 503 }, { status: 201, body: entry }];
  assert.deepEqual(await fast().user("app", "a/b").addEntry("hello"), entry);
  assert.equal(seen.length, 3);
  const keys = seen.map((request) => request.headers["idempotency-key"]);
  assert.match(keys[0], /^[0-9a-f]{32}$/);
  assert.deepEqual(keys, [keys[0], keys[0], keys[0]]);
  assert.deepEqual(new Set(seen.map((request) => request.body)).size, 1);
  assert.equal(seen[0].url, "/v1/apps/app/users/a%2Fb/memories");
  assert.equal(seen[0].headers["content-type"], "application/json");
  // a second call gets a key of its own; a key given is sent as given
  script = [{ status: 201, body: entry }, { status: 429, headers: { "Retry-After": "0" } }, { status: 201, body: entry }];
  await fast().user("app", "u").addEntry("again");
  await fast().user("app", "u").addEntry("mine", { idempotencyKey: "my-key" });
  assert.notEqual(seen[3].headers["idempotency-key"], keys[0]);
  assert.deepEqual([seen[4].headers["idempotency-key"], seen[5].headers["idempotency-key"]], ["my-key", "my-key"]);
  // and so does any request the caller spells, whatever the case of its method
  script = [{ status: 503 }, { status: 200, body: { ok: true } }];
  assert.deepEqual(await fast().request("put", "/v1/anything", { body: {} }), { ok: true });
  assert.equal(seen[6].method, "PUT");
  assert.equal(seen[6].headers["idempotency-key"], seen[7].headers["idempotency-key"]);
});

test("a 429 waits the Retry-After the server asks for", async () => {
  script = [{ status: 429, headers: { "Retry-After": "1" } }, { status: 200, body: { entries: [], next_cursor: null } }];
  const started = Date.now();
  await fast().user("app", "u").listRecent();
  assert.equal(seen.length, 2);
  assert.ok(seen[1].at - seen[0].at >= 950, `waited ${seen[1].at - seen[0].at} ms`);
  assert.ok(Date.now() - started < 3000);
  // A GET carries no Idempotency-Key: it is safe to repeat as it is
  assert.equal(seen[0].headers["idempotency-key"], undefined);
});

test("a Retry-After beyond maxRetryAfterMs is not waited for", async () => {
  script = [{ status: 429, headers: { "Retry-After": "120" } }];
  const error = await fast().user("app", "u").listRecent().catch((e) => e);
  assert.ok(error instanceof RateLimited);
  assert.deepEqual([error.status, error.code, error.requestId, error.retryAfterMs], [429, "rate_limited", "req-1", 120_000]);
  assert.equal(seen.length, 1);
});

test("retries stop after `retries` and throw the last answer", async () => {
  script = [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 200, body: {} }];
  const error = await fast({ retries: 2 }).health().catch((e) => e);
  assert.ok(error instanceof Unavailable);
  assert.equal(error.status, 503);
  assert.equal(error.requestId, "req-3");
  assert.equal(seen.length, 3);
});

test("a write without an Idempotency-Key is never retried", async () => {
  script = [{ status: 503 }, { status: 201, body: entry }];
  const client = new MemoryClient(base, { idempotencyKeys: false, retry: { baseMs: 1 } });
  await assert.rejects(client.user("app", "u").addEntry("once"), Unavailable);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].headers["idempotency-key"], undefined);
  // unless the call gives one
  script = [{ status: 503 }, { status: 201, body: entry }];
  await client.user("app", "u").addEntry("keyed", { idempotencyKey: "k" });
  assert.equal(seen.length, 3);
});

test("other errors are not retried", async () => {
  script = [{ status: 404, body: { error: { code: "not_found", message: "gone", request_id: "r" } } }, { status: 200, body: {} }];
  await assert.rejects(fast().user("app", "u").getEntry("x"), NotFound);
  script = [{ status: 500, body: "not the API's error shape" }];
  const error = await fast().health().catch((e) => e);
  assert.equal(error.constructor.name, "MemoryApiError");
  assert.deepEqual([error.status, error.code, error.requestId], [500, "http_error", undefined]);
  assert.equal(seen.length, 2);
});

test("no answer is retried, then thrown as Unavailable with status 0", async () => {
  const closed = `http://127.0.0.1:${await freePort()}`;
  let attempts = 0;
  const counting = (input, init) => {
    attempts += 1;
    return fetch(input, init);
  };
  const client = new MemoryClient(closed, { fetch: counting, retry: { retries: 2, baseMs: 1 } });
  const error = await client.health().catch((e) => e);
  assert.ok(error instanceof Unavailable);
  assert.deepEqual([error.status, error.code], [UNREACHABLE, "unreachable"]);
  assert.match(error.message, /unreachable.*ECONNREFUSED/);
  assert.equal(attempts, 3);
});

test("an attempt that takes longer than timeoutMs counts as no answer", async () => {
  script = [{ hang: true }, { status: 200, body: { status: "ok", checks: {} } }];
  const client = new MemoryClient(base, { timeoutMs: 200, retry: { baseMs: 1 } });
  assert.deepEqual(await client.health(), { status: "ok", checks: {} });
  assert.equal(seen.length, 2);
});

test("the backoff is full jitter, capped, and Retry-After wins", () => {
  const policy = new RetryPolicy({ random: () => 0.5 });
  assert.deepEqual([0, 1, 2, 3].map((attempt) => policy.delayMs(attempt, 503, null, true)), [125, 250, 500, 1000]);
  assert.equal(new RetryPolicy({ random: () => 0.999, capMs: 1000 }).delayMs(3, 429, null, true), 999);
  assert.equal(policy.delayMs(0, 429, "2", true), 2000 + 12.5);
  assert.equal(policy.delayMs(4, 429, null, true), undefined); // retries spent
  assert.equal(policy.delayMs(0, 500, null, true), undefined); // not worth another try
  assert.equal(policy.delayMs(0, 503, null, false), undefined); // not safe to repeat
  assert.equal(new RetryPolicy({ retries: 0 }).delayMs(0, 503, null, true), undefined);
  assert.equal(retryAfterMs("3"), 3000);
  assert.equal(retryAfterMs("-3"), 0);
  assert.equal(retryAfterMs(new Date(Date.now() + 10_000).toUTCString(), Date.now()) > 8000, true);
  assert.equal(retryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
  assert.equal(retryAfterMs("soon"), undefined);
  assert.equal(retryAfterMs(null), undefined);
});
