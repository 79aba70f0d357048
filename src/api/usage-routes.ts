/**
 * Usage and budgets (docs/api.md "Usage and budgets", docs/usage.md): what the caller's bots used
 * and cost, and each bot's spend cap.
 *
 * Invariants:
 *   USEAPI1 every route reads and writes the caller's own usage and bots only: another account's
 *           bot answers 404 exactly like a missing one, and `GET /v1/usage` sums only records
 *           billed to the caller (USE2).
 *   USEAPI2 a budget is validated whole before anything is stored (parseBudget): a bad one is a
 *           400 that names the limit and says how to fix it, and the stored budget is unchanged.
 *   USEAPI3 `PUT` replaces the whole budget (a limit left out is removed) and is audited; turns
 *           parked at the old budget check again at once (USG4).
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import type { Account, Store } from "../store/index.ts";
import { ownBotOf } from "./ownership.ts";
import { parseBudget, periodsAt, type UsageService } from "../usage/index.ts";
import { invalidRequest, readJson, readQuery } from "./validation.ts";

/** The longest range one report covers. */
const maxRangeMs = 366 * 86_400_000;

const isoTime = (name: string) =>
  z.string().refine(
    (value) =>
      // A time needs its zone: without one, Date.parse would read it in the server's own.
      /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(value) &&
      !Number.isNaN(Date.parse(value)) &&
      // Date.parse rolls 2026-02-30 over into March: the day must exist.
      new Date(`${value.slice(0, 10)}T00:00:00Z`).toISOString().startsWith(value.slice(0, 10)),
    {
      error: `${name} must be a UTC date or a time with its zone in ISO 8601, e.g. 2026-01-31 or 2026-01-31T12:00:00Z`,
    },
  );

const usageQuery = z.strictObject({
  groupBy: z.enum(["bot", "routine", "trigger", "day"], {
    error: "groupBy must be one of bot, routine, trigger, day",
  }),
  from: isoTime("from").optional(),
  to: isoTime("to").optional(),
});

type UsageApp = Hono<{ Variables: { account: Account } }>;

export function registerUsageRoutes(
  app: UsageApp,
  deps: { store: Store; usage: UsageService; clock?: () => number },
): void {
  const { store, usage } = deps;
  const clock = deps.clock ?? Date.now;
  // USEAPI1
  const ownBot = (context: Context<{ Variables: { account: Account } }>, id: string) =>
    ownBotOf(store, context.get("account").id, id);

  app.get("/v1/usage", async (context) => {
    const query = readQuery(context, usageQuery);
    const now = clock();
    // Default: this month so far (UTC), through now.
    const fromMs = query.from === undefined ? periodsAt(now).month.fromMs : Date.parse(query.from);
    const toMs = query.to === undefined ? now + 1 : Date.parse(query.to);
    const problem =
      toMs <= fromMs
        ? "to must be after from"
        : toMs - fromMs > maxRangeMs
          ? "the range from..to may span at most 366 days; ask for several ranges"
          : undefined;
    if (problem !== undefined) throw invalidRequest([{ path: "to", message: problem }]);
    return context.json(await usage.report(context.get("account").id, query.groupBy, fromMs, toMs));
  });

  app.get("/v1/bots/:id/budget", async (context) => {
    const bot = await ownBot(context, context.req.param("id"));
    return context.json(await usage.botBudget(bot.id));
  });

  app.put("/v1/bots/:id/budget", async (context) => {
    const account = context.get("account");
    const bot = await ownBot(context, context.req.param("id"));
    const budget = parseBudget(await readJson(context, z.unknown())); // USEAPI2
    const view = await usage.setBotBudget(bot.id, budget);
    await store.audit({
      accountId: account.id,
      action: "bot.budget",
      target: bot.id,
      detail: { budget },
    });
    return context.json(view);
  });
}
