/**
 * The API's JSON bodies, as they travel (snake_case field names).
 *
 * Every interface named like a schema of `/v1/openapi.json` (`components.schemas`) is checked against
 * it by test/openapi.test.mjs: each field named here exists in the schema, each field the schema
 * requires is named here, and a request field optional here is optional there too. The client builds
 * its requests and reads its answers only through these types, so the compiler holds it to them.
 */

/** A metadata value (docs/api.md): a string of at most 1 KiB, a finite number, a boolean or a list of strings. */
export type MetadataValue = string | number | boolean | string[];
export type Metadata = Record<string, MetadataValue>;
/** The filter language of docs/search.md over metadata keys and author, session_id, timestamp: `{ channel: "chat", score: { $gte: 3 } }`. */
export type Filter = Record<string, unknown>;
export type SearchMode = "keyword" | "semantic" | "hybrid";
/** An RFC 3339 timestamp, or a Date (sent in UTC). */
export type Moment = string | Date;

// -- memory entries ---------------------------------------------------------------------------------

/** One part of an entry's content: `{ text }` or another ADK part shape, kept as sent. */
export interface Part {
  text?: string;
  [field: string]: unknown;
}

export interface Content {
  role?: string | null;
  parts?: Part[];
}

/** An entry as written (an ADK MemoryEntry). */
export interface MemoryEntry {
  content: Content;
  author?: string | null;
  timestamp?: string | null;
  metadata?: Metadata | null;
  expires_at?: string | null;
}

/** An entry as stored and answered (`score` on search hits). */
export interface Entry {
  id: string;
  session_id: string | null;
  project_id: string | null;
  content: Content;
  author: string | null;
  timestamp: string;
  metadata?: Metadata;
  expires_at?: string | null;
  score?: number | null;
  indexing?: string | null;
  /** 1 for an entry never corrected, one more with each `update` (added in v1; absent from older servers). */
  revision?: number;
  /** When its current version was written: its `timestamp` until it is corrected (added in v1). */
  updated_at?: string;
}

/** The body of `PATCH {scope}/memories/{id}`: content, metadata (null removes it) or both. */
export interface UpdateEntryRequest {
  content?: Content | null;
  metadata?: Metadata | null;
  revision?: number | null;
  project_id?: string | null;
}

/** One version of an entry, bitemporal as the graph's facts. */
export interface EntryVersion {
  revision: number;
  content: Content;
  metadata: Metadata;
  /** When this version became the entry's current one. */
  valid_from: string;
  /** When a correction replaced it; null for the current version. */
  valid_to: string | null;
  recorded_at: string;
}

export interface EntryHistory {
  memory_id: string;
  /** Oldest first; the last is the current version. */
  versions: EntryVersion[];
}

/** A superseded version of an exported entry. */
export interface ExportedVersion {
  memory_id: string;
  project_id: string | null;
  revision: number;
  content: Content;
  metadata: Metadata;
  valid_from: string;
  valid_to: string | null;
  recorded_at: string;
}

export interface PutSessionRequest {
  entries: MemoryEntry[];
  project_id?: string | null;
  ttl_seconds?: number | null;
}

export interface SessionStored {
  session_id: string;
  stored: number;
  skipped: number;
  indexing?: string | null;
}

export interface AddEntryRequest {
  entry: MemoryEntry;
  project_id?: string | null;
  session_id?: string | null;
  ttl_seconds?: number | null;
}

export interface SearchRequest {
  query: string;
  top_k?: number;
  min_score?: number | null;
  project_id?: string | null;
  mode?: SearchMode | null;
  filter?: Filter | null;
}

export interface SearchResults {
  entries: Entry[];
  mode: SearchMode;
  truncated?: boolean;
  degraded?: boolean | null;
  warnings?: string[] | null;
}

export interface QueryRequest {
  filter: Filter;
  project_id?: string | null;
  limit?: number;
  cursor?: string | null;
}

export interface EntryPage {
  entries: Entry[];
  next_cursor: string | null;
  truncated?: boolean;
}

export interface DeleteByQueryRequest {
  query?: string | null;
  filter?: Filter | null;
  project_id?: string | null;
}

export interface Deleted {
  deleted: number;
}

// -- erasure and export -----------------------------------------------------------------------------

export type DeletionState = "RUNNING" | "SUCCEEDED" | "FAILED";

export interface DeletionStarted {
  deletion_id: string;
  status: DeletionState;
}

export interface DeletionCounts {
  entries: number;
  vectors: number;
  graph_items: number;
  episodes: number;
}

export interface DeletionStatus {
  deletion_id: string;
  status: DeletionState;
  started_at: string;
  finished_at?: string | null;
  deleted: DeletionCounts;
  error?: Record<string, string> | null;
}

export interface ExportGraph {
  entities: Record<string, unknown>[];
  relations: Record<string, unknown>[];
  observations: Record<string, unknown>[];
}

export interface ExportPage {
  entries: Entry[];
  graph: ExportGraph;
  episodes: Record<string, unknown>[];
  /** The user's store items (added in v1; absent from older servers). */
  store?: StoreItem[];
  /** AgentCore events kept as events only (blob payloads: no memory entries; added in v1). */
  events?: Entry[];
  /** The superseded versions of corrected entries (added in v1; absent from older servers). */
  memory_history?: ExportedVersion[];
  next_cursor: string | null;
}

// -- knowledge graph --------------------------------------------------------------------------------

export interface Observation {
  id: string;
  content: string;
  valid_from: string;
  valid_to: string | null;
  recorded_at: string;
  expired_at: string | null;
}

export interface Entity {
  name: string;
  entity_type: string;
  updated_at: string;
  observations: Observation[];
}

export interface Relation {
  id: string;
  source: string;
  relation_type: string;
  target: string;
  valid_from: string;
  valid_to: string | null;
  recorded_at: string;
  expired_at: string | null;
}

/** An entity to create or update: its type replaces the known one, its observations are added. */
export interface EntityIn {
  name: string;
  entity_type?: string | null;
  observations?: string[];
}

export interface RelationIn {
  source: string;
  relation_type: string;
  target: string;
}

export interface CreateEntitiesRequest {
  entities: EntityIn[];
  project_id?: string | null;
}

export interface Entities {
  entities: Entity[];
}

export interface AddObservationsRequest {
  observations: string[];
  valid_from?: string | null;
  project_id?: string | null;
}

export interface Observations {
  observations: Observation[];
}

export interface EntityHistory {
  name: string;
  entity_type: string;
  updated_at: string;
  observations: Observation[];
  relations: Relation[];
  truncated?: boolean;
}

export interface InvalidateRequest {
  valid_to?: string | null;
  project_id?: string | null;
}

export interface SupersedeRequest {
  content: string;
  project_id?: string | null;
}

export interface Superseded {
  invalidated: Observation;
  created: Observation;
}

export interface CreateRelationsRequest {
  relations: RelationIn[];
  project_id?: string | null;
}

export interface Relations {
  relations: Relation[];
}

export interface NodeHit {
  entity: Entity;
  relations: Relation[];
  score: number;
}

export interface NodeHits {
  results: NodeHit[];
  truncated?: boolean;
}

export interface Subgraph {
  entities: Entity[];
  relations: Relation[];
  truncated?: boolean;
}

export interface GraphPage {
  entities: Entity[];
  relations: Relation[];
  truncated?: boolean;
  next_cursor?: string | null;
}

export interface ProfileCard {
  text: string;
  entities: Entity[];
  /** The current relations the text tells (each on its source's line, or its target's when the source is not on the card). */
  relations?: Relation[];
  truncated?: boolean;
}

export interface AddEpisodesRequest {
  session_id: string;
  entries: MemoryEntry[];
  project_id?: string | null;
}

export interface Stored {
  stored: number;
}

export interface Episode {
  id: string;
  session_id: string | null;
  project_id: string | null;
  author: string | null;
  text: string;
  timestamp: string;
  expires_at?: string | null;
  score?: number | null;
}

export interface Episodes {
  episodes: Episode[];
  truncated?: boolean;
}

export interface RememberRequest {
  entity: string;
  entity_type?: string | null;
  facts: string[];
  project_id?: string | null;
}

export interface Remembered {
  stored: boolean;
  entity: string;
  facts_added: number;
}

export interface RelateRequest {
  source: string;
  relation: string;
  target: string;
  project_id?: string | null;
}

export interface Related {
  related: boolean;
  source: string;
  relation: string;
  target: string;
}

// -- service ----------------------------------------------------------------------------------------

export interface Health {
  status: "ok" | "degraded" | "failing";
  checks: Record<string, string>;
}

export interface Capabilities {
  project_scoping: boolean;
  search_modes: SearchMode[];
  default_search_mode: SearchMode;
  graph: boolean;
  vector_backend: string | null;
  embedder: string | null;
  relevance_threshold: number;
}

/** A user of an app, as `GET /v1/apps/{app}/users` lists it. */
export interface AppUserOut {
  user_id: string;
  /** Memory entries held in every scope of the user (an expired one until the store removes it). */
  entries: number;
  /** The newest memory write or delete (RFC 3339); null when the user holds no entry. */
  last_write_at: string | null;
}

/** A page of an app's users, in key order (`GET /v1/apps/{app}/users`; none being erased). */
export interface AppUsers {
  users: AppUserOut[];
  next_cursor: string | null;
}

/** A page of the projects a user has written to (`GET {scope}/projects`). */
export interface Projects {
  projects: string[];
  next_cursor: string | null;
}

/** US dollars at list prices (see `Usage.cost_basis`), per part and in total. */
export interface EstimatedCost {
  api_gateway: number;
  lambda_requests: number;
  lambda_compute: number;
  dynamodb_reads: number;
  dynamodb_writes: number;
  embeddings: number;
  /** The extraction model's tokens at the configured Bedrock model's list price; 0 when unpriced (see `cost_basis`). */
  extraction_model?: number;
  total: number;
}

export interface UsageDay {
  date: string;
  requests: number;
  items_stored: number;
  embeddings: number;
  /** DynamoDB read request units the day's requests consumed. */
  read_units: number;
  /** DynamoDB write request units (transactions count twice). */
  write_units: number;
  /** Lambda duration of the requests' work at the API function's memory, in GB-milliseconds. */
  compute_gb_ms: number;
  /** Titan v2 input tokens of the texts embedded (a cautious estimate). */
  embedding_tokens: number;
  /** Calls to the extraction model (docs/extraction.md), and the tokens they read and wrote. */
  model_calls?: number;
  model_input_tokens?: number;
  model_output_tokens?: number;
  estimated_cost_usd: EstimatedCost;
}

export interface Usage {
  app: string;
  days: UsageDay[];
  /** How `estimated_cost_usd` is estimated: list prices, their region and dates; not a bill. */
  cost_basis: string;
}

// -- what an app learns (docs/extraction.md) ---------------------------------------------------------------

export type StrategyKind = "SEMANTIC" | "USER_PREFERENCE" | "SUMMARIZATION" | "EPISODIC";

export interface StrategyIn {
  type: StrategyKind;
  /** Unique in the app: `[a-zA-Z][a-zA-Z0-9_]{0,47}`. */
  name: string;
  /** A template naming `{actorId}` (and `{sessionId}`, `{memoryStrategyId}`); AgentCore's default when absent. */
  namespace?: string | null;
  /** Appended to the extraction prompt. */
  instruction?: string | null;
  consolidation_instruction?: string | null;
}

export interface ExtractionIn {
  strategies: StrategyIn[];
  trigger_messages?: number;
  trigger_idle_seconds?: number;
  /** Model tokens the app may spend per calendar month (UTC); null: no limit. */
  token_budget?: number | null;
}

export interface StrategyOut {
  id: string;
  type: StrategyKind;
  name: string;
  namespace: string;
  instruction: string | null;
  consolidation_instruction: string | null;
}

export interface ExtractionState {
  /** The `model_` states: the app's last model call failed so (`message` says why and when), until one is answered. */
  status: "off" | "on" | "needs_model" | "paused_budget" | "model_unreachable" | "model_timed_out" | "model_refused";
  model: string | null;
  tokens_this_month: number;
  message: string;
}

export interface ExtractSessionRequest {
  project_id?: string | null;
}

/** `queued`: learnt from shortly, whatever the triggers say; `off`: the app learns nothing. */
export interface ExtractionQueued {
  session_id: string;
  status: "queued" | "off";
}

export interface ExtractionOut {
  app: string;
  strategies: StrategyOut[];
  trigger_messages: number;
  trigger_idle_seconds: number;
  token_budget: number | null;
  state: ExtractionState;
}

/** A parked extraction job: a batch whose model calls failed on every attempt, and why. */
export interface ExtractionJob {
  job_id: string;
  user: string;
  project: string | null;
  session: string;
  /** The strategy's id (`failure` starts with its name). */
  strategy: string;
  /** The entries (turns) the job extracts from when started again. */
  entry_ids: string[];
  /** The error's code and words, never the model's answer. */
  failure: string;
  parked_at: string;
}

export interface ExtractionJobs {
  jobs: ExtractionJob[];
  next_cursor: string | null;
}

// -- the store (LangGraph's BaseStore over HTTP; docs/api.md "Store") ------------------------------------

// Every op names a user of the app and, optionally, a project; `namespace` is the path below the user.
export interface GetOp {
  user: string;
  project_id?: string | null;
  op: "get";
  namespace: string[];
  key: string;
  refresh_ttl?: boolean;
}

export interface PutOp {
  user: string;
  project_id?: string | null;
  op: "put";
  namespace: string[];
  key: string;
  /** null deletes the item. */
  value: Record<string, unknown> | null;
  /** What search ranks (default: every string of the value; "" leaves the item unsearchable). */
  text?: string | null;
  ttl_minutes?: number | null;
}

export interface SearchOp {
  user: string;
  project_id?: string | null;
  op: "search";
  namespace_prefix: string[];
  query?: string | null;
  filter?: Record<string, unknown> | null;
  limit?: number;
  offset?: number;
  refresh_ttl?: boolean;
}

export interface ListNamespacesOp {
  user: string;
  project_id?: string | null;
  op: "list_namespaces";
  prefix?: string[];
}

export type StoreOp = GetOp | PutOp | SearchOp | ListNamespacesOp;

export interface StoreBatchRequest {
  ops: StoreOp[];
}

export interface StoreItem {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  expires_at?: string | null;
  score?: number | null;
}

/** One result per op, in order: get, an item or null; put, null; search, items; list_namespaces, paths. */
export type StoreResult = StoreItem | StoreItem[] | string[][] | null;

export interface StoreBatchResults {
  results: StoreResult[];
}

export interface ErrorDetail {
  code: string;
  message: string;
  request_id: string;
  details?: unknown;
}

export interface ErrorBody {
  error: ErrorDetail;
}

// -- MCP (docs/mcp.md; not in the OpenAPI document) --------------------------------------------------

/** One JSON-RPC 2.0 message of the MCP route: a request or notification in, a result or error out. */
export interface JsonRpcMessage {
  jsonrpc: "2.0";
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** The body types by schema name, as the route table (routes.ts) names them. */
export interface Schemas {
  AddEntryRequest: AddEntryRequest;
  AppUsers: AppUsers;
  AddEpisodesRequest: AddEpisodesRequest;
  AddObservationsRequest: AddObservationsRequest;
  Capabilities: Capabilities;
  ExtractionIn: ExtractionIn;
  ExtractionQueued: ExtractionQueued;
  ExtractSessionRequest: ExtractSessionRequest;
  ExtractionOut: ExtractionOut;
  ExtractionState: ExtractionState;
  ExtractionJob: ExtractionJob;
  ExtractionJobs: ExtractionJobs;
  StrategyIn: StrategyIn;
  StrategyOut: StrategyOut;
  CreateEntitiesRequest: CreateEntitiesRequest;
  CreateRelationsRequest: CreateRelationsRequest;
  DeleteByQueryRequest: DeleteByQueryRequest;
  Deleted: Deleted;
  DeletionStarted: DeletionStarted;
  DeletionStatus: DeletionStatus;
  Entities: Entities;
  EntityHistory: EntityHistory;
  Entry: Entry;
  EntryPage: EntryPage;
  Episodes: Episodes;
  EntryHistory: EntryHistory;
  ExportPage: ExportPage;
  GraphPage: GraphPage;
  Health: Health;
  InvalidateRequest: InvalidateRequest;
  JsonRpcMessage: JsonRpcMessage;
  NodeHits: NodeHits;
  Observation: Observation;
  Observations: Observations;
  ProfileCard: ProfileCard;
  Projects: Projects;
  PutSessionRequest: PutSessionRequest;
  QueryRequest: QueryRequest;
  UpdateEntryRequest: UpdateEntryRequest;
  RelateRequest: RelateRequest;
  Related: Related;
  Relation: Relation;
  Relations: Relations;
  RememberRequest: RememberRequest;
  Remembered: Remembered;
  SearchRequest: SearchRequest;
  SearchResults: SearchResults;
  SessionStored: SessionStored;
  Stored: Stored;
  Subgraph: Subgraph;
  SupersedeRequest: SupersedeRequest;
  Superseded: Superseded;
  StoreBatchRequest: StoreBatchRequest;
  StoreBatchResults: StoreBatchResults;
  StoreItem: StoreItem;
  GetOp: GetOp;
  PutOp: PutOp;
  SearchOp: SearchOp;
  ListNamespacesOp: ListNamespacesOp;
  Usage: Usage;
}
