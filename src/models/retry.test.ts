import { describe, expect, test } from "vitest";
import { APICallError } from "ai";
import { ModelError } from "../errors/index.ts";
import { backoffDelayMs, defaultRetryOptions, realSleep, retryModelCall } from "./retry.ts";
import type { Sleep } from "./retry.ts";

const context = { provider: "openai", model: "gpt-4.1-mini", baseUrl: undefined } as const;

function httpError(statusCode: number): APICallError {
  return new APICallError({
    message: `HTTP ${statusCode}`,
    url: "https://api.example.com",
    requestBodyValues: {},
    statusCode,
  });
}

describe("backoffDelayMs", () => {
  test("doubles from initialDelayMs, jittered between half and all of it, capped at maxDelayMs", () => {
    const options = { ...defaultRetryOptions, initialDelayMs: 1000, maxDelayMs: 5000 };
    expect([1, 2, 3].map((failed) => backoffDelayMs(failed, options, () => 0))).toEqual([
      500, 1000, 2000,
    ]);
    expect([1, 2, 3].map((failed) => backoffDelayMs(failed, options, () => 1))).toEqual([
      1000, 2000, 4000,
    ]);
    expect(backoffDelayMs(10, options, () => 1)).toBe(5000);
  });
});

describe("retryModelCall", () => {
  test("retries retryable failures and returns the first success", async () => {
    const waits: number[] = [];
    const sleep: Sleep = async (milliseconds) => void waits.push(milliseconds);
    const attempts: number[] = [];
    const result = await retryModelCall(
      async (attempt) => {
        attempts.push(attempt);
        if (attempt < 3) throw httpError(503);
        return "ok";
      },
      { context, sleep, random: () => 0.5 },
    );
    expect(result).toBe("ok");
    expect(attempts).toEqual([1, 2, 3]);
    expect(waits).toEqual([750, 1500]);
  });

  test("a terminal failure is thrown at once as a ModelError with its cause", async () => {
    const cause = httpError(400);
    let calls = 0;
    const error = await retryModelCall(
      async () => {
        calls++;
        throw cause;
      },
      { context },
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).cause).toBe(cause);
    expect((error as ModelError).message).toContain("400 Bad Request");
    expect(calls).toBe(1);
  });

  test("aborting while waiting between attempts rejects with the abort reason", async () => {
    const controller = new AbortController();
    const reason = new Error("stop");
    const pending = retryModelCall(
      async () => {
        setTimeout(() => controller.abort(reason), 10);
        throw httpError(500);
      },
      { context, signal: controller.signal, sleep: realSleep, retry: { initialDelayMs: 60_000 } },
    );
    await expect(pending).rejects.toBe(reason);
  });
});
