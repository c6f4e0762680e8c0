/**
 * Every route of the API (docs/api.md) and the client method that calls it: the one table the client
 * builds its requests from. test/openapi.test.mjs holds it to the server's `/v1/openapi.json`: each
 * operation there has a row here, each row's method and path exist there (`inOpenApi: false` marks a
 * route docs/api.md documents outside that document), its query parameters are the route's, and its
 * request and response schemas are the operation's.
 */
import type { Schemas } from "./types.js";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RouteSpec {
  /** The object whose method calls the route: a `UserClient` (`client.user(app, user)`) or the `MemoryClient`. */
  readonly on: "user" | "service";
  readonly method: HttpMethod;
  /** The path as `/v1/openapi.json` writes it, `{name}` for a percent-encoded segment. */
  readonly path: string;
  readonly query?: readonly string[];
  /** The schema of the JSON body sent, by name (types.ts). */
  readonly request?: keyof Schemas;
  /** The schema of the success body, by name (types.ts); none for 204 or an untyped document. */
  readonly response?: keyof Schemas;
  readonly inOpenApi?: false;
}

const SCOPE = "/v1/apps/{app}/users/{user}";

export const ROUTES = {
  // memory entries
  addSession: { on: "user", method: "PUT", path: `${SCOPE}/sessions/{session}/memories`, request: "PutSessionRequest", response: "SessionStored" },
  addEntry: { on: "user", method: "POST", path: `${SCOPE}/memories`, request: "AddEntryRequest", response: "Entry" },
  search: { on: "user", method: "POST", path: `${SCOPE}/memories/search`, request: "SearchRequest", response: "SearchResults" },
  listRecent: { on: "user", method: "GET", path: `${SCOPE}/memories`, query: ["project_id", "limit", "cursor"], response: "EntryPage" },
  query: { on: "user", method: "POST", path: `${SCOPE}/memories/query`, request: "QueryRequest", response: "EntryPage" },
  getEntry: { on: "user", method: "GET", path: `${SCOPE}/memories/{entry_id}`, response: "Entry" },
  update: { on: "user", method: "PATCH", path: `${SCOPE}/memories/{entry_id}`, request: "UpdateEntryRequest", response: "Entry" },
  memoryHistory: { on: "user", method: "GET", path: `${SCOPE}/memories/{entry_id}/history`, query: ["project_id"], response: "EntryHistory" },
  deleteEntry: { on: "user", method: "DELETE", path: `${SCOPE}/memories/{entry_id}` },
  deleteEntries: { on: "user", method: "POST", path: `${SCOPE}/memories/delete`, request: "DeleteByQueryRequest", response: "Deleted" },
  deleteSession: { on: "user", method: "DELETE", path: `${SCOPE}/sessions/{session}`, query: ["project_id"], response: "Deleted" },
  extractSession: { on: "user", method: "POST", path: `${SCOPE}/sessions/{session}/extract`, request: "ExtractSessionRequest", response: "ExtractionQueued" },
  deleteProject: { on: "user", method: "DELETE", path: `${SCOPE}/projects/{project}`, response: "Deleted" },
  // erasure and export
  deleteUser: { on: "user", method: "DELETE", path: SCOPE, response: "DeletionStarted" },
  deletionStatus: { on: "user", method: "GET", path: `${SCOPE}/deletions/{deletion_id}`, response: "DeletionStatus" },
  export: { on: "user", method: "GET", path: `${SCOPE}/export`, query: ["cursor"], response: "ExportPage" },
  projects: { on: "user", method: "GET", path: `${SCOPE}/projects`, query: ["cursor", "limit"], response: "Projects" },
  // knowledge graph
  createEntities: { on: "user", method: "POST", path: `${SCOPE}/graph/entities`, request: "CreateEntitiesRequest", response: "Entities" },
  deleteEntity: { on: "user", method: "DELETE", path: `${SCOPE}/graph/entities/{name}`, query: ["project_id"] },
  addObservations: { on: "user", method: "POST", path: `${SCOPE}/graph/entities/{name}/observations`, request: "AddObservationsRequest", response: "Observations" },
  history: { on: "user", method: "GET", path: `${SCOPE}/graph/entities/{name}/history`, query: ["project_id"], response: "EntityHistory" },
  invalidateObservation: { on: "user", method: "POST", path: `${SCOPE}/graph/observations/{obs_id}/invalidate`, request: "InvalidateRequest", response: "Observation" },
  supersedeObservation: { on: "user", method: "POST", path: `${SCOPE}/graph/observations/{obs_id}/supersede`, request: "SupersedeRequest", response: "Superseded" },
  deleteObservation: { on: "user", method: "DELETE", path: `${SCOPE}/graph/observations/{obs_id}`, query: ["project_id"] },
  createRelations: { on: "user", method: "POST", path: `${SCOPE}/graph/relations`, request: "CreateRelationsRequest", response: "Relations" },
  invalidateRelation: { on: "user", method: "POST", path: `${SCOPE}/graph/relations/{rel_id}/invalidate`, request: "InvalidateRequest", response: "Relation" },
  deleteRelation: { on: "user", method: "DELETE", path: `${SCOPE}/graph/relations/{rel_id}`, query: ["project_id"] },
  searchNodes: { on: "user", method: "GET", path: `${SCOPE}/graph/search`, query: ["q", "limit", "project_id"], response: "NodeHits" },
  openNodes: { on: "user", method: "GET", path: `${SCOPE}/graph/nodes`, query: ["name", "project_id"], response: "Subgraph" },
  readGraph: { on: "user", method: "GET", path: `${SCOPE}/graph`, query: ["as_of", "recorded_as_of", "cursor", "project_id"], response: "GraphPage" },
  profileCard: { on: "user", method: "GET", path: `${SCOPE}/graph/profile-card`, query: ["max_entities", "max_observations", "project_id"], response: "ProfileCard" },
  addEpisodes: { on: "user", method: "POST", path: `${SCOPE}/graph/episodes`, request: "AddEpisodesRequest", response: "Stored" },
  listEpisodes: { on: "user", method: "GET", path: `${SCOPE}/graph/episodes`, query: ["session_id", "q", "limit", "project_id"], response: "Episodes" },
  remember: { on: "user", method: "POST", path: `${SCOPE}/graph/tools/remember`, request: "RememberRequest", response: "Remembered" },
  relate: { on: "user", method: "POST", path: `${SCOPE}/graph/tools/relate`, request: "RelateRequest", response: "Related" },
  // MCP over Streamable HTTP: JSON-RPC in and out, documented in docs/api.md and docs/mcp.md only
  mcp: { on: "user", method: "POST", path: `${SCOPE}/mcp`, query: ["project_id"], request: "JsonRpcMessage", response: "JsonRpcMessage", inOpenApi: false },
  // service
  health: { on: "service", method: "GET", path: "/v1/health", response: "Health" },
  capabilities: { on: "service", method: "GET", path: "/v1/capabilities", response: "Capabilities" },
  openapi: { on: "service", method: "GET", path: "/v1/openapi.json" },
  usage: { on: "service", method: "GET", path: "/v1/apps/{app}/usage", query: ["days"], response: "Usage" },
  listUsers: { on: "service", method: "GET", path: "/v1/apps/{app}/users", query: ["cursor", "limit"], response: "AppUsers" },
  getExtraction: { on: "service", method: "GET", path: "/v1/apps/{app}/extraction", response: "ExtractionOut" },
  putExtraction: { on: "service", method: "PUT", path: "/v1/apps/{app}/extraction", request: "ExtractionIn", response: "ExtractionOut" },
  listExtractionJobs: { on: "service", method: "GET", path: "/v1/apps/{app}/extraction/jobs", query: ["limit", "cursor"], response: "ExtractionJobs" },
  storeBatch: { on: "service", method: "POST", path: "/v1/apps/{app}/store/batch", request: "StoreBatchRequest", response: "StoreBatchResults" },
} as const satisfies Record<string, RouteSpec>;

export type RouteName = keyof typeof ROUTES;
type Spec<N extends RouteName> = (typeof ROUTES)[N];
/** The routes called through a `UserClient`, under `/v1/apps/{app}/users/{user}`. */
export type UserRoute = { [N in RouteName]: Spec<N>["on"] extends "user" ? N : never }[RouteName];

/** A query parameter's value: absent (undefined or null) parameters are left out, a list repeats the name. */
export type QueryValue = string | number | boolean | readonly string[] | null | undefined;

/** One request as the transport sends it: `path` already percent-encoded. */
export interface HttpRequest {
  method: string;
  path: string;
  query?: Readonly<Record<string, QueryValue>> | undefined;
  body?: unknown;
  idempotencyKey?: string | undefined;
}

type Placeholders<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? Name | Placeholders<Rest> : never;

/** The path parameters of a route, by name (`{ app, user, entry_id }`). */
export type PathOf<N extends RouteName> = Record<Placeholders<Spec<N>["path"]>, string>;
export type QueryOf<N extends RouteName> = Spec<N> extends { query: readonly (infer K extends string)[] }
  ? { [P in K]?: QueryValue }
  : never;
export type RequestOf<N extends RouteName> = Spec<N> extends { request: infer S extends keyof Schemas } ? Schemas[S] : never;
export type ResponseOf<N extends RouteName> = Spec<N> extends { response: infer S extends keyof Schemas } ? Schemas[S] : unknown;

/** What a call of one route sends, beyond its path parameters. */
export interface RouteCall<N extends RouteName> {
  body?: RequestOf<N>;
  query?: QueryOf<N>;
  idempotencyKey?: string | undefined;
}

/** The request of one call of a route. */
export function routeRequest<N extends RouteName>(name: N, params: PathOf<N>, call: RouteCall<N> = {}): HttpRequest {
  return {
    method: ROUTES[name].method,
    path: expandPath(name, params),
    query: call.query,
    body: call.body,
    idempotencyKey: call.idempotencyKey,
  };
}

/** The route's path with its parameters percent-encoded (a user id `a/b` is sent as `a%2Fb`). */
export function expandPath<N extends RouteName>(name: N, params: PathOf<N>): string {
  const values: Record<string, string> = params;
  return ROUTES[name].path.replace(/\{([^}]+)\}/g, (_, key: string) => {
    const value = values[key];
    if (value === undefined) throw new TypeError(`${name}: the path parameter ${key} is missing`);
    return segment(value);
  });
}

/**
 * One path segment, percent-encoded as the Python client does (every character but letters, digits and
 * `-._~`). A segment `.` or `..` cannot be sent: fetch's URL parser resolves it (encoded or not), so the
 * request would reach another route; it is refused here instead.
 */
export function segment(value: string): string {
  if (value === "." || value === "..") {
    throw new TypeError(`the id ${JSON.stringify(value)} cannot be sent in a URL path: fetch resolves it as a dot segment`);
  }
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
