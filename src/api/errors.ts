/** The one place RoostError codes become HTTP statuses (CONVENTIONS.md: errors). */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ErrorCode, RoostError } from "../errors/index.ts";

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

export function errorBody(error: RoostError) {
  return {
    error: {
      code: error.code,
      message: error.code === "internal" ? "internal error (see the server log)" : error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
    },
  };
}
