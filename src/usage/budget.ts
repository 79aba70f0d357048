/**
 * Budgets: validating one, the periods its limits count over, and which limit a bot's or a
 * routine's usage has reached (docs/usage.md#budgets).
 *
 * Invariants:
 *   BUD1 periods are calendar days and months in UTC: a day's limit counts from 00:00 UTC, a
 *        month's from the 1st, 00:00 UTC; a parked turn's timer ends at the next such boundary.
 *   BUD2 a limit is reached when what was used in its period is at or above it; the next model
 *        call waits. A call already running is never cut short (its size is not known before it).
 *   BUD3 a cost limit counts priced calls only (a model without a price adds tokens, never cost:
 *        PRICE1); a bot on an unpriced model needs a token limit to be capped.
 */
import { InvalidRequestError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import type { UsageTotals } from "../store/index.ts";

export const budgetLimits = [
  "tokensPerDay",
  "tokensPerMonth",
  "costPerDay",
  "costPerMonth",
] as const;
const maxTokens = 1e12;
const maxCost = 1e9;

/** An invalid_request with the API's one issue shape (`details.issues`). */
function invalid(path: string, message: string): InvalidRequestError {
  return new InvalidRequestError(message, { issues: [{ path, message }] });
}

/**
 * Checks a budget from a request; an invalid_request says what to fix (routines validates a
 * routine's `budget` with it too). `{}` = no limits; a limit given as null is left out.
 */
export function parseBudget(input: unknown, what = "budget"): Api.Budget {
  if (typeof input !== "object" || input === null || Array.isArray(input))
    throw invalid(
      "",
      `${what} must be an object such as {"tokensPerDay": 200000} or {"costPerMonth": 20} ({} removes every limit)`,
    );
  const budget: Api.Budget = {};
  for (const [key, value] of Object.entries(input)) {
    if (!(budgetLimits as readonly string[]).includes(key))
      throw invalid(
        key,
        `${what}: unknown limit ${JSON.stringify(key)} (limits: ${budgetLimits.join(", ")})`,
      );
    const limit = key as Api.BudgetLimit;
    if (value === null) continue; // null leaves the limit out
    if (limit.startsWith("tokens")) {
      if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > maxTokens)
        throw invalid(
          limit,
          `${what}: ${limit} must be a whole number of tokens from 1 to ${maxTokens}, got ${JSON.stringify(value)} (leave it out for no limit)`,
        );
    } else if (
      typeof value !== "number" ||
      !Number.isFinite(value) ||
      value <= 0 ||
      value > maxCost
    )
      throw invalid(
        limit,
        `${what}: ${limit} must be an amount above 0 and at most ${maxCost}, got ${JSON.stringify(value)} (leave it out for no limit)`,
      );
    budget[limit] = value;
  }
  for (const [day, month] of [
    ["tokensPerDay", "tokensPerMonth"],
    ["costPerDay", "costPerMonth"],
  ] as const) {
    const daily = budget[day];
    const monthly = budget[month];
    if (daily !== undefined && monthly !== undefined && daily > monthly)
      throw invalid(
        day,
        `${what}: ${day} (${daily}) is more than ${month} (${monthly}); the monthly limit would always stop the bot first: lower ${day} or raise ${month}`,
      );
  }
  return budget;
}

/** BUD1: the UTC day and month around `now`. */
export function periodsAt(now: number): {
  day: { fromMs: number; toMs: number };
  month: { fromMs: number; toMs: number };
} {
  const date = new Date(now);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  const dayStart = Date.UTC(year, month, date.getUTCDate());
  return {
    day: { fromMs: dayStart, toMs: dayStart + 86_400_000 },
    month: { fromMs: Date.UTC(year, month, 1), toMs: Date.UTC(year, month + 1, 1) },
  };
}

export interface ReachedLimit {
  limit: Api.BudgetLimit;
  allowed: number;
  used: number;
  /** When the limit's period ends (BUD1). */
  resetsAtMs: number;
}

/** Tokens counted against a limit: what went in and what came out. */
export const tokensOf = (totals: UsageTotals) => totals.inputTokens + totals.outputTokens;

/**
 * BUD2, BUD3: the first limit of `budget` the usage has reached; monthly limits first (raising
 * the daily one would not help then). Null when every limit leaves room.
 */
export function reachedLimit(
  budget: Api.Budget,
  usage: { day: UsageTotals; month: UsageTotals },
  periods: ReturnType<typeof periodsAt>,
): ReachedLimit | null {
  const checks: [Api.BudgetLimit, number, number][] = [
    ["tokensPerMonth", tokensOf(usage.month), periods.month.toMs],
    ["costPerMonth", usage.month.cost ?? 0, periods.month.toMs],
    ["tokensPerDay", tokensOf(usage.day), periods.day.toMs],
    ["costPerDay", usage.day.cost ?? 0, periods.day.toMs],
  ];
  for (const [limit, used, resetsAtMs] of checks) {
    const allowed = budget[limit];
    if (allowed !== undefined && used >= allowed) return { limit, allowed, used, resetsAtMs };
  }
  return null;
}

/** Whether a budget has any limit. */
export const hasLimits = (budget: Api.Budget | null): budget is Api.Budget =>
  budget !== null && budgetLimits.some((limit) => budget[limit] !== undefined);
