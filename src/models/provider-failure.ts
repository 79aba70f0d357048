/**
 * What went wrong when calling a model provider: one classification of anything the AI SDK (or
 * the network under it) throws, whether it is worth retrying, and a message that says what
 * happened and how to fix it.
 *
 * Invariants:
 * P1 Retryable: 408, 409, 429, 5xx, network failures, timeouts, malformed or broken responses.
 *    Terminal: every other HTTP status (400, 401, 403, 404, 413, 422, ...) and request-building
 *    errors, because repeating the same request fails the same way.
 * P2 A server's own wait hint (`retry-after-ms`, `retry-after` in seconds or as an HTTP date) is
 *    carried through, so the retry loop can honor it.
 * P3 A message blames the model (no tools, no images, context too small) only when the provider's
 *    own message says so, and always quotes what the provider said.
 */
import { STATUS_CODES } from "node:http";
import {
  AISDKError,
  APICallError,
  EmptyResponseBodyError,
  InvalidResponseDataError,
  JSONParseError,
} from "ai";
import { providerEnvironmentVariables, defaultModelEnvironmentVariable } from "./providers.ts";
import type { ModelProvider } from "./providers.ts";

/** The kinds of provider failure Roost tells apart. */
export type ProviderFailureKind =
  | "rate-limited"
  | "server-error"
  | "conflict"
  | "timeout"
  | "connection-refused"
  | "network"
  | "unauthorized"
  | "forbidden"
  | "not-found"
  | "bad-request"
  | "http-error"
  | "invalid-response"
  | "stream-error"
  | "unknown";

/** One classified provider failure. */
export interface ProviderFailure {
  kind: ProviderFailureKind;
  retryable: boolean;
  /** HTTP status, when the provider answered. */
  status: number | undefined;
  /** The server's requested wait before retrying, from its headers (P2). */
  retryAfterMs: number | undefined;
  /** What the provider or the network said, for the message. */
  detail: string;
  cause: unknown;
}

/** Thrown by the adapter when a stream stays silent for too long; classified as a retryable timeout. */
export class ProviderTimeoutError extends Error {
  override readonly name = "ProviderTimeoutError";
  readonly idleTimeoutMs: number;
  constructor(idleTimeoutMs: number) {
    super(`no data from the provider for ${Math.round(idleTimeoutMs / 1000)}s`);
    this.idleTimeoutMs = idleTimeoutMs;
  }
}

const connectionRefusedCodes = new Set(["ECONNREFUSED"]);
const timeoutCodes = new Set([
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ESOCKETTIMEDOUT",
]);
const networkCodes = new Set([
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

/** Reads `retry-after-ms` or `retry-after` (seconds or HTTP date) into milliseconds (P2). */
export function parseRetryAfterMs(
  headers: Record<string, string> | undefined,
  now: number = Date.now(),
): number | undefined {
  if (headers === undefined) return undefined;
  const lowerCased = new Map(
    Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value.trim()]),
  );
  const milliseconds = lowerCased.get("retry-after-ms");
  if (milliseconds !== undefined && milliseconds !== "") {
    const value = Number(milliseconds);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const retryAfter = lowerCased.get("retry-after");
  if (retryAfter === undefined || retryAfter === "") return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(retryAfter);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Every error in a `cause` chain, outermost first (bounded, in case of cycles). */
function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  while (
    current !== undefined &&
    current !== null &&
    chain.length < 8 &&
    !chain.includes(current)
  ) {
    chain.push(current);
    current = typeof current === "object" && "cause" in current ? current.cause : undefined;
  }
  return chain;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

/** The innermost message in a cause chain: usually the most specific ("connect ECONNREFUSED ..."). */
function innermostMessage(error: unknown): string {
  const chain = causeChain(error);
  return messageOf(chain[chain.length - 1] ?? error);
}

function networkKind(error: unknown): ProviderFailureKind | undefined {
  for (const link of causeChain(error)) {
    const code = errorCode(link);
    const message = link instanceof Error ? link.message : "";
    if (
      (code !== undefined && connectionRefusedCodes.has(code)) ||
      message.includes("ECONNREFUSED")
    ) {
      return "connection-refused";
    }
    if (code !== undefined && timeoutCodes.has(code)) return "timeout";
    if (link instanceof Error && link.name === "TimeoutError") return "timeout";
    if (code !== undefined && networkCodes.has(code)) return "network";
  }
  return undefined;
}

const rejectedKey = /incorrect api key|invalid api key|invalid x-api-key/i;

function kindForStatus(status: number): ProviderFailureKind {
  if (status === 429) return "rate-limited";
  if (status === 408) return "timeout";
  if (status === 409) return "conflict";
  if (status >= 500) return "server-error";
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 404) return "not-found";
  if (status === 400) return "bad-request";
  return "http-error";
}

const retryableKinds: ReadonlySet<ProviderFailureKind> = new Set<ProviderFailureKind>([
  "rate-limited",
  "server-error",
  "conflict",
  "timeout",
  "connection-refused",
  "network",
  "invalid-response",
  "stream-error",
]); // P1

function failure(
  kind: ProviderFailureKind,
  cause: unknown,
  detail: string,
  status?: number,
  retryAfterMs?: number,
): ProviderFailure {
  return { kind, retryable: retryableKinds.has(kind), status, retryAfterMs, detail, cause };
}

/** Classifies anything thrown while calling a provider (P1, P2). */
export function classifyProviderError(error: unknown): ProviderFailure {
  if (error instanceof ProviderTimeoutError) return failure("timeout", error, error.message);
  if (APICallError.isInstance(error)) {
    if (error.statusCode !== undefined) {
      // xAI answers a wrong key with 400 (401 only when the header is missing).
      const kind =
        error.statusCode === 400 && rejectedKey.test(error.message)
          ? "unauthorized"
          : kindForStatus(error.statusCode);
      return failure(
        kind,
        error,
        error.message,
        error.statusCode,
        parseRetryAfterMs(error.responseHeaders),
      );
    }
    return failure(networkKind(error) ?? "network", error, innermostMessage(error));
  }
  const network = networkKind(error);
  if (network !== undefined) return failure(network, error, innermostMessage(error));
  if (
    EmptyResponseBodyError.isInstance(error) ||
    InvalidResponseDataError.isInstance(error) ||
    JSONParseError.isInstance(error)
  ) {
    return failure("invalid-response", error, messageOf(error));
  }
  // Other AI SDK errors mean the request could not be built (invalid prompt, unsupported option).
  if (AISDKError.isInstance(error)) return failure("unknown", error, messageOf(error));
  // Providers report trouble mid-stream as plain error objects (e.g. `overloaded_error`).
  if (!(error instanceof Error)) return failure("stream-error", error, messageOf(error));
  return failure("unknown", error, messageOf(error));
}

/** Where a failure happened, for the message. */
export interface ProviderFailureContext {
  provider: ModelProvider;
  model: string;
  /** Set when the provider is reached at a non-default address. */
  baseUrl: string | undefined;
  /** How many attempts were made, including the first. */
  attempts: number;
  /** Set when the retry loop gave up because the server asked to wait longer than this. */
  waitRefusedMs?: number;
}

function statusText(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? "HTTP error"}`;
}

function quoteDetail(detail: string): string {
  const trimmed = detail.replace(/\s+/g, " ").trim();
  if (trimmed === "") return "";
  const short = trimmed.length > 300 ? `${trimmed.slice(0, 297)}...` : trimmed;
  return ` (provider said: ${JSON.stringify(short)})`;
}

function afterAttempts(attempts: number): string {
  return attempts > 1 ? ` after ${attempts} attempts` : "";
}

const saysNoTools =
  /(does not|doesn't|do not|cannot) (support|use) (tools|tool use|tool calling|function calling|functions)|(tools|tool use|tool calling|function calling) (is|are) not (supported|enabled|available)/i;
const saysNoImages =
  /(does not|doesn't|do not|cannot) (support|accept|process|read) (image|images|vision)|image.{0,40}(not supported|only supported by certain models|not enabled)|vision is not (supported|enabled)/i;
const saysTooLong =
  /context.length|context window|maximum context|prompt is too long|too many (input )?tokens|context_length_exceeded/i;

/** The provider refused a request because the conversation is longer than the model takes. */
export function isContextOverflowFailure(
  failure: Pick<ProviderFailure, "kind" | "detail">,
): boolean {
  return failure.kind === "bad-request" && saysTooLong.test(failure.detail);
}

/**
 * A 400 names what the provider objected to. Only the provider's own words put it on the model
 * (P3): most 400s come from the request (a malformed history, an option), not the model.
 */
function describeBadRequest(label: string, model: string, detail: string, said: string): string {
  const head = `${label}: ${statusText(400)}`;
  if (saysNoTools.test(detail)) {
    return `${head} — the provider says model "${model}" does not support tools${said}; choose a model with tool calling in ${defaultModelEnvironmentVariable} or the bot's model setting`;
  }
  if (saysNoImages.test(detail)) {
    return `${head} — the provider says model "${model}" does not accept images${said}; choose a model with image input, or avoid tools that return images`;
  }
  if (saysTooLong.test(detail)) {
    return `${head} — the conversation is longer than model "${model}" accepts${said}; start a new conversation or choose a model with a larger context window`;
  }
  return `${head} — the provider rejected the request${said}; retrying will not help. If the message names a setting (model, key, option), fix that setting; if it names the conversation (messages, tool calls, tool results), this is a bug in Roost — please report it with this message`;
}

/** A message that says what happened and how to fix it. */
export function describeProviderFailure(
  providerFailure: ProviderFailure,
  context: ProviderFailureContext,
): string {
  const { provider, model, baseUrl, attempts } = context;
  const label = baseUrl === undefined ? provider : `${provider} at ${baseUrl}`;
  const variables = providerEnvironmentVariables[provider];
  const isLocal = provider === "openai-compatible";
  const said = quoteDetail(providerFailure.detail);
  const status = providerFailure.status;
  const tries = afterAttempts(attempts);

  switch (providerFailure.kind) {
    case "unauthorized":
      return isLocal
        ? `${label}: ${statusText(status ?? 401)} — the server rejected the API key; set ${variables.apiKey} to the key it expects${said}`
        : `${label}: ${statusText(status ?? 401)} — the API key was rejected; set ${variables.apiKey} to a valid key${said}`;
    case "forbidden":
      return `${label}: ${statusText(403)} — this API key may not use model "${model}"; check the key's permissions and billing, or choose another model in ${defaultModelEnvironmentVariable}${said}`;
    case "not-found":
      return isLocal
        ? `${label}: ${statusText(404)} — model "${model}" or the endpoint was not found; check that ${variables.baseUrl} ends in /v1 and that the server has the model (for Ollama: ollama pull ${model})${said}`
        : `${label}: ${statusText(404)} — model "${model}" was not found; check the model name in ${defaultModelEnvironmentVariable} or the bot's model setting${said}`;
    case "bad-request":
      return describeBadRequest(label, model, providerFailure.detail, said);
    case "http-error":
      return `${label}: ${statusText(status ?? 0)} — the provider refused the request; this will not succeed by retrying${said}`;
    case "rate-limited":
      if (context.waitRefusedMs !== undefined) {
        return `${label}: rate limited${tries}; the provider asks to wait ${Math.ceil(context.waitRefusedMs / 1000)}s — try again later or raise your plan's rate limit${said}`;
      }
      return `${label}: rate limited${tries}; try again later or raise your plan's rate limit${said}`;
    case "server-error":
      return `${label}: ${statusText(status ?? 500)}${tries} — the provider is having trouble; try again later${said}`;
    case "conflict":
      return `${label}: ${statusText(409)}${tries} — the provider reported a conflict; try again later${said}`;
    case "timeout":
      return `${label}: timed out${tries} (${providerFailure.detail}) — the provider is slow or unreachable; try again later${isLocal ? ", or check that the server is not overloaded" : ""}`;
    case "connection-refused":
      return isLocal
        ? `${label}: connection refused${tries} — is the server running? (start it, or fix ${variables.baseUrl})`
        : `${label}: connection refused${tries} — check your network and proxy settings${baseUrl === undefined ? "" : `, and ${variables.baseUrl}`}`;
    case "network":
      return `${label}: network error${tries} (${providerFailure.detail}) — check your network${isLocal || baseUrl !== undefined ? ` and ${variables.baseUrl}` : ""}`;
    case "invalid-response":
      return `${label}: the provider sent a response Roost could not read${tries}${said}; try again later, or choose another model in ${defaultModelEnvironmentVariable}`;
    case "stream-error":
      return `${label}: the provider reported an error while streaming${tries}${said}; try again later`;
    case "unknown":
      return `${label}: the model call failed (${providerFailure.detail}); this looks like a bug in Roost — please report it`;
  }
}
