// What an app learns, seen through the client (issue 43, point 2): a server whose extraction model is on a
// local port that refuses connections; once a session's batch is parked, the app's state says why, health is
// degraded, and the parked jobs come page by page (listExtractionJobs).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { InvalidInput, MemoryClient } from "@agentmem/client";
import { freePort, startServer } from "./server.mjs";

const APP = "ts-learning";
let server;
let client;

before(async () => {
  const refused = await freePort(); // nothing listens there
  server = await startServer({
    args: ["--workers", "1"],
    env: { MEMORY_MODEL: "openai", MEMORY_MODEL_URL: `http://127.0.0.1:${refused}/v1`, MEMORY_MODEL_ID: "tiny-model" },
  });
  client = new MemoryClient(server.url);
});
after(() => server?.stop());

/** Write a session and ask for it to be learnt from (each ask runs the next attempt at once) until it is parked. */
async function parked(user, session) {
  const memory = client.user(APP, user);
  await memory.addSession(session, ["Ana plays the cello.", "Nice."]);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const { jobs } = await client.listExtractionJobs(APP, { limit: 100 });
    const mine = jobs.filter((job) => job.session === session);
    if (mine.length > 0) return mine;
    await memory.extractSession(session);
    await new Promise((wait) => setTimeout(wait, 500));
  }
  throw new Error("the batch was not parked in time");
}

test("an unreachable model is seen in the state, health and the parked jobs", async () => {
  // Given an app that learns facts, and two sessions whose batches failed until parked
  await client.putExtraction(APP, { strategies: [{ type: "SEMANTIC", name: "facts" }], trigger_messages: 2 });
  const [first] = await parked("alice", "s1");
  const [second] = await parked("bob", "s2");
  // Then the state says the model cannot be reached, and why
  const { state } = await client.getExtraction(APP);
  assert.equal(state.status, "model_unreachable");
  assert.match(state.message, /ConnectionRefusedError/);
  // And health is degraded by the model
  const health = await client.health();
  assert.deepEqual([health.status, health.checks.model], ["degraded", "failing"]);
  // And the jobs come page by page, oldest first, each with its reason
  const page = await client.listExtractionJobs(APP, { limit: 1 });
  const rest = await client.listExtractionJobs(APP, { limit: 1, cursor: page.next_cursor });
  assert.deepEqual([...page.jobs, ...rest.jobs].map((job) => job.job_id), [first.job_id, second.job_id]);
  assert.equal(rest.next_cursor, null);
  for (const job of [...page.jobs, ...rest.jobs]) assert.match(job.failure, /unreachable: ConnectionRefusedError/);
  // And a cursor the API did not give is refused with the library's error
  await assert.rejects(client.listExtractionJobs(APP, { cursor: "not-a-cursor!" }), (error) => {
    assert.ok(error instanceof InvalidInput);
    assert.equal(error.code, "invalid_cursor");
    return true;
  });
});
