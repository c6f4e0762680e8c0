// The client against the real local server: every route family, errors and encoding.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  Conflict,
  InvalidInput,
  MalformedRequest,
  MemoryApiError,
  MemoryClient,
  NotFound,
  UserClient,
  segment,
} from "@agentmem/client";
import { startServer } from "./server.mjs";

let server;
let client;
/** A fresh user of the test app: no test sees another's data. */
const someone = (prefix = "user") => client.user("ts-app", `${prefix}-${randomUUID()}`);
const text = (entry) => entry.content.parts.map((part) => part.text).join(" ");

before(async () => {
  server = await startServer();
  client = new MemoryClient(server.url);
});
after(() => server?.stop());

describe("memory entries", () => {
  test("a session and entries go in and come back", async () => {
    const memory = someone();
    assert.ok(memory instanceof UserClient);
    // Given a session of two turns, one a full ADK entry
    const stored = await memory.addSession("chat-1", [
      "I prefer dark mode",
      { content: { role: "user", parts: [{ text: "My dog is called Pixel" }] }, author: "user", metadata: { channel: "chat" } },
    ]);
    assert.deepEqual(stored, { session_id: "chat-1", stored: 2, skipped: 0 });
    // And one entry with metadata in a project
    const budget = await memory.addEntry("Trip budget is 2000 EUR", {
      projectId: "trip",
      sessionId: "plan",
      metadata: { topic: "money", amount: 2000, tags: ["travel"] },
    });
    assert.equal(budget.project_id, "trip");
    assert.equal(budget.session_id, "plan");
    assert.deepEqual(budget.metadata, { topic: "money", amount: 2000, tags: ["travel"] });
    assert.equal(budget.expires_at, null);
    // Then they read back, by id and newest first
    assert.deepEqual(await memory.getEntry(budget.id), budget);
    const recent = await memory.listRecent();
    assert.deepEqual(recent.entries.map(text).sort(), ["I prefer dark mode", "My dog is called Pixel"]);
    assert.equal(recent.next_cursor, null);
    // (a project's reads see the user's global entries too; the global scope sees no project's)
    assert.ok((await memory.listRecent({ projectId: "trip" })).entries.some((e) => e.id === budget.id));
    assert.ok(!recent.entries.some((e) => e.id === budget.id));
    // And deletes report what they removed
    assert.equal(await memory.deleteEntries("dark mode"), 1);
    assert.equal(await memory.deleteSession("chat-1"), 1);
    assert.equal(await memory.deleteProject("trip"), 1);
    assert.equal(await memory.deleteProject("trip"), 0);
    const single = await memory.addEntry("to be removed");
    assert.equal(await memory.deleteEntry(single.id), undefined);
    await assert.rejects(memory.getEntry(single.id), NotFound);
  });

  test("an Idempotency-Key given twice stores once", async () => {
    const memory = someone();
    const first = await memory.addEntry("Trip budget is 2000 EUR", { idempotencyKey: "once" });
    const again = await memory.addEntry("Trip budget is 2000 EUR", { idempotencyKey: "once" });
    assert.deepEqual(again, first);
    const session = await memory.addSession("s", ["a", "b"], { idempotencyKey: "session-once" });
    assert.deepEqual(await memory.addSession("s", ["a", "b"], { idempotencyKey: "session-once" }), session);
    assert.equal((await memory.listRecent()).entries.length, 3);
  });

  test("search answers in every mode, best first, with scores", async () => {
    const memory = someone();
    await memory.addSession("chat", ["My dog is called Pixel", "I prefer dark mode", "The car is blue"]);
    const capabilities = await client.capabilities();
    assert.deepEqual(capabilities.search_modes, ["keyword", "semantic", "hybrid"]);
    for (const mode of capabilities.search_modes) {
      const hits = await memory.search("dog Pixel", { mode, topK: 3 });
      assert.ok(hits.length >= 1, mode);
      assert.equal(text(hits[0]), "My dog is called Pixel", mode);
      assert.ok(hits.every((hit) => typeof hit.score === "number" && hit.score >= 0 && hit.score <= 1), mode);
    }
    assert.deepEqual((await memory.search("dog", { mode: "keyword" })).map(text), ["My dog is called Pixel"]);
    assert.equal((await memory.search("dog Pixel", { mode: "hybrid", topK: 1 })).length, 1);
    assert.deepEqual(await memory.search("dog", { mode: "keyword", minScore: 1 }), []);
    await memory.addEntry("The dog sitter comes on Monday", { projectId: "home" });
    assert.equal((await memory.search("sitter", { mode: "keyword", projectId: "home" })).length, 1);
    assert.deepEqual(await memory.search("sitter", { mode: "keyword" }), []);
  });

  test("filters narrow search, query and deletes", async () => {
    const memory = someone();
    await memory.addEntry("lunch at noon", { metadata: { channel: "chat", priority: 1 } });
    await memory.addEntry("lunch on friday", { metadata: { channel: "email", priority: 5 } });
    await memory.addEntry("lunch with Bob", { metadata: { channel: "chat", priority: 9 } });
    const where = { channel: "chat" };
    assert.deepEqual((await memory.search("lunch", { mode: "keyword", where })).map(text).sort(), ["lunch at noon", "lunch with Bob"]);
    // `filter` is the API's own name for `where`
    const urgent = { priority: { $gte: 5 } };
    assert.deepEqual((await memory.search("lunch", { mode: "keyword", filter: urgent })).map(text).sort(), ["lunch on friday", "lunch with Bob"]);
    await assert.rejects(memory.search("lunch", { where, filter: urgent }), TypeError);
    const page = await memory.query({ channel: "chat", priority: { $lt: 5 } });
    assert.deepEqual(page.entries.map(text), ["lunch at noon"]);
    const all = [];
    for await (const entry of memory.iterQuery(where, { pageSize: 1 })) all.push(text(entry));
    assert.deepEqual(all, ["lunch with Bob", "lunch at noon"]);
    assert.equal(await memory.deleteEntries(undefined, { where: { channel: "email" } }), 1);
    assert.equal(await memory.deleteEntries("lunch", { where: { priority: 9 } }), 1);
    assert.deepEqual((await memory.listRecent()).entries.map(text), ["lunch at noon"]);
  });

  test("an entry is corrected in place and its history read", async () => {
    const memory = someone("fix");
    // Given an entry in a project
    const entry = await memory.addEntry("I live in Paris", { projectId: "home", metadata: { kind: "address" } });
    assert.equal(entry.revision, 1);
    // When its text is corrected at its revision, then its metadata removed
    const fixed = await memory.update(entry.id, "I live in Lyon", { revision: 1, projectId: "home" });
    assert.deepEqual([fixed.id, fixed.revision, fixed.metadata], [entry.id, 2, { kind: "address" }]);
    const cleared = await memory.update(entry.id, undefined, { metadata: null });
    assert.deepEqual([cleared.revision, cleared.metadata, text(cleared)], [3, {}, "I live in Lyon"]);
    // Then search finds the new words only, and the history holds every version, oldest first
    assert.deepEqual(await memory.search("Paris", { projectId: "home", mode: "keyword" }), []);
    assert.deepEqual((await memory.search("Lyon", { projectId: "home", mode: "keyword" })).map((e) => e.id), [entry.id]);
    const versions = await memory.memoryHistory(entry.id);
    assert.deepEqual(versions.map((v) => [v.revision, text(v)]), [[1, "I live in Paris"], [2, "I live in Lyon"], [3, "I live in Lyon"]]);
    assert.equal(versions[0].valid_to, fixed.updated_at);
    assert.equal(versions[2].valid_to, null);
    // And a stale revision is a Conflict with the API's code, changing nothing
    await assert.rejects(memory.update(entry.id, "I live in Nice", { revision: 1 }), (error) => {
      assert.ok(error instanceof Conflict);
      assert.equal(error.code, "revision_conflict");
      return true;
    });
    assert.equal((await memory.getEntry(entry.id)).revision, 3);
    // And a deleted entry has no history
    await memory.deleteEntry(entry.id);
    await assert.rejects(memory.memoryHistory(entry.id), NotFound);
  });

  test("entries expire after ttlSeconds or at expiresAt", async () => {
    const memory = someone();
    const brief = await memory.addEntry("a passing thought", { ttlSeconds: 1 });
    const lasting = await memory.addEntry("a lasting thought", { ttlSeconds: 3600 });
    const dated = await memory.addEntry("a dated thought", { expiresAt: new Date(Date.now() + 1000) });
    const session = await memory.addSession("s", ["a session thought"], { ttlSeconds: 1 });
    assert.equal(session.stored, 1);
    assert.ok(Date.parse(brief.expires_at) > Date.now());
    assert.ok(Date.parse(lasting.expires_at) - Date.now() > 3500 * 1000);
    assert.ok(dated.expires_at.endsWith("Z"));
    await new Promise((wait) => setTimeout(wait, 1300));
    await assert.rejects(memory.getEntry(brief.id), NotFound);
    await assert.rejects(memory.getEntry(dated.id), NotFound);
    assert.deepEqual((await memory.listRecent()).entries.map((e) => e.id), [lasting.id]);
    assert.deepEqual((await memory.search("thought", { mode: "keyword" })).map(text), ["a lasting thought"]);
  });

  test("the iterator follows cursors through every entry", async () => {
    const memory = someone();
    await memory.addSession("s", ["one", "two", "three", "four", "five"].map((word) => `entry ${word}`));
    const first = await memory.listRecent({ limit: 2 });
    assert.equal(first.entries.length, 2);
    assert.equal(typeof first.next_cursor, "string");
    const second = await memory.listRecent({ limit: 2, cursor: first.next_cursor });
    assert.equal(second.entries.length, 2);
    const seen = [];
    for await (const entry of memory.iterEntries({ pageSize: 2 })) seen.push(entry.id);
    assert.equal(seen.length, 5);
    assert.equal(new Set(seen).size, 5);
    assert.deepEqual(seen.slice(0, 4), [...first.entries, ...second.entries].map((e) => e.id));
  });
});

describe("knowledge graph", () => {
  test("every graph call", async () => {
    const memory = someone("graph");
    // Entities and relations
    const [alice, pixel] = await memory.createEntities([
      { name: "Alice", entity_type: "person", observations: ["lives in Lyon"] },
      { name: "Pixel", entity_type: "dog" },
    ]);
    assert.equal(alice.entity_type, "person");
    assert.deepEqual(alice.observations.map((o) => o.content), ["lives in Lyon"]);
    assert.equal(pixel.name, "Pixel");
    const [owns] = await memory.createRelations([{ source: "Alice", relation_type: "owns", target: "Pixel" }]);
    assert.deepEqual([owns.source, owns.relation_type, owns.target], ["Alice", "owns", "Pixel"]);
    // Observations over time
    const [beach] = await memory.addObservations("Pixel", ["likes the beach"], { validFrom: new Date("2026-01-01T00:00:00Z") });
    assert.ok(beach.valid_from.startsWith("2026-01-01T00:00:00"));
    const lyon = alice.observations[0];
    const superseded = await memory.supersedeObservation(lyon.id, "lives in Paris");
    assert.equal(superseded.invalidated.id, lyon.id);
    assert.equal(superseded.created.content, "lives in Paris");
    const history = await memory.history("Alice");
    assert.deepEqual(history.observations.map((o) => o.content).sort(), ["lives in Lyon", "lives in Paris"]);
    assert.equal(history.relations.length, 1);
    const invalidated = await memory.invalidateObservation(beach.id, { validTo: "2026-06-01T00:00:00Z" });
    assert.ok(invalidated.valid_to.startsWith("2026-06-01T00:00:00"));
    // Reads
    const hits = await memory.searchNodes("Paris", { limit: 5 });
    assert.deepEqual(hits.map((hit) => hit.entity.name), ["Alice"]);
    const nodes = await memory.openNodes(["Alice", "Pixel"]);
    assert.deepEqual(nodes.entities.map((e) => e.name).sort(), ["Alice", "Pixel"]);
    assert.equal(nodes.relations.length, 1);
    const graph = await memory.readGraph();
    assert.equal(graph.entities.length, 2);
    const before = await memory.readGraph({ asOf: new Date("2025-01-01T00:00:00Z") });
    assert.ok(before.entities.every((e) => e.observations.length === 0));
    assert.match(await memory.profileCard({ maxEntities: 5, maxObservations: 3 }), /lives in Paris/);
    // The agent tools
    const remembered = await memory.remember("Bob", ["plays chess"], { entityType: "person" });
    assert.deepEqual(remembered, { stored: true, entity: "Bob", facts_added: 1 });
    const related = await memory.relate("Alice", "knows", "Bob");
    assert.deepEqual(related, { related: true, source: "Alice", relation: "knows", target: "Bob" });
    // Episodes
    assert.equal(await memory.addEpisodes("chat-9", ["We talked about chess", "Bob won twice"]), 2);
    assert.deepEqual((await memory.listEpisodes({ sessionId: "chat-9" })).map((e) => e.text).sort(), ["Bob won twice", "We talked about chess"]);
    assert.equal((await memory.listEpisodes({ query: "chess", limit: 1 }))[0].text, "We talked about chess");
    // Deletes
    const knows = (await memory.history("Bob")).relations.find((r) => r.relation_type === "knows");
    const closed = await memory.invalidateRelation(knows.id, { validTo: new Date() });
    assert.equal(closed.id, knows.id);
    assert.notEqual(closed.valid_to, null);
    assert.equal(await memory.deleteRelation(knows.id), undefined);
    assert.equal(await memory.deleteObservation(beach.id), undefined);
    assert.equal(await memory.deleteEntity("Bob"), undefined);
    await assert.rejects(memory.history("Bob"), NotFound);
    await assert.rejects(memory.addObservations("Nobody", ["x"]), NotFound);
    // Scoped by project
    await memory.remember("Trip", ["to Rome"], { projectId: "p1" });
    assert.deepEqual((await memory.searchNodes("Rome", { projectId: "p1" })).map((h) => h.entity.name), ["Trip"]);
    assert.deepEqual(await memory.searchNodes("Rome"), []);
  });
});

describe("erasure, export, MCP and service routes", () => {
  test("export pages, then the user is erased", async () => {
    const memory = someone("erase");
    await memory.addSession("s", ["I like tea"]);
    await memory.remember("Tea", ["green"]);
    const pages = [];
    for await (const page of memory.export()) pages.push(page);
    assert.equal(pages.length, 1);
    assert.deepEqual(pages[0].entries.map(text), ["I like tea"]);
    assert.deepEqual(pages[0].graph.entities.map((e) => e.name), ["Tea"]);
    assert.equal(pages[0].next_cursor, null);
    const started = await memory.deleteUser();
    assert.equal(typeof started.deletion_id, "string");
    let status = await memory.deletionStatus(started.deletion_id);
    for (const deadline = Date.now() + 20_000; status.status === "RUNNING" && Date.now() < deadline; ) {
      await new Promise((wait) => setTimeout(wait, 100));
      status = await memory.deletionStatus(started.deletion_id);
    }
    assert.equal(status.status, "SUCCEEDED");
    assert.equal(status.deleted.entries, 1);
    assert.deepEqual((await memory.listRecent()).entries, []);
  });

  test("the MCP endpoint answers JSON-RPC", async () => {
    const memory = someone("mcp");
    const listed = await memory.mcp({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    assert.equal(listed.id, 1);
    assert.ok(listed.result.tools.some((tool) => tool.name === "create_entities"));
    const called = await memory.mcp({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "create_entities", arguments: { entities: [{ name: "Zed", entityType: "cat", observations: ["naps"] }] } },
    });
    assert.equal(called.result.isError ?? false, false);
    assert.equal((await memory.history("Zed")).entity_type, "cat");
    assert.equal(await memory.mcp({ jsonrpc: "2.0", method: "notifications/initialized" }), undefined);
  });

  test("health, capabilities, openapi, usage and any request", async () => {
    assert.equal((await client.health()).status, "ok");
    assert.equal((await client.capabilities()).graph, true);
    assert.equal((await client.openapi()).openapi.startsWith("3."), true);
    const usage = await client.usage("ts-app", { days: 2 });
    assert.equal(usage.app, "ts-app");
    assert.ok(usage.days.length >= 1 && usage.days[0].requests > 0);
    const memory = someone();
    await memory.addEntry("raw request");
    const path = `/v1/apps/${segment(memory.app)}/users/${segment(memory.user)}/memories`;
    const page = await client.request("GET", path, { query: { limit: 1 } });
    assert.deepEqual(page.entries.map(text), ["raw request"]);
  });
});

describe("an app's users", () => {
  test("are listed page by page with their entry counts and last write", async () => {
    const app = `ts-users-${randomUUID().slice(0, 8)}`;
    // Given two users of the app, one with entries in two scopes, and a user of another app
    await client.user(app, "ana").addEntry("likes tea");
    await client.user(app, "ana").addEntry("works on boats", { projectId: "work" });
    await client.user(app, "bob").addEntry("plays chess");
    await client.user(`${app}-other`, "eve").addEntry("not of this app");
    // When a page of one is read / Then it holds the first user, with a cursor to the next
    const first = await client.listUsers(app, { limit: 1 });
    assert.deepEqual(first.users.map((u) => [u.user_id, u.entries]), [["ana", 2]]);
    assert.ok(first.users[0].last_write_at);
    assert.equal(first.next_cursor, "ana");
    // And iterating follows every cursor to every user once
    const every = [];
    for await (const user of client.iterUsers(app, { pageSize: 1 })) every.push(user.user_id);
    assert.deepEqual(every, ["ana", "bob"]);
    // And a bad limit is the library's error
    await assert.rejects(client.listUsers(app, { limit: 0 }), InvalidInput);
  });
});

describe("the store (LangGraph's BaseStore over HTTP)", () => {
  test("a batch puts, gets, searches and lists in one round trip; reads see it before its writes", async () => {
    const user = `store-${randomUUID()}`;
    const put = (namespace, key, value) => ({ op: "put", user, namespace, key, value });
    const [before, none] = await client.storeBatch("ts-app", [
      { op: "get", user, namespace: ["prefs"], key: "theme" },
      put(["prefs"], "theme", { content: "prefers dark mode", n: 2 }),
    ]);
    assert.equal(before, null);
    assert.equal(none, null);
    await client.storeBatch("ts-app", [put(["pets"], "dog", { content: "the dog is called Pixel", n: 5 })]);
    const [got, filtered, ranked, spaces] = await client.storeBatch("ts-app", [
      { op: "get", user, namespace: ["prefs"], key: "theme" },
      { op: "search", user, namespace_prefix: [], filter: { n: { $gt: 3 } } },
      { op: "search", user, namespace_prefix: [], query: "what is the dog called", limit: 1 },
      { op: "list_namespaces", user },
    ]);
    assert.deepEqual(got.value, { content: "prefers dark mode", n: 2 });
    assert.deepEqual(filtered.map((item) => item.key), ["dog"]);
    assert.equal(ranked[0].key, "dog");
    assert.ok(ranked[0].score > 0);
    assert.deepEqual(spaces, [["pets"], ["prefs"]]);
    const [page] = await client.user("ts-app", user).export().next().then((step) => [step.value]);
    assert.deepEqual(page.store.map((item) => item.key).sort(), ["dog", "theme"]);
    await assert.rejects(
      client.storeBatch("ts-app", [{ op: "search", user, namespace_prefix: [], filter: { a: { b: 1 } } }]),
      (error) => error instanceof InvalidInput && error.code === "invalid_filter",
    );
  });
});

describe("errors and encoding", () => {
  test("errors are classes carrying status, code and request id", async () => {
    const memory = someone();
    const missing = await memory.getEntry("no-such-entry").catch((error) => error);
    assert.ok(missing instanceof NotFound && missing instanceof MemoryApiError && missing instanceof Error);
    assert.equal(missing.name, "NotFound");
    assert.equal(missing.status, 404);
    assert.equal(missing.code, "not_found");
    assert.match(missing.requestId, /^[0-9a-f-]{36}$/);
    assert.match(missing.message, /no-such-entry/);
    const invalid = await memory.search("x", { topK: 500 }).catch((error) => error);
    assert.ok(invalid instanceof InvalidInput);
    assert.equal(invalid.status, 422);
    assert.equal(invalid.code, "invalid_input");
    assert.equal(typeof invalid.requestId, "string");
    assert.deepEqual(invalid.details.map((d) => d.location), ["top_k"]);
    const neither = await memory.deleteEntries().catch((error) => error);
    assert.ok(neither instanceof MalformedRequest, String(neither));
    assert.equal(neither.status, 400);
    const route = await client.request("GET", "/v1/nowhere").catch((error) => error);
    assert.ok(route instanceof NotFound);
    assert.equal(route.code, "route_not_found");
  });

  test("ids are percent-encoded path segments", async () => {
    const memory = client.user("ts app/ü", `a/b?c#d%e ${randomUUID()}`);
    const stored = await memory.addSession("s/1?x", ["slashes and more"]);
    assert.equal(stored.session_id, "s/1?x");
    const [entry] = (await memory.listRecent()).entries;
    assert.equal(entry.session_id, "s/1?x");
    assert.deepEqual(await memory.getEntry(entry.id), entry);
    // another user whose id is a prefix sees nothing
    assert.deepEqual((await client.user("ts app/ü", "a").listRecent()).entries, []);
    await memory.createEntities([{ name: "A/B (c)", observations: ["odd name"] }]);
    assert.equal((await memory.history("A/B (c)")).name, "A/B (c)");
    assert.equal(await memory.deleteSession("s/1?x"), 1);
    assert.equal(segment("a/b"), "a%2Fb");
    assert.equal(segment("it's (x)*!"), "it%27s%20%28x%29%2A%21");
    await assert.rejects(client.user("app", "..").listRecent(), TypeError);
  });
});
