/**
 * When and how long to wait before sending a request again: the Python clients' `RetryPolicy` and
 * `retry_after_seconds` (agentmem/client.py), in milliseconds.
 */
import { UNREACHABLE } from "./errors.js";

export interface RetryOptions {
  /** Retries after the first attempt (default 4; 0 never retries). */
  retries?: number;
  /** The first backoff ceiling, doubled at each retry (default 250 ms). */
  baseMs?: number;
  /** The largest backoff ceiling (default 8 s). */
  capMs?: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown at once (default 60 s). */
  maxRetryAfterMs?: number;
  /** The statuses worth another try (default no answer at all, 429 and 503). */
  statuses?: readonly number[];
  /** A number in [0, 1) (default `Math.random`): the jitter's source. */
  random?: () => number;
}

/**
 * Only a request that is safe to repeat is retried: a GET, or a write carrying an `Idempotency-Key`
 * (the client gives every write one unless told not to). The wait is full-jitter exponential backoff,
 * `uniform(0, min(cap, base * 2 ** attempt))`, or the server's `Retry-After` plus a tenth of that jitter.
 */
export class RetryPolicy {
  readonly retries: number;
  readonly baseMs: number;
  readonly capMs: number;
  readonly maxRetryAfterMs: number;
  readonly statuses: ReadonlySet<number>;
  private readonly random: () => number;

  constructor(options: RetryOptions = {}) {
    this.retries = options.retries ?? 4;
    this.baseMs = options.baseMs ?? 250;
    this.capMs = options.capMs ?? 8000;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.statuses = new Set(options.statuses ?? [UNREACHABLE, 429, 503]);
    this.random = options.random ?? Math.random;
  }

  /** Milliseconds to wait before retry number `attempt + 1`, or undefined to stop and answer. */
  delayMs(attempt: number, status: number, retryAfter: string | null | undefined, safe: boolean): number | undefined {
    if (!safe || !this.statuses.has(status) || attempt >= this.retries) return undefined;
    const jitter = this.random() * Math.min(this.capMs, this.baseMs * 2 ** attempt);
    const asked = retryAfterMs(retryAfter);
    if (asked === undefined) return jitter;
    return asked > this.maxRetryAfterMs ? undefined : asked + jitter * 0.1;
  }
}

/** A `Retry-After` header (seconds, or an HTTP date) as milliseconds from now; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, now: number = Date.now()): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  if (/^[+-]?\d+(\.\d+)?$/.test(value)) return Math.max(0, Number(value) * 1000);
  const moment = Date.parse(value);
  return Number.isNaN(moment) ? undefined : Math.max(0, moment - now);
}
