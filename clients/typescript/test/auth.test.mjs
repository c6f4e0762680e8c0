// The client against the real local server started with keys (`agentmem serve --auth required`).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Forbidden, MemoryClient, Unauthorized } from "@agentmem/client";
import { startServer } from "./server.mjs";

let server;
let keyA;
let keyB;

before(async () => {
  server = await startServer({ args: ["--auth", "required"] });
  // keys made with the console command, as an operator would
  [keyA, keyB] = await Promise.all(["A", "B"].map(async (app) => JSON.parse(await server.cli("keys", "create", "--app", app))));
});
after(() => server?.stop());

test("a missing key is 401 and another app's key 403, each with its code and request id", async () => {
  const anonymous = new MemoryClient(server.url).user("A", "u");
  const missing = await anonymous.addEntry("likes tea").catch((error) => error);
  assert.ok(missing instanceof Unauthorized);
  assert.deepEqual([missing.status, missing.code], [401, "unauthorized"]);
  assert.equal(typeof missing.requestId, "string");
  const wrong = await new MemoryClient(server.url, { apiKey: "not-a-key" }).user("A", "u").listRecent().catch((e) => e);
  assert.ok(wrong instanceof Unauthorized);
  const foreign = await new MemoryClient(server.url, { apiKey: keyB.api_key }).user("A", "u").addEntry("x").catch((e) => e);
  assert.ok(foreign instanceof Forbidden);
  assert.deepEqual([foreign.status, foreign.code], [403, "forbidden"]);
});

test("the app's own key is sent as x-api-key and works, usage included", async () => {
  const client = new MemoryClient(server.url, { apiKey: keyA.api_key });
  const stored = await client.user("A", "u").addEntry("likes tea");
  assert.deepEqual((await client.user("A", "u").getEntry(stored.id)).id, stored.id);
  const usage = await client.usage("A");
  assert.equal(usage.app, "A");
  assert.ok(usage.days[0].items_stored >= 1);
  await assert.rejects(client.usage("B"), Forbidden);
  // service routes need no key
  assert.equal((await new MemoryClient(server.url).health()).status, "ok");
});
