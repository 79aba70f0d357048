import { describe, expect, it } from "vitest";
import { createBackoff } from "./backoff.ts";

function scripted(minUptimeMs = 10_000) {
  let clock = 0;
  const backoff = createBackoff({
    initialDelayMs: 100,
    maxDelayMs: 1000,
    factor: 2,
    minUptimeMs,
    now: () => clock,
    random: () => 0.999_999, // the top of each jitter window
  });
  return { backoff, advance: (ms: number) => (clock += ms) };
}

describe("backoff", () => {
  it("grows exponentially up to the maximum", () => {
    const { backoff } = scripted();
    expect([1, 2, 3, 4, 5, 6].map(() => backoff.nextDelayMs())).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
  });

  it("jitters each delay between half the ceiling and the ceiling", () => {
    const low = createBackoff({ initialDelayMs: 100, random: () => 0 });
    const high = createBackoff({ initialDelayMs: 100, random: () => 0.999_999 });
    expect(low.nextDelayMs()).toBe(50);
    expect(high.nextDelayMs()).toBe(100);
  });

  it("resets after a connection stayed up for the minimum uptime", () => {
    const { backoff, advance } = scripted(10_000);
    backoff.nextDelayMs();
    backoff.nextDelayMs();
    backoff.nextDelayMs();
    backoff.connected();
    advance(10_000);
    expect(backoff.nextDelayMs()).toBe(100);
    expect(backoff.attempt).toBe(1);
  });

  it("does not reset when the connection dropped before the minimum uptime", () => {
    const { backoff, advance } = scripted(10_000);
    backoff.nextDelayMs(); // 100
    backoff.nextDelayMs(); // 200
    backoff.connected();
    advance(9_999);
    expect(backoff.nextDelayMs()).toBe(400);
    // A connection counts only once: a failed dial after it keeps growing.
    advance(60_000);
    expect(backoff.nextDelayMs()).toBe(800);
  });
});
