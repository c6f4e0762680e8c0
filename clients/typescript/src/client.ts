/**
 * The client: `new MemoryClient(baseUrl, { apiKey })`, the service routes, any request at all, and
 * `.user(app, user)` for the memory of one user.
 */
import { Transport, type TransportOptions } from "./http.js";
import type { QueryValue } from "./routes.js";
import { pages } from "./scope.js";
import type {
  AppUserOut,
  AppUsers,
  Capabilities,
  ExtractionIn,
  ExtractionJobs,
  ExtractionOut,
  Health,
  StoreOp,
  StoreResult,
  Usage,
} from "./types.js";
import { UserClient } from "./user.js";

export type MemoryClientOptions = TransportOptions;

export interface RequestOptions {
  body?: unknown;
  query?: Readonly<Record<string, QueryValue>> | undefined;
  idempotencyKey?: string | undefined;
}

export class MemoryClient {
  readonly transport: Transport;

  constructor(baseUrl = "http://127.0.0.1:8000", options: MemoryClientOptions = {}) {
    this.transport = new Transport(baseUrl, options);
  }

  get baseUrl(): string {
    return this.transport.baseUrl;
  }

  /** The memory of one user of one app. */
  user(app: string, user: string): UserClient {
    return new UserClient(this.transport, app, user);
  }

  /**
   * Send one request, `path` already percent-encoded (e.g. from `segment(id)`): the decoded JSON answer,
   * undefined when it has no body. Errors and retries are those of every call.
   */
  request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    return this.transport.send({ method, path, ...options });
  }

  health(): Promise<Health> {
    return this.transport.route("health", {});
  }

  /** What this deployment supports (search modes, `relevance_threshold`, ...). */
  capabilities(): Promise<Capabilities> {
    return this.transport.route("capabilities", {});
  }

  /** The OpenAPI document of the API. */
  async openapi(): Promise<Record<string, unknown>> {
    return (await this.transport.route("openapi", {})) as Record<string, unknown>;
  }

  /** The caller's own app's metering per UTC day (`days` back, default 31): `{ app, days: [...] }`. */
  usage(app: string, options: { days?: number | undefined } = {}): Promise<Usage> {
    return this.transport.route("usage", { app }, { query: { days: options.days ?? 31 } });
  }

  /** One page of `app`'s users in key order, with their entry counts and last write: `{ users, next_cursor }`. */
  listUsers(app: string, options: { limit?: number | undefined; cursor?: string | null | undefined } = {}): Promise<AppUsers> {
    return this.transport.route("listUsers", { app }, { query: { limit: options.limit ?? 20, cursor: options.cursor } });
  }

  /** Every user of `app`, page after page: `for await (const user of client.iterUsers("my-app"))`. */
  async *iterUsers(app: string, options: { pageSize?: number | undefined } = {}): AsyncGenerator<AppUserOut, void, undefined> {
    const limit = options.pageSize ?? 100;
    for await (const page of pages((cursor) => this.listUsers(app, { limit, cursor }))) {
      yield* page.users;
    }
  }

  /** What `app` learns from its conversations (docs/extraction.md): strategies, triggers, budget and state. */
  getExtraction(app: string): Promise<ExtractionOut> {
    return this.transport.route("getExtraction", { app });
  }

  /** Set what `app` learns: its strategies (replaced whole), triggers and monthly token budget. */
  putExtraction(app: string, config: ExtractionIn): Promise<ExtractionOut> {
    return this.transport.route("putExtraction", { app }, { body: config });
  }

  /** One page of `app`'s parked extraction jobs, oldest first, each with why it failed: `{ jobs, next_cursor }`. */
  listExtractionJobs(app: string, options: { limit?: number | undefined; cursor?: string | null | undefined } = {}): Promise<ExtractionJobs> {
    return this.transport.route("listExtractionJobs", { app }, { query: { limit: options.limit ?? 20, cursor: options.cursor ?? undefined } });
  }

  /**
   * Store operations (get, put, search, list_namespaces: LangGraph's store, docs/api.md "Store") for users
   * of `app`, in one round trip: a result per op, in order. The batch's reads see it before its writes.
   */
  async storeBatch(app: string, ops: StoreOp[]): Promise<StoreResult[]> {
    return (await this.transport.route("storeBatch", { app }, { body: { ops } })).results;
  }
}
