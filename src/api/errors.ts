/**
 * The one place RoostError codes become HTTP statuses and error bodies (CONVENTIONS.md: errors).
 * Every error answer of the API, whoever raised it, goes through `errorBody`, so it has one shape.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ErrorCode, RoostError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import { issuePath } from "./validation.ts";

const statusByCode: Record<ErrorCode, ContentfulStatusCode> = {
  invalid_json: 400,
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
  model_error: 502,
  computer_asleep: 409,
  computer_unavailable: 503,
  timeout: 504,
  config_invalid: 500,
  internal: 500,
};

export function httpStatus(error: RoostError): ContentfulStatusCode {
  return statusByCode[error.code];
}

/** Seconds for a `retry-after` header: set for 429 and 503 answers of errors that say when. */
export function retryAfterSeconds(error: RoostError): number | undefined {
  const status = httpStatus(error);
  if (error.retryAfterMs === undefined || (status !== 429 && status !== 503)) return undefined;
  return Math.max(1, Math.ceil(error.retryAfterMs / 1000));
}

export function errorBody(error: RoostError): Api.ErrorBody {
  const details = normalizeDetails(error.details);
  return {
    error: {
      code: error.code,
      message: error.code === "internal" ? "internal error (see the server log)" : error.message,
      ...(details === undefined ? {} : { details }),
    },
  };
}

/** Issues always carry a string `path` and `message`, whatever validator produced them. */
function normalizeDetails(
  details: Record<string, unknown> | undefined,
): Api.ErrorBody["error"]["details"] {
  if (details === undefined || !Array.isArray(details.issues)) return details;
  return {
    ...details,
    issues: details.issues.map((issue: { path?: unknown; message?: unknown }) => ({
      path: issuePath(issue.path),
      message: String(issue.message),
    })),
  };
}
