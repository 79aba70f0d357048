/** ROOST_ROUTINE_* and ROOST_WEBHOOK_*: routine settings, resolved once at start. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../errors/index.ts";
import { resolveConfig } from "./index.ts";

describe("ROOST_ROUTINE_*", () => {
  it("defaults: 5 min apart, 60 s grace, 5 catch-ups, 14 days' absence, 64 KiB and 60 calls a minute per webhook", () => {
    expect(resolveConfig({}, {}).routines).toEqual({
      minIntervalMs: 300_000,
      misfireGraceMs: 60_000,
      maxCatchUp: 5,
      absenceMs: 14 * 86_400_000,
      webhookMaxBodyBytes: 65_536,
      webhookPerMinute: 60,
    });
    expect(
      resolveConfig(
        {},
        { ROOST_ROUTINE_MIN_INTERVAL_MS: "1000", ROOST_ROUTINE_ABSENCE_DAYS: "0.5" },
      ).routines,
    ).toMatchObject({ minIntervalMs: 1000, absenceMs: 43_200_000 });
  });

  it("refuses values it cannot use, naming the variable and what it accepts", () => {
    // The minimum interval can only be lowered.
    expect(() => resolveConfig({}, { ROOST_ROUTINE_MIN_INTERVAL_MS: "600000" })).toThrow(
      /ROOST_ROUTINE_MIN_INTERVAL_MS must be a whole number between 100 and 300000/,
    );
    expect(() => resolveConfig({}, { ROOST_ROUTINE_ABSENCE_DAYS: "never" })).toThrow(ConfigError);
    expect(() => resolveConfig({}, { ROOST_ROUTINE_ABSENCE_DAYS: "0" })).toThrow(
      /ROOST_ROUTINE_ABSENCE_DAYS must be a number of days above 0/,
    );
    expect(() => resolveConfig({}, { ROOST_WEBHOOK_MAX_BODY_BYTES: "10" })).toThrow(
      /ROOST_WEBHOOK_MAX_BODY_BYTES/,
    );
  });
});
