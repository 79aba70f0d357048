import { APICallError, InvalidPromptError } from "ai";
import { describe, expect, test } from "vitest";
import {
  classifyProviderError,
  describeProviderFailure,
  parseRetryAfterMs,
  ProviderTimeoutError,
} from "./provider-failure.ts";

function apiError(
  statusCode: number | undefined,
  responseHeaders?: Record<string, string>,
  cause?: unknown,
): APICallError {
  return new APICallError({
    message: statusCode === undefined ? "Cannot connect to API" : `HTTP ${statusCode}`,
    url: "https://api.example.com/v1/chat/completions",
    requestBodyValues: {},
    ...(statusCode === undefined ? {} : { statusCode }),
    ...(responseHeaders === undefined ? {} : { responseHeaders }),
    cause,
  });
}

describe("parseRetryAfterMs", () => {
  test("prefers retry-after-ms, then reads retry-after as seconds or an HTTP date", () => {
    expect(parseRetryAfterMs({ "retry-after-ms": "250", "retry-after": "9" })).toBe(250);
    expect(parseRetryAfterMs({ "Retry-After": "3" })).toBe(3000);
    expect(parseRetryAfterMs({ "retry-after": "0.5" })).toBe(500);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfterMs({ "retry-after": "Thu, 01 Jan 2026 00:00:07 GMT" }, now)).toBe(7000);
  });

  test("ignores missing, negative and unreadable values", () => {
    expect(parseRetryAfterMs(undefined)).toBeUndefined();
    expect(parseRetryAfterMs({})).toBeUndefined();
    expect(parseRetryAfterMs({ "retry-after": "soon" })).toBeUndefined();
    expect(parseRetryAfterMs({ "retry-after-ms": "-5" })).toBeUndefined();
  });
});

describe("classifyProviderError", () => {
  test.each([
    [429, "rate-limited", true],
    [408, "timeout", true],
    [409, "conflict", true],
    [500, "server-error", true],
    [503, "server-error", true],
    [529, "server-error", true],
    [400, "bad-request", false],
    [401, "unauthorized", false],
    [403, "forbidden", false],
    [404, "not-found", false],
    [422, "http-error", false],
  ] as const)("HTTP %i is %s (retryable: %s)", (status, kind, retryable) => {
    const failure = classifyProviderError(apiError(status));
    expect(failure).toMatchObject({ kind, retryable, status });
  });

  test("carries the server's wait hint", () => {
    expect(classifyProviderError(apiError(429, { "retry-after": "4" })).retryAfterMs).toBe(4000);
  });

  test("connection refused is found in the cause chain", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), {
      code: "ECONNREFUSED",
    });
    const failure = classifyProviderError(
      apiError(undefined, undefined, new TypeError("fetch failed", { cause: refused })),
    );
    expect(failure).toMatchObject({
      kind: "connection-refused",
      retryable: true,
      detail: "connect ECONNREFUSED 127.0.0.1:9",
    });
  });

  test("DNS failures and resets are retryable network errors", () => {
    const notFound = Object.assign(new Error("getaddrinfo ENOTFOUND api.example.com"), {
      code: "ENOTFOUND",
    });
    expect(classifyProviderError(new TypeError("fetch failed", { cause: notFound }))).toMatchObject(
      { kind: "network", retryable: true },
    );
  });

  test("idle timeouts and undici timeouts are retryable timeouts", () => {
    expect(classifyProviderError(new ProviderTimeoutError(5000))).toMatchObject({
      kind: "timeout",
      retryable: true,
    });
    const headersTimeout = Object.assign(new Error("Headers Timeout Error"), {
      code: "UND_ERR_HEADERS_TIMEOUT",
    });
    expect(
      classifyProviderError(new TypeError("fetch failed", { cause: headersTimeout })),
    ).toMatchObject({ kind: "timeout" });
  });

  test("errors building the request are terminal; plain error objects from a stream are retryable", () => {
    expect(
      classifyProviderError(new InvalidPromptError({ prompt: "", message: "bad prompt" })),
    ).toMatchObject({
      kind: "unknown",
      retryable: false,
    });
    expect(
      classifyProviderError({ type: "overloaded_error", message: "Overloaded" }),
    ).toMatchObject({
      kind: "stream-error",
      retryable: true,
    });
    expect(classifyProviderError(new RangeError("bug"))).toMatchObject({
      kind: "unknown",
      retryable: false,
    });
  });
});

describe("describeProviderFailure", () => {
  const openai = { provider: "openai", model: "gpt-4.1-mini", baseUrl: undefined } as const;

  test("401 says which variable to set", () => {
    const failure = classifyProviderError(apiError(401));
    expect(describeProviderFailure(failure, { ...openai, attempts: 1 })).toBe(
      'openai: 401 Unauthorized — the API key was rejected; set ROOST_OPENAI_API_KEY to a valid key (provider said: "HTTP 401")',
    );
  });

  test("rate limits say how many attempts were made", () => {
    const failure = classifyProviderError(apiError(429));
    expect(describeProviderFailure(failure, { ...openai, attempts: 4 })).toContain(
      "openai: rate limited after 4 attempts; try again later",
    );
  });

  test("a refused local server is asked about by address", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    const failure = classifyProviderError(apiError(undefined, undefined, refused));
    const context = {
      provider: "openai-compatible",
      model: "llama3.2",
      baseUrl: "http://127.0.0.1:11434/v1",
      attempts: 4,
    } as const;
    expect(describeProviderFailure(failure, context)).toBe(
      "openai-compatible at http://127.0.0.1:11434/v1: connection refused after 4 attempts — is the server running? (start it, or fix ROOST_OPENAI_COMPATIBLE_BASE_URL)",
    );
  });

  describe("400: quoted, and put on the model only in the provider's own words", () => {
    function badRequest(message: string): string {
      const error = new APICallError({
        message,
        url: "https://api.example.com/v1/chat/completions",
        requestBodyValues: {},
        statusCode: 400,
      });
      return describeProviderFailure(classifyProviderError(error), { ...openai, attempts: 1 });
    }

    test("a request problem quotes the provider, says retrying will not help, and blames no model", () => {
      const message = badRequest(
        "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 48 instead.",
      );
      expect(message).toBe(
        `openai: 400 Bad Request — the provider rejected the request (provider said: "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 48 instead."); retrying will not help. If the message names a setting (model, key, option), fix that setting; if it names the conversation (messages, tool calls, tool results), this is a bug in Roost — please report it with this message`,
      );
      expect(message).not.toMatch(/support tools|does not accept/);
    });

    test("'does not support tools' from the provider is put on the model", () => {
      expect(badRequest("registry.ollama.ai/library/gemma:2b does not support tools")).toContain(
        'the provider says model "gpt-4.1-mini" does not support tools',
      );
    });

    test("OpenAI's 'image_url is only supported by certain models' says the model takes no images", () => {
      expect(
        badRequest("Invalid content type. image_url is only supported by certain models."),
      ).toContain('the provider says model "gpt-4.1-mini" does not accept images');
    });

    test("a context-length complaint says to start a new conversation", () => {
      expect(
        badRequest(
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        ),
      ).toContain("start a new conversation or choose a model with a larger context window");
    });

    test("a 400 saying the key is wrong (xAI's way) is an unauthorized key", () => {
      expect(badRequest("Incorrect API key provided: xa***Gf.")).toContain(
        "400 Bad Request — the API key was rejected; set ROOST_OPENAI_API_KEY",
      );
    });
  });
});
