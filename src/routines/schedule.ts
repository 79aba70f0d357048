/**
 * Schedule triggers: what a routine's trigger means in time. Cron is parsed by croner (5 fields,
 * or 6 with seconds), in the routine's timezone; presets become cron; `everyMs` counts from the
 * moment the schedule last changed (its anchor).
 *
 * Invariants:
 *   SCH1 a schedule whose runs would come closer than the minimum interval is refused when it is
 *        saved, with a message naming the interval (cron is checked over its next runs).
 *   SCH2 slot times are deterministic: the same trigger, timezone and anchor give the same slots,
 *        so a replayed scheduler computes the same ids.
 *   SCH3 enumerating missed slots is bounded: at most `limit` slots are listed, plus a count.
 */
import { Cron } from "croner";
import { InvalidRequestError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";

export type ScheduleTrigger = Extract<Api.RoutineTrigger, { type: "schedule" }>;

const weekdays: Record<Api.Weekday, number> = {
  sun: 0,
  mon: 1,
  tue: 2,
  wed: 3,
  thu: 4,
  fri: 5,
  sat: 6,
};

/** Runs of a cron schedule checked against the minimum interval (SCH1). */
const intervalCheckRuns = 200;

export function isScheduleTrigger(trigger: Api.RoutineTrigger): trigger is ScheduleTrigger {
  return trigger.type === "schedule";
}

/** The trigger's own timezone, if it names one. */
export function ownTimezone(trigger: ScheduleTrigger): string | undefined {
  return "everyMs" in trigger ? undefined : trigger.timezone;
}

function clock(at: string | undefined): { hour: number; minute: number } {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(at ?? "09:00");
  if (match === null)
    throw new InvalidRequestError(
      `trigger.at must be a time of day as "HH:MM" (24 hours), e.g. "09:00"; got ${JSON.stringify(at)}`,
      { issues: [{ path: "trigger.at", message: "must be HH:MM" }] },
    );
  return { hour: Number(match[1]), minute: Number(match[2]) };
}

/** The cron expression of a cron or preset trigger; undefined for `everyMs`. */
export function cronOf(trigger: ScheduleTrigger): string | undefined {
  if ("everyMs" in trigger) return undefined;
  if ("cron" in trigger) return trigger.cron;
  switch (trigger.preset) {
    case "hourly":
      return `${trigger.minute ?? 0} * * * *`;
    case "daily": {
      const { hour, minute } = clock(trigger.at);
      return `${minute} ${hour} * * *`;
    }
    case "weekdays": {
      const { hour, minute } = clock(trigger.at);
      return `${minute} ${hour} * * 1-5`;
    }
    case "weekly": {
      const { hour, minute } = clock(trigger.at);
      return `${minute} ${hour} * * ${weekdays[trigger.day ?? "mon"]}`;
    }
    case "monthly": {
      const { hour, minute } = clock(trigger.at);
      return `${minute} ${hour} ${trigger.dayOfMonth ?? 1} * *`;
    }
  }
}

export function isValidTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

function parseCron(expression: string, timezone: string): Cron {
  try {
    return new Cron(expression, { timezone, paused: true, mode: "5-or-6-parts" });
  } catch (error) {
    throw new InvalidRequestError(
      `trigger.cron ${JSON.stringify(expression)} is not a cron expression (${(error as Error).message}); use 5 fields "minute hour day month weekday", e.g. "0 9 * * 1-5"`,
      { issues: [{ path: "trigger.cron", message: "not a cron expression" }] },
    );
  }
}

function minutesText(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} minutes` : `${ms} ms`;
}

/** SCH1: throws InvalidRequestError saying how to fix a schedule that is invalid or too frequent. */
export function validateSchedule(
  trigger: ScheduleTrigger,
  timezone: string,
  minIntervalMs: number,
): void {
  if (!isValidTimezone(timezone))
    throw new InvalidRequestError(
      `trigger.timezone must be an IANA timezone name such as Europe/Berlin or UTC, got ${JSON.stringify(timezone)}`,
      { issues: [{ path: "trigger.timezone", message: "unknown timezone" }] },
    );
  if ("everyMs" in trigger) {
    if (trigger.everyMs < minIntervalMs)
      throw new InvalidRequestError(
        `trigger.everyMs is ${trigger.everyMs}: runs must be at least ${minutesText(minIntervalMs)} apart (everyMs >= ${minIntervalMs})`,
        { issues: [{ path: "trigger.everyMs", message: `at least ${minIntervalMs}` }] },
      );
    return;
  }
  const expression = cronOf(trigger)!;
  const cron = parseCron(expression, timezone);
  const runs = cron.nextRuns(intervalCheckRuns, new Date(0));
  if (runs.length === 0)
    throw new InvalidRequestError(
      `trigger.cron ${JSON.stringify(expression)} never runs; check its day and month fields`,
      { issues: [{ path: "trigger.cron", message: "never runs" }] },
    );
  for (let index = 1; index < runs.length; index++) {
    const gap = runs[index]!.getTime() - runs[index - 1]!.getTime();
    if (gap < minIntervalMs)
      throw new InvalidRequestError(
        `trigger.cron ${JSON.stringify(expression)} runs ${Math.round(gap / 1000)} s apart; runs must be at least ${minutesText(minIntervalMs)} apart (e.g. "*/5 * * * *" at most)`,
        { issues: [{ path: "trigger.cron", message: `runs closer than ${minIntervalMs} ms` }] },
      );
  }
}

/** SCH2: the first slot strictly after `after` (epoch ms), or null when there is none. */
export function nextSlot(
  trigger: ScheduleTrigger,
  timezone: string,
  anchorAt: number,
  after: number,
): number | null {
  if ("everyMs" in trigger) {
    const steps = Math.floor((after - anchorAt) / trigger.everyMs) + 1;
    return anchorAt + Math.max(1, steps) * trigger.everyMs;
  }
  const next = parseCron(cronOf(trigger)!, timezone).nextRun(new Date(after));
  return next === null ? null : next.getTime();
}

/** SCH3: slots in (from, to], at most `limit` of them (the latest), and how many there were in all. */
export function slotsBetween(
  trigger: ScheduleTrigger,
  timezone: string,
  anchorAt: number,
  from: number,
  to: number,
  limit: number,
): { slots: number[]; total: number } {
  if ("everyMs" in trigger) {
    const first = nextSlot(trigger, timezone, anchorAt, from)!;
    if (first > to) return { slots: [], total: 0 };
    const total = Math.floor((to - first) / trigger.everyMs) + 1;
    const skip = Math.max(0, total - limit);
    const slots: number[] = [];
    for (let index = skip; index < total; index++) slots.push(first + index * trigger.everyMs);
    return { slots, total };
  }
  const cron = parseCron(cronOf(trigger)!, timezone);
  const slots: number[] = [];
  let total = 0;
  let cursor = cron.nextRun(new Date(from));
  // Counting is bounded too: a minute-level cron over a year is ~100,000 slots at most.
  while (cursor !== null && cursor.getTime() <= to && total < 1_000_000) {
    total++;
    slots.push(cursor.getTime());
    if (slots.length > limit) slots.shift();
    cursor = cron.nextRun(cursor);
  }
  return { slots, total };
}
