/**
 * The transport: one request made ready (URL, headers, JSON body), sent with `fetch`, sent again after
 * a backoff while the answer is worth another try and the request is safe to repeat, and its final
 * answer read as JSON or thrown as a `MemoryApiError`.
 */
import { MemoryApiError, UNREACHABLE, Unavailable, errorFromAnswer } from "./errors.js";
import { RetryPolicy, retryAfterMs, type RetryOptions } from "./retry.js";
import {
  routeRequest,
  type HttpRequest,
  type PathOf,
  type QueryValue,
  type ResponseOf,
  type RouteCall,
  type RouteName,
} from "./routes.js";

export interface TransportOptions {
  /** Sent as `x-api-key` (the local server needs none unless started with keys). */
  apiKey?: string | undefined;
  /** A policy, or options of the default one (`{ retries: 0 }` never retries). */
  retry?: RetryPolicy | RetryOptions | undefined;
  /** The `fetch` to send with (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** How long one attempt may take before it counts as unanswered (default 30 s). */
  timeoutMs?: number | undefined;
  /** Give every write without one a fresh `Idempotency-Key`, so that it can be retried safely (default true). */
  idempotencyKeys?: boolean | undefined;
}

/** One request, its path already encoded. */
interface Answer {
  status: number;
  retryAfter: string | null;
  text: string;
  failure?: unknown;
}

export class Transport {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  readonly idempotencyKeys: boolean;
  private readonly fetch: typeof fetch;

  constructor(baseUrl: string, options: TransportOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.retry = options.retry instanceof RetryPolicy ? options.retry : new RetryPolicy(options.retry);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.idempotencyKeys = options.idempotencyKeys ?? true;
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Call one route of the table (routes.ts): its decoded answer, typed by the route's response schema. */
  async route<N extends RouteName>(name: N, params: PathOf<N>, call: RouteCall<N> = {}): Promise<ResponseOf<N>> {
    return (await this.send(routeRequest(name, params, call))) as ResponseOf<N>;
  }

  /** Send a request (again while it may be retried): the decoded JSON answer, undefined when it has no body. */
  async send(request: HttpRequest): Promise<unknown> {
    const method = request.method.toUpperCase();
    const url = this.baseUrl + request.path + queryString(request.query);
    const headers: Record<string, string> = { Accept: "application/json" };
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers["Content-Type"] = "application/json";
    }
    if (this.apiKey) headers["x-api-key"] = this.apiKey;
    let key = request.idempotencyKey;
    if (key === undefined && method !== "GET" && this.idempotencyKeys) key = newIdempotencyKey();
    if (key !== undefined) headers["Idempotency-Key"] = key;
    const safe = method === "GET" || key !== undefined;

    for (let attempt = 0; ; attempt++) {
      const answer = await this.transmit(url, { method, headers, body });
      const delay = this.retry.delayMs(attempt, answer.status, answer.retryAfter, safe);
      if (delay === undefined) return result(url, answer);
      await sleep(delay);
    }
  }

  private async transmit(url: string, init: { method: string; headers: Record<string, string>; body: string | undefined }): Promise<Answer> {
    try {
      const response = await this.fetch(url, {
        method: init.method,
        headers: init.headers,
        ...(init.body === undefined ? {} : { body: init.body }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      return { status: response.status, retryAfter: response.headers.get("Retry-After"), text: await response.text() };
    } catch (failure) {
      return { status: UNREACHABLE, retryAfter: null, text: reason(failure, this.timeoutMs), failure };
    }
  }
}

function result(url: string, answer: Answer): unknown {
  if (answer.status === UNREACHABLE) {
    throw new Unavailable(`the memory API at ${url} is unreachable: ${answer.text}`, {
      status: UNREACHABLE,
      code: "unreachable",
      cause: answer.failure,
    });
  }
  if (answer.status >= 400) throw errorFromAnswer(answer.status, answer.text, retryAfterMs(answer.retryAfter));
  if (!answer.text) return undefined;
  try {
    return JSON.parse(answer.text);
  } catch (failure) {
    throw new MemoryApiError(`the memory API answered ${answer.status} with a body that is not JSON`, {
      status: answer.status,
      code: "invalid_response",
      cause: failure,
    });
  }
}

/** `?name=value&...` of the present parameters (a list repeats its name), or "" when none is. */
export function queryString(query: Readonly<Record<string, QueryValue>> | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    if (typeof value === "object") for (const item of value) params.append(name, item);
    else params.append(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID().replaceAll("-", "");
}

function reason(failure: unknown, timeoutMs: number): string {
  if (failure instanceof Error && failure.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  if (failure instanceof Error) {
    const cause: unknown = failure.cause;
    const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined;
    return code ? `${failure.message} (${code})` : failure.message;
  }
  return String(failure);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
