/**
 * The TypeScript client of the agent memory API (docs/typescript.md).
 *
 *     import { MemoryClient } from "@agentmem/client";
 *
 *     const memory = new MemoryClient("http://127.0.0.1:8000", { apiKey }).user("my-app", "alice");
 *     await memory.addSession("chat-1", ["I prefer dark mode", "My dog is called Pixel"]);
 *     const hits = await memory.search("what is my dog called", { topK: 3, where: { channel: "chat" } });
 */
export { MemoryClient, type MemoryClientOptions, type RequestOptions } from "./client.js";
export { UserClient, type AddEntryOptions, type AddSessionOptions, type Filtered, type IterateOptions, type PageOptions, type SearchOptions, type UpdateOptions } from "./user.js";
export type { ListEpisodesOptions, ProfileCardOptions, ReadGraphOptions, UserGraph, ValidFrom, ValidTo } from "./graph.js";
export { asEntry, type EntryLike, type Scoped, type Write } from "./scope.js";
export {
  Conflict,
  ConditionFailed,
  Forbidden,
  InvalidInput,
  MalformedRequest,
  MemoryApiError,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  Unauthorized,
  Unavailable,
  UNREACHABLE,
  UserDeletionInProgress,
  type ErrorFields,
} from "./errors.js";
export { RetryPolicy, retryAfterMs, type RetryOptions } from "./retry.js";
export { Transport, newIdempotencyKey, type TransportOptions } from "./http.js";
export { ROUTES, segment, type HttpRequest, type RouteName, type RouteSpec } from "./routes.js";
export type * from "./types.js";
