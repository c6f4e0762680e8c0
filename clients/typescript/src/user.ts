/**
 * The memory of one user of one app (`/v1/apps/{app}/users/{user}`): entries, search, filters, paging,
 * deletes, the knowledge graph (graph.ts), erasure, export and the MCP endpoint.
 */
import { UserGraph } from "./graph.js";
import { asEntry, pages, timestamp, type EntryLike, type Scoped, type Write } from "./scope.js";
import type {
  Content,
  DeletionStarted,
  DeletionStatus,
  Entry,
  EntryHistory,
  EntryPage,
  ExportPage,
  ExtractionQueued,
  Filter,
  JsonRpcMessage,
  Metadata,
  Moment,
  SearchMode,
  SessionStored,
  UpdateEntryRequest,
} from "./types.js";

export interface AddSessionOptions extends Write {
  /** Applied to the entries that have no `expires_at` of their own (1..315360000). */
  ttlSeconds?: number | undefined;
}

export interface AddEntryOptions extends AddSessionOptions {
  sessionId?: string | undefined;
  metadata?: Metadata | undefined;
  expiresAt?: Moment | undefined;
}

/** A filter document (docs/search.md), as `where` or under the API's own name `filter`. */
export interface Filtered {
  where?: Filter | undefined;
  filter?: Filter | undefined;
}

export interface SearchOptions extends Scoped, Filtered {
  /** 1..100 (default 10). */
  topK?: number | undefined;
  /** 0..1: leave out weaker hits. */
  minScore?: number | undefined;
  /** Default: the deployment's (`capabilities().default_search_mode`). */
  mode?: SearchMode | undefined;
}

export interface PageOptions extends Scoped {
  /** 1..100 (default 20). */
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface UpdateOptions extends Write {
  /** Replaces the entry's metadata; `null` removes it; left out, the metadata stays. */
  metadata?: Metadata | null | undefined;
  /** Only if the entry is still at this revision (else `Conflict` with code `revision_conflict`). */
  revision?: number | undefined;
}

export interface IterateOptions extends Scoped {
  /** Entries asked for per request (default 100). */
  pageSize?: number | undefined;
}

export class UserClient extends UserGraph {
  // -- memory entries -------------------------------------------------------------------------------

  /** Store a session's entries, replacing what the session held in that scope. */
  addSession(sessionId: string, entries: readonly EntryLike[], options: AddSessionOptions = {}): Promise<SessionStored> {
    const body = { entries: entries.map(asEntry), project_id: options.projectId, ttl_seconds: options.ttlSeconds };
    return this.call("addSession", { session: sessionId }, { body, idempotencyKey: options.idempotencyKey });
  }

  /** Store one entry (`metadata` and `expiresAt` are set on it): the stored entry. */
  addEntry(entry: EntryLike, options: AddEntryOptions = {}): Promise<Entry> {
    const stored = asEntry(entry);
    if (options.metadata !== undefined) stored.metadata = options.metadata;
    if (options.expiresAt !== undefined) stored.expires_at = timestamp(options.expiresAt);
    const body = {
      entry: stored,
      project_id: options.projectId,
      session_id: options.sessionId,
      ttl_seconds: options.ttlSeconds,
    };
    return this.call("addEntry", {}, { body, idempotencyKey: options.idempotencyKey });
  }

  /** The entries best matching `query` (and the filter), best first, each with its `score`. */
  async search(query: string, options: SearchOptions = {}): Promise<Entry[]> {
    const body = {
      query,
      top_k: options.topK,
      min_score: options.minScore,
      project_id: options.projectId,
      mode: options.mode,
      filter: filterOf(options),
    };
    return (await this.call("search", {}, { body })).entries;
  }

  /** One page of entries, newest first: `{ entries, next_cursor }`. */
  listRecent(options: PageOptions = {}): Promise<EntryPage> {
    return this.call("listRecent", {}, { query: { project_id: options.projectId, limit: options.limit, cursor: options.cursor } });
  }

  /** Every visible entry, newest first, page after page: `for await (const entry of memory.iterEntries())`. */
  async *iterEntries(options: IterateOptions = {}): AsyncGenerator<Entry, void, undefined> {
    const limit = options.pageSize ?? 100;
    for await (const page of pages((cursor) => this.listRecent({ projectId: options.projectId, limit, cursor }))) {
      yield* page.entries;
    }
  }

  /** One page of the entries matching the filter, newest first: `{ entries, next_cursor }`. */
  query(where: Filter, options: PageOptions = {}): Promise<EntryPage> {
    const body = { filter: where, project_id: options.projectId, limit: options.limit, cursor: options.cursor };
    return this.call("query", {}, { body });
  }

  /** Every entry matching the filter, newest first, page after page. */
  async *iterQuery(where: Filter, options: IterateOptions = {}): AsyncGenerator<Entry, void, undefined> {
    const limit = options.pageSize ?? 100;
    for await (const page of pages((cursor) => this.query(where, { projectId: options.projectId, limit, cursor }))) {
      yield* page.entries;
    }
  }

  getEntry(entryId: string): Promise<Entry> {
    return this.call("getEntry", { entry_id: entryId });
  }

  /**
   * Correct an entry in place (mem0's `update`): new text (or content), new metadata, or both. The entry as
   * stored: same id, its `revision` one more; the version it replaces stays in `memoryHistory`.
   */
  update(entryId: string, textOrContent?: string | Content, options: UpdateOptions = {}): Promise<Entry> {
    const content = typeof textOrContent === "string" ? { role: "user", parts: [{ text: textOrContent }] } : textOrContent;
    const body: UpdateEntryRequest = { content, revision: options.revision, project_id: options.projectId };
    if (options.metadata !== undefined) body.metadata = options.metadata;
    return this.call("update", { entry_id: entryId }, { body, idempotencyKey: options.idempotencyKey });
  }

  /** The entry's versions, oldest first, the current one last (mem0's `history`; `history` is an entity's). */
  async memoryHistory(entryId: string, options: Scoped = {}): Promise<EntryHistory["versions"]> {
    return (await this.call("memoryHistory", { entry_id: entryId }, { query: { project_id: options.projectId } })).versions;
  }

  async deleteEntry(entryId: string, options: Pick<Write, "idempotencyKey"> = {}): Promise<void> {
    await this.call("deleteEntry", { entry_id: entryId }, { idempotencyKey: options.idempotencyKey });
  }

  /** Delete the entries of exactly this scope holding every word of `query` and matching the filter: how many. */
  async deleteEntries(query?: string, options: Write & Filtered = {}): Promise<number> {
    const body = { query, filter: filterOf(options), project_id: options.projectId };
    return (await this.call("deleteEntries", {}, { body, idempotencyKey: options.idempotencyKey })).deleted;
  }

  /** Delete a session's entries: how many. */
  async deleteSession(sessionId: string, options: Write = {}): Promise<number> {
    const call = { query: { project_id: options.projectId }, idempotencyKey: options.idempotencyKey };
    return (await this.call("deleteSession", { session: sessionId }, call)).deleted;
  }

  /** Learn from a session now (docs/extraction.md): `{ session_id, status: "queued" | "off" }`. */
  extractSession(sessionId: string, options: Pick<Write, "projectId"> = {}): Promise<ExtractionQueued> {
    return this.call("extractSession", { session: sessionId }, { body: { project_id: options.projectId } });
  }

  /** Delete a project's entries: how many. */
  async deleteProject(projectId: string, options: Pick<Write, "idempotencyKey"> = {}): Promise<number> {
    return (await this.call("deleteProject", { project: projectId }, { idempotencyKey: options.idempotencyKey })).deleted;
  }

  // -- erasure and export ---------------------------------------------------------------------------

  /** Start the GDPR erasure of everything the user has: `{ deletion_id, status }`. */
  deleteUser(): Promise<DeletionStarted> {
    return this.call("deleteUser", {});
  }

  deletionStatus(deletionId: string): Promise<DeletionStatus> {
    return this.call("deletionStatus", { deletion_id: deletionId });
  }

  /** Every project the user has written to, in key order (a project stays listed until the user is erased). */
  async projects(): Promise<string[]> {
    const found: string[] = [];
    for await (const page of pages((cursor) => this.call("projects", {}, { query: { cursor } }))) {
      found.push(...page.projects);
    }
    return found;
  }

  /** Every page of the user's export (entries, graph, episodes), following cursors. */
  export(): AsyncGenerator<ExportPage, void, undefined> {
    return pages((cursor) => this.call("export", {}, { query: { cursor } }));
  }

  // -- MCP ------------------------------------------------------------------------------------------

  /** Send one JSON-RPC message to the user's MCP endpoint: the answer, undefined for a notification (202). */
  async mcp(message: JsonRpcMessage, options: Write = {}): Promise<JsonRpcMessage | undefined> {
    const call = { body: message, query: { project_id: options.projectId }, idempotencyKey: options.idempotencyKey };
    return (await this.call("mcp", {}, call)) ?? undefined;
  }
}

function filterOf(options: Filtered): Filter | undefined {
  if (options.where !== undefined && options.filter !== undefined) {
    throw new TypeError("give the filter as `where` or as `filter`, not both");
  }
  return options.where ?? options.filter;
}
