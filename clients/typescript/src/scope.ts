/** What every call of a user's routes shares: the user's scope, the transport, and how entries and times are sent. */
import type { Transport } from "./http.js";
import type { PathOf, ResponseOf, RouteCall, UserRoute } from "./routes.js";
import type { MemoryEntry, Moment } from "./types.js";

/** Options of every call: the project scope (absent: the user's global scope). */
export interface Scoped {
  projectId?: string | undefined;
}

/** Options of every write: also the `Idempotency-Key` to send (default: a fresh one per call). */
export interface Write extends Scoped {
  idempotencyKey?: string | undefined;
}

/** An entry to store: a plain string (stored as the user's text) or an ADK MemoryEntry. */
export type EntryLike = string | MemoryEntry;

export function asEntry(entry: EntryLike): MemoryEntry {
  if (typeof entry === "string") return { content: { role: "user", parts: [{ text: entry }] }, author: "user" };
  return { ...entry };
}

/** A moment as the API reads it: RFC 3339 in UTC. */
export function timestamp(value: Moment | undefined): string | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

/** The params of a user route beyond the scope's `app` and `user`. */
export type Params<N extends UserRoute> = Omit<PathOf<N>, "app" | "user">;

export abstract class UserScope {
  readonly app: string;
  readonly user: string;
  protected readonly transport: Transport;

  constructor(transport: Transport, app: string, user: string) {
    this.transport = transport;
    this.app = app;
    this.user = user;
  }

  /** Call one of the user's routes: its decoded answer, typed by the route's response schema. */
  protected call<N extends UserRoute>(name: N, params: Params<N>, call: RouteCall<N> = {}): Promise<ResponseOf<N>> {
    const path = { ...params, app: this.app, user: this.user } as PathOf<N>;
    return this.transport.route(name, path, call);
  }
}

/** Every page of a listing, following `next_cursor` from the first page to the last. */
export async function* pages<P extends { next_cursor?: string | null | undefined }>(
  page: (cursor: string | undefined) => Promise<P>,
): AsyncGenerator<P, void, undefined> {
  let cursor: string | undefined;
  do {
    const current = await page(cursor);
    yield current;
    cursor = current.next_cursor ?? undefined;
  } while (cursor !== undefined);
}
