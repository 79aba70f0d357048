/** Schedule triggers (schedule.ts SCH1–SCH3): cron in a timezone, presets, everyMs, the minimum interval. */
import { describe, expect, it } from "vitest";
import { cronOf, nextSlot, slotsBetween, validateSchedule } from "./schedule.ts";

const fiveMinutes = 300_000;

describe("schedule triggers", () => {
  it("cron runs in the routine's timezone (09:00 Berlin is 08:00 UTC in winter)", () => {
    const after = Date.parse("2026-12-01T00:00:00Z"); // a Tuesday
    const next = nextSlot(
      { type: "schedule", cron: "0 9 * * 1-5", timezone: "Europe/Berlin" },
      "Europe/Berlin",
      0,
      after,
    );
    expect(new Date(next!).toISOString()).toBe("2026-12-01T08:00:00.000Z");
  });

  it("presets become cron", () => {
    expect(cronOf({ type: "schedule", preset: "hourly" })).toBe("0 * * * *");
    expect(cronOf({ type: "schedule", preset: "daily", at: "07:30" })).toBe("30 7 * * *");
    expect(cronOf({ type: "schedule", preset: "weekdays" })).toBe("0 9 * * 1-5");
    expect(cronOf({ type: "schedule", preset: "weekly", day: "fri", at: "17:00" })).toBe(
      "0 17 * * 5",
    );
    expect(cronOf({ type: "schedule", preset: "monthly", dayOfMonth: 15 })).toBe("0 9 15 * *");
  });

  it("everyMs counts from the anchor, strictly after the given time (SCH2)", () => {
    const trigger = { type: "schedule" as const, everyMs: 1000 };
    expect(nextSlot(trigger, "UTC", 10_000, 10_000)).toBe(11_000);
    expect(nextSlot(trigger, "UTC", 10_000, 12_500)).toBe(13_000);
    expect(nextSlot(trigger, "UTC", 10_000, 13_000)).toBe(14_000);
  });

  it("refuses schedules closer than the minimum interval, saying how far apart runs must be (SCH1)", () => {
    expect(() =>
      validateSchedule({ type: "schedule", cron: "* * * * *" }, "UTC", fiveMinutes),
    ).toThrow(/at least 5 minutes apart/);
    expect(() =>
      validateSchedule({ type: "schedule", everyMs: 60_000 }, "UTC", fiveMinutes),
    ).toThrow(/everyMs >= 300000/);
    // A cron that is mostly sparse but bunches once (minutes 0 and 1) is refused too.
    expect(() =>
      validateSchedule({ type: "schedule", cron: "0,1 9 * * *" }, "UTC", fiveMinutes),
    ).toThrow(/60 s apart/);
    expect(() =>
      validateSchedule({ type: "schedule", cron: "*/5 * * * *" }, "UTC", fiveMinutes),
    ).not.toThrow();
    // Lowered for tests (ROOST_ROUTINE_MIN_INTERVAL_MS): seconds-level cron is accepted.
    expect(() =>
      validateSchedule({ type: "schedule", cron: "*/2 * * * * *" }, "UTC", 1000),
    ).not.toThrow();
  });

  it("refuses bad cron, unknown timezones and bad times with a message that says how to fix them", () => {
    expect(() => validateSchedule({ type: "schedule", cron: "every day" }, "UTC", 1)).toThrow(
      /not a cron expression.*"0 9 \* \* 1-5"/,
    );
    expect(() =>
      validateSchedule({ type: "schedule", cron: "0 9 * * *" }, "Mars/Olympus", 1),
    ).toThrow(/IANA timezone/);
    expect(() => validateSchedule({ type: "schedule", cron: "0 0 30 2 *" }, "UTC", 1)).toThrow();
  });

  it("lists missed slots bounded, with the total (SCH3)", () => {
    const listed = slotsBetween({ type: "schedule", everyMs: 1000 }, "UTC", 0, 0, 100_000, 20);
    expect(listed.total).toBe(100);
    expect(listed.slots).toHaveLength(20);
    expect(listed.slots.at(-1)).toBe(100_000);
    const cron = slotsBetween(
      { type: "schedule", cron: "0 * * * *" },
      "UTC",
      0,
      Date.parse("2026-01-01T00:00:00Z"),
      Date.parse("2026-01-02T00:00:00Z"),
      5,
    );
    expect(cron.total).toBe(24);
    expect(cron.slots.map((slot) => new Date(slot).toISOString().slice(11, 16))).toEqual([
      "20:00",
      "21:00",
      "22:00",
      "23:00",
      "00:00",
    ]);
  });
});
