/** Budgets: validation (parseBudget), periods (BUD1) and which limit is reached (BUD2, BUD3). */
import { describe, expect, it } from "vitest";
import type { UsageTotals } from "../store/index.ts";
import { parseBudget, periodsAt, reachedLimit } from "./budget.ts";

const totals = (tokens: number, cost: number | null): UsageTotals => ({
  calls: 1,
  inputTokens: tokens,
  outputTokens: 0,
  cachedTokens: 0,
  cost,
  unpricedCalls: cost === null ? 1 : 0,
});

describe("budgets", () => {
  it("parseBudget keeps the limits given, drops nulls, and refuses the rest", () => {
    expect(parseBudget({ tokensPerDay: 10, costPerMonth: 2.5, tokensPerMonth: null })).toEqual({
      tokensPerDay: 10,
      costPerMonth: 2.5,
    });
    expect(parseBudget({})).toEqual({});
    expect(() => parseBudget(null)).toThrow("must be an object");
    expect(() => parseBudget({ costPerDay: Number.NaN })).toThrow("costPerDay must be an amount");
  });

  it("BUD1: periods are the UTC day and month, the month's end across a year", () => {
    const periods = periodsAt(Date.UTC(2026, 11, 31, 23, 30));
    expect(new Date(periods.day.fromMs).toISOString()).toBe("2026-12-31T00:00:00.000Z");
    expect(new Date(periods.day.toMs).toISOString()).toBe("2027-01-01T00:00:00.000Z");
    expect(new Date(periods.month.fromMs).toISOString()).toBe("2026-12-01T00:00:00.000Z");
    expect(new Date(periods.month.toMs).toISOString()).toBe("2027-01-01T00:00:00.000Z");
  });

  it("BUD2: a limit is reached at or above it; below it nothing is", () => {
    const periods = periodsAt(Date.UTC(2026, 0, 10));
    const usage = (tokens: number) => ({ day: totals(tokens, 0), month: totals(tokens, 0) });
    expect(reachedLimit({ tokensPerDay: 100 }, usage(99), periods)).toBeNull();
    expect(reachedLimit({ tokensPerDay: 100 }, usage(100), periods)).toMatchObject({
      limit: "tokensPerDay",
      allowed: 100,
      used: 100,
      resetsAtMs: periods.day.toMs,
    });
  });

  it("BUD3: a cost limit counts priced calls only", () => {
    const periods = periodsAt(Date.UTC(2026, 0, 10));
    const unpriced = { day: totals(1e9, null), month: totals(1e9, null) };
    expect(reachedLimit({ costPerDay: 0.01 }, unpriced, periods)).toBeNull();
    expect(reachedLimit({ costPerDay: 0.01, tokensPerDay: 1000 }, unpriced, periods)?.limit).toBe(
      "tokensPerDay",
    );
  });
});
