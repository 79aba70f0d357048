/** The limiters on their own, with a scripted clock: the arithmetic the API's flood tests rely on. */
import { describe, expect, it } from "vitest";
import { createRequestLimiter, createStreamLimiter } from "./limits.ts";

describe("request limiter (API3)", () => {
  it("refills at the rate, never above the burst, and says how long to wait, rounded up", () => {
    let now = 0;
    const limiter = createRequestLimiter(
      { requestsPerMinute: 30, requestBurst: 2, eventStreamsPerAccount: 1 },
      () => now,
    );
    limiter.take("a");
    limiter.take("a");
    expect(() => limiter.take("a")).toThrow(
      expect.objectContaining({ code: "rate_limited", retryAfterMs: 2000 }),
    );
    now += 500; // a quarter of a request back: still 1.5 s to wait, told as 2 s
    expect(() => limiter.take("a")).toThrow(
      expect.objectContaining({ retryAfterMs: 1500, details: { retryAfterSeconds: 2 } }),
    );
    now += 1500;
    limiter.take("a");
    now += 3_600_000;
    limiter.take("a");
    limiter.take("a");
    expect(() => limiter.take("a")).toThrow(expect.objectContaining({ code: "rate_limited" }));
    limiter.take("b"); // another key has its own bucket
    limiter.forget("a");
    limiter.take("a"); // a forgotten key starts full
  });
});

describe("stream limiter (API3)", () => {
  it("refuses the slot over the limit and gives a slot back exactly once, however often released", () => {
    const limiter = createStreamLimiter({
      requestsPerMinute: 0,
      requestBurst: 1,
      eventStreamsPerAccount: 2,
    });
    const first = limiter.acquire("acct");
    limiter.acquire("acct");
    expect(() => limiter.acquire("acct")).toThrow(
      expect.objectContaining({ code: "rate_limited", retryAfterMs: 10_000 }),
    );
    limiter.acquire("other");
    first();
    first(); // an end and an abort of the same stream
    expect(limiter.open("acct")).toBe(1);
    limiter.acquire("acct");
    expect(() => limiter.acquire("acct")).toThrow(
      expect.objectContaining({ code: "rate_limited" }),
    );
  });
});
