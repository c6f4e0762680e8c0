/**
 * The errors the client throws: one class per kind of failure, as agentmem/errors.py names them, all
 * under `MemoryApiError`, each carrying the API's HTTP `status`, its stable snake_case `code` and the
 * `requestId` to quote when reporting a problem. Catch a class (`err instanceof NotFound`) or test the
 * code; never match on the message.
 */

/** The `status` of an error for a request that got no HTTP answer (refused, reset, timed out). */
export const UNREACHABLE = 0;

export interface ErrorFields {
  status: number;
  code: string;
  requestId?: string | undefined;
  details?: unknown;
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/** The base of every error the client throws for an answer of the API (or for no answer at all). */
export class MemoryApiError extends Error {
  /** The HTTP status (`UNREACHABLE`, 0, when no answer came). */
  readonly status: number;
  /** The API's stable code, e.g. `not_found`, `invalid_input`, `user_deletion_in_progress`. */
  readonly code: string;
  /** The request id the API gave the failed request (quote it when reporting a problem). */
  readonly requestId: string | undefined;
  /** Per-field problems of an invalid request, as the API lists them. */
  readonly details: unknown;
  /** The wait the server asked for (`Retry-After`), when it did. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, fields: ErrorFields) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = new.target.name;
    this.status = fields.status;
    this.code = fields.code;
    this.requestId = fields.requestId;
    this.details = fields.details;
    this.retryAfterMs = fields.retryAfterMs;
  }
}

/** 400: malformed JSON, encoding or cursor. */
export class MalformedRequest extends MemoryApiError {}
/** 401: a missing or unknown API key. */
export class Unauthorized extends MemoryApiError {}
/** 403: the API key belongs to another app (or a foreign web origin). */
export class Forbidden extends MemoryApiError {}
/** 404: an unknown route, entry, entity or id outside the caller's scope. */
export class NotFound extends MemoryApiError {}
/** 409: the request conflicts with the stored state. */
export class Conflict extends MemoryApiError {}
/** 409 `user_deletion_in_progress`: the user is being erased; writes are refused until it ends. */
export class UserDeletionInProgress extends Conflict {}
/** 409 `condition_failed`: a conditional write found the item in another state than it required. */
export class ConditionFailed extends Conflict {}
/** 413: the request body, or one entry, is over its size limit. */
export class PayloadTooLarge extends MemoryApiError {}
/** 422: a field is missing or out of bounds. */
export class InvalidInput extends MemoryApiError {}
/** 429: throttled or over the daily quota. */
export class RateLimited extends MemoryApiError {}
/** 503, or no answer at all (`status` 0): a dependency or the API itself cannot be reached. */
export class Unavailable extends MemoryApiError {}

type ErrorClass = new (message: string, fields: ErrorFields) => MemoryApiError;

const BY_STATUS: Readonly<Record<number, ErrorClass>> = {
  400: MalformedRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: PayloadTooLarge,
  422: InvalidInput,
  429: RateLimited,
  503: Unavailable,
};

const BY_CODE: Readonly<Record<string, ErrorClass>> = {
  user_deletion_in_progress: UserDeletionInProgress,
  condition_failed: ConditionFailed,
};

/** The error for a 4xx or 5xx answer, read from its body `{"error": {"code", "message", "request_id"}}`. */
export function errorFromAnswer(status: number, text: string, retryAfterMs?: number): MemoryApiError {
  const detail = errorDetail(text);
  const fields: ErrorFields = {
    status,
    code: detail?.code ?? "http_error",
    requestId: detail?.requestId,
    details: detail?.details,
    retryAfterMs,
  };
  const message = detail?.message ?? (text.slice(0, 500) || `HTTP ${status}`);
  const Class = (status === 409 ? BY_CODE[fields.code] : undefined) ?? BY_STATUS[status] ?? MemoryApiError;
  return new Class(message, fields);
}

interface Detail {
  code: string;
  message: string;
  requestId: string | undefined;
  details: unknown;
}

function errorDetail(text: string): Detail | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const error = isObject(body) ? body["error"] : undefined;
  if (!isObject(error) || typeof error["code"] !== "string" || typeof error["message"] !== "string") return undefined;
  const requestId = error["request_id"];
  return {
    code: error["code"],
    message: error["message"],
    requestId: typeof requestId === "string" ? requestId : undefined,
    details: error["details"],
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
