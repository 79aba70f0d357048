import { describe, expect, test } from "vitest";
import {
  createCallIdMapper,
  isProviderSafeCallId,
  providerSafeCallId,
  providerSafeCallIdPattern,
} from "./call-ids.ts";

const journalId = "inv_1gdJBtdVEcM942bjcDmb1c1khoaJe11Hb:turn:0:0:0";

describe("providerSafeCallId", () => {
  test("the loop's journal id (48 characters, with colons) becomes an id every provider accepts", () => {
    expect(journalId).toHaveLength(48);
    expect(isProviderSafeCallId(journalId)).toBe(false);
    const id = providerSafeCallId(journalId);
    expect(id).toMatch(providerSafeCallIdPattern);
    expect(id).toMatch(/^call_[A-Za-z0-9_-]{24}$/);
    expect(id.length).toBeLessThanOrEqual(40);
  });

  test("a replay of the same step gets the same id; other steps get other ids", () => {
    expect(providerSafeCallId(journalId)).toBe(providerSafeCallId(journalId));
    const ids = new Set(
      Array.from({ length: 1000 }, (_, index) => providerSafeCallId(`inv_x:turn:${index}:0:0`)),
    );
    expect(ids.size).toBe(1000);
  });

  test("ids outside the safe alphabet or over 40 characters are not safe", () => {
    expect(isProviderSafeCallId("toolu_01A09q90qw90lq917835lq9")).toBe(true);
    expect(isProviderSafeCallId("call_abc-DEF_123")).toBe(true);
    expect(isProviderSafeCallId("a".repeat(40))).toBe(true);
    expect(isProviderSafeCallId("a".repeat(41))).toBe(false);
    expect(isProviderSafeCallId("call.1")).toBe(false);
    expect(isProviderSafeCallId("")).toBe(false);
  });
});

describe("createCallIdMapper", () => {
  test("keeps safe ids and maps unsafe ones to providerSafeCallId, the same way every time", () => {
    const map = createCallIdMapper(["call_0", journalId]);
    expect(map("call_0")).toBe("call_0");
    expect(map(journalId)).toBe(providerSafeCallId(journalId));
    expect(map(journalId)).toBe(map(journalId));
  });

  test("a stored id equal to the mapped one does not capture it (no two calls share an id)", () => {
    const squatter = providerSafeCallId(journalId);
    const map = createCallIdMapper([squatter, journalId]);
    expect(map(squatter)).toBe(squatter);
    expect(map(journalId)).not.toBe(squatter);
    expect(map(journalId)).toMatch(providerSafeCallIdPattern);
  });
});
