// The client held to the server's own OpenAPI document (`GET /v1/openapi.json` of the real server):
// every operation there has a client method (the route table, src/routes.ts), every row of the table
// is an operation with the same query parameters and body schemas, and the body types the client
// builds and reads (src/types.ts) name only fields those schemas have. A route added to the API
// without a client method fails here, by design.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";

import ts from "typescript";

import { MemoryClient, ROUTES, UserClient } from "@agentmem/client";
import { startServer } from "./server.mjs";

const TYPES = new URL("../src/types.ts", import.meta.url);
const METHODS = ["get", "put", "post", "delete", "patch"];

let server;
let doc;

before(async () => {
  server = await startServer();
  doc = await new MemoryClient(server.url).openapi();
});
after(() => server?.stop());

// -- reading the two sides --------------------------------------------------------------------------

const rows = Object.entries(ROUTES).map(([name, spec]) => ({ name, ...spec }));

function operations(document) {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method: method.toUpperCase(), path, operation: item[method] })),
  );
}

const refName = (schema) => schema?.$ref?.split("/").at(-1);
const refsOf = (schema) => [refName(schema), refName(schema?.items), ...(schema?.anyOf ?? []).flatMap(refsOf)].filter(Boolean);

function bodySchemas(operation) {
  const request = refName(operation.requestBody?.content?.["application/json"]?.schema);
  const success = Object.entries(operation.responses).find(([status]) => status.startsWith("2"))?.[1];
  return { request, response: refName(success?.content?.["application/json"]?.schema) };
}

/** The interfaces of src/types.ts: their fields, which are optional, and each field's type as written. */
function interfaces() {
  const source = ts.createSourceFile("types.ts", readFileSync(TYPES, "utf8"), ts.ScriptTarget.Latest, true);
  const found = new Map();
  for (const statement of source.statements) {
    if (!ts.isInterfaceDeclaration(statement)) continue;
    const fields = statement.members.filter(ts.isPropertySignature).map((member) => ({
      name: member.name.getText(source),
      optional: member.questionToken !== undefined,
      type: member.type?.getText(source) ?? "",
    }));
    found.set(statement.name.text, fields);
  }
  return found;
}

// -- the checks (pure, so that they can be shown to fail) -----------------------------------------

/** The operations of the document that no row of the table calls. */
function uncovered(document) {
  return operations(document)
    .filter(({ method, path }) => !rows.some((row) => row.method === method && row.path === path))
    .map(({ method, path }) => `${method} ${path}`);
}

/** What is wrong with the rows of the table, against the document. */
function rowProblems(document) {
  const problems = [];
  for (const row of rows) {
    const owner = row.on === "user" ? UserClient.prototype : MemoryClient.prototype;
    if (typeof owner[row.name] !== "function") problems.push(`${row.name}: no such method on the ${row.on} client`);
    const operation = document.paths[row.path]?.[row.method.toLowerCase()];
    if (row.inOpenApi === false) continue;
    if (!operation) {
      problems.push(`${row.name}: ${row.method} ${row.path} is not in the OpenAPI document`);
      continue;
    }
    const parameters = operation.parameters ?? [];
    const query = new Set(parameters.filter((p) => p.in === "query").map((p) => p.name));
    for (const name of row.query ?? []) if (!query.has(name)) problems.push(`${row.name}: no query parameter ${name}`);
    const inPath = parameters.filter((p) => p.in === "path").map((p) => p.name).sort();
    const placeholders = [...row.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
    if (String(inPath) !== String(placeholders)) problems.push(`${row.name}: path parameters ${placeholders} vs ${inPath}`);
    const schemas = bodySchemas(operation);
    if (schemas.request !== row.request) problems.push(`${row.name}: request schema ${row.request} vs ${schemas.request}`);
    if (schemas.response !== row.response) problems.push(`${row.name}: response schema ${row.response} vs ${schemas.response}`);
  }
  return problems;
}

/** What is wrong with the interfaces of src/types.ts named like a schema of the document. */
function typeProblems(document, types) {
  const problems = [];
  const schemas = document.components.schemas;
  for (const [name, fields] of types) {
    const schema = schemas[name];
    if (!schema?.properties) continue; // not a schema of the document, or one without fields (Part)
    const required = new Set(schema.required ?? []);
    for (const field of fields) {
      const property = schema.properties[field.name];
      if (!property) {
        problems.push(`${name}.${field.name}: not a field of the schema`);
        continue;
      }
      if (field.optional === required.has(field.name)) {
        problems.push(`${name}.${field.name}: ${field.optional ? "optional" : "required"} here, not in the schema`);
      }
      for (const ref of refsOf(property)) {
        if (!new RegExp(`\\b${ref}\\b`).test(field.type)) problems.push(`${name}.${field.name}: typed ${field.type}, the schema says ${ref}`);
      }
    }
    for (const field of required) {
      if (!fields.some((f) => f.name === field)) problems.push(`${name}.${field}: required by the schema, missing here`);
    }
  }
  return problems;
}

// -- the tests --------------------------------------------------------------------------------------

test("every operation of the OpenAPI document has a client method", () => {
  assert.ok(operations(doc).length >= 35, "the document lists the API's operations");
  assert.deepEqual(uncovered(doc), [], "routes without a client method: add a method and its row to src/routes.ts");
});

test("every row of the route table is an operation, with its parameters and body schemas", () => {
  assert.deepEqual(rowProblems(doc), []);
  // only routes docs/api.md documents outside the OpenAPI document are exempt
  assert.deepEqual(rows.filter((row) => row.inOpenApi === false).map((row) => row.name), ["mcp"]);
});

test("the body types name only fields of the schemas, required as the schemas require", () => {
  const types = interfaces();
  const checked = [...types.keys()].filter((name) => doc.components.schemas[name]?.properties);
  assert.ok(checked.length >= 45, `checked ${checked.length} types`);
  assert.deepEqual(typeProblems(doc, types), []);
  // and every schema a row names is one of them, under its own name
  const named = new Set(types.get("Schemas").map((field) => field.name));
  for (const field of types.get("Schemas")) assert.equal(field.type, field.name);
  for (const row of rows) {
    for (const schema of [row.request, row.response].filter(Boolean)) {
      assert.ok(named.has(schema), `${row.name}: ${schema}`);
      if (row.inOpenApi !== false) assert.ok(checked.includes(schema), `${row.name}: ${schema} is not checked`);
    }
  }
});

test("the checks fail on a route, a parameter or a field the client does not know", () => {
  const changed = structuredClone(doc);
  const added = (problems, before) => problems.filter((problem) => !before.includes(problem));
  changed.paths["/v1/apps/{app}/users/{user}/store/items"] = { put: { parameters: [], responses: {} } };
  assert.deepEqual(added(uncovered(changed), uncovered(doc)), ["PUT /v1/apps/{app}/users/{user}/store/items"]);
  delete changed.paths["/v1/apps/{app}/users/{user}/graph/search"].get.parameters.find((p) => p.name === "q").in;
  assert.deepEqual(added(rowProblems(changed), rowProblems(doc)), ["searchNodes: no query parameter q"]);
  delete changed.components.schemas.Entry.properties.score;
  changed.components.schemas.SearchRequest.required.push("mode");
  assert.deepEqual(added(typeProblems(changed, interfaces()), typeProblems(doc, interfaces())), [
    "Entry.score: not a field of the schema",
    "SearchRequest.mode: optional here, not in the schema",
  ]);
});
