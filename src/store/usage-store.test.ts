/**
 * The usage part of the store (usage-types.ts, USE1–USE3) on SQLite and on Postgres: the same
 * cases run against both real databases.
 */
import { describe, expect, it } from "vitest";
import { storeOpeners } from "./testing/openers.ts";
import type { Store, UsageRecord } from "./types.ts";

const openers = await storeOpeners("roost-usage-");

const day = Date.UTC(2026, 0, 15);
function record(overrides: Partial<UsageRecord> & { id: string }): UsageRecord {
  return {
    accountId: "acct_a",
    botId: "bot_1",
    conversationId: "conv_1",
    turnId: "turn_1",
    callIndex: 0,
    triggerKind: "chat",
    routineId: null,
    runId: null,
    personId: "acct_a",
    modelSpec: "openai:gpt-4.1-mini",
    model: "gpt-4.1-mini",
    inputTokens: 100,
    outputTokens: 10,
    cachedTokens: null,
    cost: 0.5,
    createdAt: day + 1000,
    ...overrides,
  };
}

for (const [name, open] of openers) {
  describe.runIf(open !== undefined)(`usage store: ${name}`, () => {
    async function withStore(run: (store: Store) => Promise<void>) {
      const { store, close } = await open!();
      try {
        await run(store);
      } finally {
        await close();
      }
    }

    it("USE1: recording the same call twice (a replayed step) counts it once", () =>
      withStore(async (store) => {
        await store.recordUsage(record({ id: "turn_1:0" }));
        await store.recordUsage(record({ id: "turn_1:0", inputTokens: 9999 }));
        const totals = await store.usageTotals({ botId: "bot_1" }, day, day + 86_400_000);
        expect(totals).toEqual({
          calls: 1,
          inputTokens: 100,
          outputTokens: 10,
          cachedTokens: 0,
          cost: 0.5,
          unpricedCalls: 0,
        });
      }));

    it("USE2: an unpriced call adds tokens but no cost, and is counted as unpriced", () =>
      withStore(async (store) => {
        await store.recordUsage(record({ id: "a", cost: 0.25 }));
        await store.recordUsage(record({ id: "b", cost: null, inputTokens: 7, outputTokens: 3 }));
        const totals = await store.usageTotals({ botId: "bot_1" }, day, day + 86_400_000);
        expect(totals).toMatchObject({ calls: 2, inputTokens: 107, cost: 0.25, unpricedCalls: 1 });
        await store.recordUsage(record({ id: "c", botId: "bot_2", cost: null }));
        expect(
          (await store.usageTotals({ botId: "bot_2" }, day, day + 86_400_000)).cost,
        ).toBeNull();
      }));

    it("USE2: groups read only the given account's records, by bot, routine, trigger and day", () =>
      withStore(async (store) => {
        await store.recordUsage(record({ id: "1" }));
        await store.recordUsage(
          record({
            id: "2",
            botId: "bot_2",
            triggerKind: "routine",
            routineId: "rtn_1",
            runId: "run_1",
          }),
        );
        await store.recordUsage(record({ id: "3", createdAt: day + 86_400_000 + 5 }));
        await store.recordUsage(record({ id: "other", accountId: "acct_b", botId: "bot_b" }));
        const range = [day, day + 3 * 86_400_000] as const;
        const keys = async (groupBy: "bot" | "routine" | "trigger" | "day") =>
          (await store.usageGroups("acct_a", groupBy, ...range)).map((group) => [
            group.key,
            group.calls,
          ]);
        expect(await keys("bot")).toEqual([
          ["bot_1", 2],
          ["bot_2", 1],
        ]);
        expect(await keys("routine")).toEqual([["rtn_1", 1]]);
        expect(await keys("trigger")).toEqual([
          ["chat", 2],
          ["routine", 1],
        ]);
        expect(await keys("day")).toEqual([
          ["2026-01-15", 2],
          ["2026-01-16", 1],
        ]);
        expect(await store.usageGroups("acct_nobody", "bot", ...range)).toEqual([]);
        const runs = await store.usageOfRuns(["run_1", "run_missing"]);
        expect([...runs.keys()]).toEqual(["run_1"]);
        expect(runs.get("run_1")).toMatchObject({ inputTokens: 100, outputTokens: 10 });
      }));

    it("USE4: the day and month sums equal the records' sums, per bot and per routine", () =>
      withStore(async (store) => {
        const next = day + 86_400_000;
        await store.recordUsage(record({ id: "1", routineId: "rtn_1", runId: "run_1" }));
        await store.recordUsage(record({ id: "1", routineId: "rtn_1", runId: "run_1" })); // replay
        await store.recordUsage(record({ id: "2", cost: null, createdAt: day + 86_399_999 }));
        await store.recordUsage(record({ id: "3", createdAt: next }));
        await store.recordUsage(record({ id: "4", createdAt: Date.UTC(2026, 1, 1) })); // February
        const expectSame = async (scope: { botId: string } | { routineId: string }, at: number) => {
          for (const period of ["day", "month"] as const) {
            const fromMs =
              period === "day"
                ? at - (at % 86_400_000)
                : Date.UTC(2026, new Date(at).getUTCMonth(), 1);
            const toMs =
              period === "day"
                ? fromMs + 86_400_000
                : Date.UTC(2026, new Date(at).getUTCMonth() + 1, 1);
            expect(await store.periodUsage(scope, period, at), `${period} ${at}`).toEqual(
              await store.usageTotals(scope, fromMs, toMs),
            );
          }
        };
        await expectSame({ botId: "bot_1" }, day + 5);
        await expectSame({ botId: "bot_1" }, next + 5);
        await expectSame({ botId: "bot_1" }, Date.UTC(2026, 1, 3));
        await expectSame({ routineId: "rtn_1" }, day);
        expect(await store.periodUsage({ botId: "bot_1" }, "day", day)).toMatchObject({
          calls: 2,
          cost: 0.5,
          unpricedCalls: 1,
        });
        expect(await store.periodUsage({ botId: "bot_1" }, "month", day)).toMatchObject({
          calls: 3,
        });
        expect(await store.periodUsage({ botId: "bot_other" }, "month", day)).toMatchObject({
          calls: 0,
          cost: null,
        });
      }));

    it("race: calls recorded at once (and the same call twice at once) sum exactly", () =>
      withStore(async (store) => {
        await Promise.all(
          Array.from({ length: 30 }, (_, index) => [
            store.recordUsage(record({ id: `r${index}` })),
            store.recordUsage(record({ id: `r${index}` })),
          ]).flat(),
        );
        expect(await store.periodUsage({ botId: "bot_1" }, "day", day)).toMatchObject({
          calls: 30,
          inputTokens: 3000,
          outputTokens: 300,
        });
        expect((await store.periodUsage({ botId: "bot_1" }, "day", day)).cost).toBeCloseTo(15, 10);
      }));

    it("a bot's budget is stored, replaced and removed", () =>
      withStore(async (store) => {
        expect(await store.getBotBudget("bot_1")).toBeNull();
        await store.setBotBudget("bot_1", { tokensPerDay: 10 });
        await store.setBotBudget("bot_1", { costPerMonth: 2.5 });
        expect(await store.getBotBudget("bot_1")).toEqual({ costPerMonth: 2.5 });
        await store.setBotBudget("bot_1", null);
        expect(await store.getBotBudget("bot_1")).toBeNull();
      }));

    it("USE3: budget waits are listed by bot or routine and removed only by id", () =>
      withStore(async (store) => {
        const wait = {
          id: "sign_1",
          botId: "bot_1",
          routineId: "rtn_1",
          conversationId: "conv_1",
          turnId: "turn_1",
          createdAt: day,
        };
        await store.addBudgetWait(wait);
        await store.addBudgetWait(wait); // a replayed park step
        expect(await store.listBudgetWaits({ botId: "bot_1" })).toEqual([wait]);
        expect(await store.listBudgetWaits({ routineId: "rtn_1" })).toEqual([wait]);
        expect(await store.listBudgetWaits({ botId: "bot_2" })).toEqual([]);
        await store.deleteBudgetWait("sign_1");
        expect(await store.listBudgetWaits({ botId: "bot_1" })).toEqual([]);
      }));

    it("turnCalledTool finds a tool step of the turn by the tool's name", () =>
      withStore(async (store) => {
        const account = await store.createAccount({ name: "a", isAdmin: false });
        const bot = await store.createBot({
          accountId: account.id,
          name: "b",
          instructions: "",
          model: null,
        });
        const conversation = await store.createConversation({
          accountId: account.id,
          botId: bot.id,
          title: "t",
        });
        await store.appendStep({
          conversationId: conversation.id,
          id: "t1:0:0:result",
          turnId: "t1",
          kind: "tool",
          payload: { name: "escalate", output: "" },
        });
        expect(await store.turnCalledTool(conversation.id, "t1", "escalate")).toBe(true);
        expect(await store.turnCalledTool(conversation.id, "t2", "escalate")).toBe(false);
        expect(await store.turnCalledTool(conversation.id, "t1", "shell")).toBe(false);
      }));
  });
}
