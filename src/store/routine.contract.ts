/** The routines part of the store contract (routine-types.ts RST1–RST6), for SQLite and Postgres. */
import { describe, expect, it } from "vitest";
import type { RoutineWrite, Store } from "./types.ts";

const write = (name: string, overrides: Partial<RoutineWrite> = {}): RoutineWrite => ({
  name,
  instruction: "check the news",
  trigger: { type: "schedule", everyMs: 600_000 },
  target: { kind: "new_conversation" },
  enabled: true,
  misfire: "once",
  budget: null,
  triageModel: null,
  webhookKeyHash: null,
  ...overrides,
});

export function routineStoreContract(
  name: string,
  open: () => Promise<{ store: Store; close: () => Promise<void> }>,
) {
  async function withStore(run: (store: Store) => Promise<void>) {
    const { store, close } = await open();
    try {
      await run(store);
    } finally {
      await close();
    }
  }
  async function seed(store: Store) {
    const account = await store.createAccount({ name: "ada", isAdmin: false });
    const bot = await store.createBot({
      accountId: account.id,
      name: "helper",
      instructions: "",
      model: null,
    });
    return { account, bot };
  }

  describe(`store contract: ${name}: routines`, () => {
    it("sixty concurrent creates leave exactly the bot's 50 routines (RST1 under a race)", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const results = await Promise.allSettled(
          Array.from({ length: 60 }, (_, index) =>
            store.createRoutine({
              ...write(`r${index}`),
              accountId: account.id,
              botId: bot.id,
              maxPerBot: 50,
            }),
          ),
        );
        const refused = results.filter((result) => result.status === "rejected");
        expect(refused).toHaveLength(10);
        for (const result of refused) expect(result.reason).toMatchObject({ code: "conflict" });
        expect(await store.listRoutines(bot.id)).toHaveLength(50);
      }));

    it("a create for another account's bot is not_found and stores nothing (RST6)", () =>
      withStore(async (store) => {
        const { bot } = await seed(store);
        const eve = await store.createAccount({ name: "eve", isAdmin: false });
        await expect(
          store.createRoutine({ ...write("x"), accountId: eve.id, botId: bot.id, maxPerBot: 50 }),
        ).rejects.toMatchObject({ code: "not_found" });
        expect(await store.listRoutines(bot.id)).toEqual([]);
      }));

    it("changes that touch the schedule bump the generation; others keep it (RST2)", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const routine = await store.createRoutine({
          ...write("g", { budget: { tokensPerDay: 1000 }, triageModel: "openai:gpt-4.1-mini" }),
          accountId: account.id,
          botId: bot.id,
          maxPerBot: 50,
        });
        expect(routine.generation).toBe(1);
        await store.markRoutineArmed(routine.id, 1, 12345);
        const renamed = await store.updateRoutine(
          routine.id,
          { name: "g2", reschedule: false },
          account.id,
        );
        expect(renamed).toMatchObject({ generation: 1, name: "g2", nextRunAt: 12345 });
        const disabled = await store.updateRoutine(
          routine.id,
          { enabled: false, reschedule: true },
          account.id,
        );
        expect(disabled).toMatchObject({ generation: 2, enabled: false, nextRunAt: null });
        // A stale arming changes nothing.
        await store.markRoutineArmed(routine.id, 1, 999);
        expect(await store.getRoutine(routine.id)).toMatchObject({
          armedGeneration: 1,
          nextRunAt: null,
          budget: { tokensPerDay: 1000 },
          triageModel: "openai:gpt-4.1-mini",
        });
        const audit = await store.listAudit({ accountId: account.id });
        expect(audit.map((entry) => entry.action)).toEqual([
          "routine.update",
          "routine.update",
          "routine.create",
        ]);
      }));

    it("lists enabled schedule routines the scheduler has not armed at their generation", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const base = { accountId: account.id, botId: bot.id, maxPerBot: 50 };
        const armed = await store.createRoutine({ ...write("armed"), ...base });
        const unarmed = await store.createRoutine({ ...write("unarmed"), ...base });
        await store.createRoutine({ ...write("off", { enabled: false }), ...base });
        await store.createRoutine({
          ...write("hook", { trigger: { type: "webhook" }, webhookKeyHash: "ab" }),
          ...base,
        });
        await store.markRoutineArmed(armed.id, 1, 1);
        expect((await store.listUnarmedRoutines(10)).map((routine) => routine.id)).toEqual([
          unarmed.id,
        ]);
      }));

    it("a run is stored once per id, with its new conversation, even when begun concurrently (RST3)", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const routine = await store.createRoutine({
          ...write("r"),
          accountId: account.id,
          botId: bot.id,
          maxPerBot: 50,
        });
        const begin = () =>
          store.beginRoutineRun({
            id: "rrun_1",
            routineId: routine.id,
            accountId: account.id,
            kind: "schedule",
            scheduledAt: 1000,
            status: "running",
            conversation: { create: { botId: bot.id, title: "run" } },
            keepRuns: 20,
          });
        const results = await Promise.all([begin(), begin(), begin()]);
        expect(results.filter((result) => result.created)).toHaveLength(1);
        expect(new Set(results.map((result) => result.run.conversationId)).size).toBe(1);
        expect(await store.listConversations(account.id, { botId: bot.id })).toHaveLength(1);
        await store.finishRoutineRun({ id: "rrun_1", status: "replied" });
        // Set once: a later finish changes nothing.
        await store.finishRoutineRun({ id: "rrun_1", status: "failed", error: "late" });
        expect(await store.getRoutineRun("rrun_1")).toMatchObject({
          status: "replied",
          error: null,
          scheduledAt: 1000,
        });
      }));

    it("keeps the newest 20 runs of a routine (RST4)", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const routine = await store.createRoutine({
          ...write("r"),
          accountId: account.id,
          botId: bot.id,
          maxPerBot: 50,
        });
        for (let index = 0; index < 25; index++)
          await store.beginRoutineRun({
            id: `rrun_${String(index).padStart(2, "0")}`,
            routineId: routine.id,
            accountId: account.id,
            kind: "schedule",
            scheduledAt: index,
            status: "missed",
            conversation: null,
            keepRuns: 20,
          });
        const runs = await store.listRoutineRuns(routine.id, 100);
        expect(runs).toHaveLength(20);
        expect(runs[0]!.id).toBe("rrun_24");
        expect(runs.at(-1)!.id).toBe("rrun_05");
        expect(runs.every((run) => run.status === "missed" && run.conversationId === null)).toBe(
          true,
        );
      }));

    it("deleting a routine removes its runs; deleting its bot removes both", () =>
      withStore(async (store) => {
        const { account, bot } = await seed(store);
        const base = { accountId: account.id, botId: bot.id, maxPerBot: 50 };
        const one = await store.createRoutine({ ...write("one"), ...base });
        const two = await store.createRoutine({ ...write("two"), ...base });
        for (const routine of [one, two])
          await store.beginRoutineRun({
            id: `run-${routine.id}`,
            routineId: routine.id,
            accountId: account.id,
            kind: "manual",
            scheduledAt: null,
            status: "missed",
            conversation: null,
            keepRuns: 20,
          });
        await store.deleteRoutine(one.id, account.id);
        expect(await store.getRoutine(one.id)).toBeUndefined();
        expect(await store.getRoutineRun(`run-${one.id}`)).toBeUndefined();
        await expect(store.deleteRoutine(one.id, account.id)).rejects.toMatchObject({
          code: "not_found",
        });
        await store.deleteBot({ id: bot.id, actorAccountId: account.id });
        expect(await store.getRoutine(two.id)).toBeUndefined();
        expect(await store.getRoutineRun(`run-${two.id}`)).toBeUndefined();
      }));

    it("keeps the account's timezone and the absence pause; pausing twice keeps the first time", () =>
      withStore(async (store) => {
        const { account } = await seed(store);
        expect(await store.getRoutineAccountSettings(account.id)).toEqual({
          timezone: null,
          routinesPausedAt: null,
        });
        await store.setAccountTimezone(account.id, "Europe/Berlin");
        expect(await store.setRoutinesPaused(account.id, 100)).toBe(true);
        expect(await store.setRoutinesPaused(account.id, 200)).toBe(false);
        expect(await store.getRoutineAccountSettings(account.id)).toEqual({
          timezone: "Europe/Berlin",
          routinesPausedAt: 100,
        });
        expect(await store.setRoutinesPaused(account.id, null)).toBe(true);
        expect(await store.setRoutinesPaused(account.id, null)).toBe(false);
        expect(await store.lastAccountActivity(account.id)).toBe(account.createdAt);
        const token = await store.createApiToken({
          accountId: account.id,
          name: "t",
          tokenHash: "h",
        });
        await store.touchApiToken(token.id, account.createdAt + 5000);
        expect(await store.lastAccountActivity(account.id)).toBe(account.createdAt + 5000);
      }));
  });
}
