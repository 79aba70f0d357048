/**
 * One error type for all of Roost, with a closed set of codes. The HTTP status for a code is
 * decided only at the API edge (api/errors.ts); retryability is part of the error itself.
 */

/** Every code a Roost error can carry. Stable: clients match on these strings. */
export const errorCodes = [
  "invalid_json",
  "invalid_request",
  "unauthenticated",
  "forbidden",
  "not_found",
  "conflict",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "unavailable",
  "model_error",
  "computer_asleep",
  "computer_unavailable",
  "timeout",
  "config_invalid",
  "internal",
] as const;

export type ErrorCode = (typeof errorCodes)[number];

export interface RoostErrorOptions {
  /** Extra structured detail for clients (field paths, ids). */
  details?: Record<string, unknown>;
  /** Set when the operation may succeed if repeated later. */
  retryAfterMs?: number;
  cause?: unknown;
}

export class RoostError extends Error {
  override readonly name: string = "RoostError";
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  /** Undefined means terminal: repeating the same operation will fail the same way. */
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options: RoostErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    this.retryAfterMs = options.retryAfterMs;
  }

  get retryable(): boolean {
    return this.retryAfterMs !== undefined;
  }
}

export class NotFoundError extends RoostError {
  override readonly name = "NotFoundError";
  readonly kind: string;
  readonly id: string;
  constructor(kind: string, id: string) {
    super(
      "not_found",
      `${kind} ${JSON.stringify(id)} not found (check the id, or list them with GET /v1/${kind}s)`,
      {
        details: { kind, id },
      },
    );
    this.kind = kind;
    this.id = id;
  }
}

export class InvalidRequestError extends RoostError {
  override readonly name = "InvalidRequestError";
  constructor(message: string, details?: Record<string, unknown>) {
    super("invalid_request", message, details === undefined ? {} : { details });
  }
}

export class ConfigError extends RoostError {
  override readonly name = "ConfigError";
  constructor(message: string) {
    super("config_invalid", message);
  }
}

/** The model provider failed; `retryAfterMs` is set when a retry may help (rate limits, 5xx, network). */
export class ModelError extends RoostError {
  override readonly name = "ModelError";
  constructor(message: string, options: RoostErrorOptions = {}) {
    super("model_error", message, options);
  }
}

export function isRoostError(value: unknown): value is RoostError {
  return value instanceof RoostError;
}

/** The one conversion used at catch sites: anything thrown becomes a RoostError. */
export function toRoostError(value: unknown): RoostError {
  if (value instanceof RoostError) return value;
  if (value instanceof Error) return new RoostError("internal", value.message, { cause: value });
  return new RoostError("internal", String(value));
}
