/**
 * The usage and budget routes (usage-routes.ts, USEAPI1–USEAPI3): reports and budgets, another
 * account's bots and usage, bad input that stores nothing, a flood of budget writes.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { issueApiToken } from "../auth/index.ts";
import { createEventHub } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import { openStore, type Store, type UsageRecord } from "../store/index.ts";
import { createPriceTable, createUsageService } from "../usage/index.ts";
import { createApi } from "./app.ts";

let dir: string;
let store: Store;
let app: ReturnType<typeof createApi>;
let alice: { id: string; token: string; botId: string };
let bob: { id: string; token: string; botId: string };
let released: string[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "roost-usage-api-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  released = [];
  const events = createEventHub();
  app = createApi({
    store,
    events,
    kick: async () => undefined,
    interrupt: () => false,
    health: async () => ({ ok: true, checks: {} }),
    checkModel: () => undefined,
    defaultModel: () => ({ id: "demo", isDemo: true }),
    maxBodyBytes: 1024 * 1024,
    usage: createUsageService({
      store,
      events,
      notifier: { notify: async () => undefined },
      routines: { routineSettings: async () => null },
      prices: createPriceTable(),
      defaultSpec: () => "demo",
      release: async (id) => void released.push(id),
    }),
  });
  const account = async (name: string) => {
    const created = await store.createAccount({ name, isAdmin: false });
    const bot = await store.createBot({
      accountId: created.id,
      name: `${name}'s bot`,
      instructions: "",
      model: null,
    });
    return {
      id: created.id,
      token: (await issueApiToken(store, created.id, "t")).token,
      botId: bot.id,
    };
  };
  alice = await account("alice");
  bob = await account("bob");
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
  options: { token?: string; raw?: string } = {},
): Promise<{
  status: number;
  body: T & {
    error?: { code: string; message: string; details?: { issues?: { path: string }[] } };
  };
}> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer ${options.token ?? alice.token}`,
      ...(body === undefined && options.raw === undefined
        ? {}
        : { "content-type": "application/json" }),
    },
    ...(options.raw !== undefined
      ? { body: options.raw }
      : body === undefined
        ? {}
        : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as never };
}

function record(
  owner: { id: string; botId: string },
  id: string,
  overrides: Partial<UsageRecord> = {},
): UsageRecord {
  return {
    id,
    accountId: owner.id,
    botId: owner.botId,
    conversationId: "conv",
    turnId: "turn",
    callIndex: 0,
    triggerKind: "chat",
    routineId: null,
    runId: null,
    personId: owner.id,
    modelSpec: "openai:gpt-4.1-mini",
    model: "gpt-4.1-mini",
    inputTokens: 1000,
    outputTokens: 500,
    cachedTokens: null,
    cost: 0.0012,
    createdAt: Date.now(),
    ...overrides,
  };
}

describe("GET /v1/usage", () => {
  it("groups the caller's usage by bot, trigger, routine and day", async () => {
    await store.recordUsage(record(alice, "a1"));
    await store.recordUsage(
      record(alice, "a2", {
        triggerKind: "routine",
        routineId: "rtn_1",
        runId: "run_1",
        cost: null,
      }),
    );
    const byBot = await call<Api.UsageReport>("GET", "/v1/usage?groupBy=bot");
    expect(byBot.status).toBe(200);
    expect(byBot.body).toMatchObject({ groupBy: "bot", currency: "USD" });
    expect(byBot.body.groups).toEqual([
      expect.objectContaining({
        key: alice.botId,
        calls: 2,
        tokens: 3000,
        cost: 0.0012,
        unpricedCalls: 1,
      }),
    ]);
    const byTrigger = await call<Api.UsageReport>("GET", "/v1/usage?groupBy=trigger");
    expect(byTrigger.body.groups.map((group) => group.key)).toEqual(["chat", "routine"]);
    const byRoutine = await call<Api.UsageReport>("GET", "/v1/usage?groupBy=routine");
    expect(byRoutine.body.groups).toEqual([expect.objectContaining({ key: "rtn_1", cost: null })]);
    const today = new Date().toISOString().slice(0, 10);
    const byDay = await call<Api.UsageReport>("GET", `/v1/usage?groupBy=day&from=${today}`);
    expect(byDay.body.groups.map((group) => group.key)).toEqual([today]);
  });

  it("attack: another account's usage is never counted or shown", async () => {
    await store.recordUsage(record(alice, "a1"));
    const asBob = await call<Api.UsageReport>("GET", "/v1/usage?groupBy=bot", undefined, {
      token: bob.token,
    });
    expect(asBob.status).toBe(200);
    expect(asBob.body.groups).toEqual([]);
  });

  it("bad input: a missing or unknown groupBy, a bad date, an upside-down or too long range, an unknown parameter", async () => {
    const cases: [string, string][] = [
      ["/v1/usage", "groupBy"],
      ["/v1/usage?groupBy=model", "groupBy must be one of bot, routine, trigger, day"],
      ["/v1/usage?groupBy=bot&from=yesterday", "from must be a UTC date or a time with its zone"],
      [
        "/v1/usage?groupBy=bot&to=2026-01-31T12:00:00",
        "to must be a UTC date or a time with its zone",
      ],
      ["/v1/usage?groupBy=bot&from=2026-02-30", "from must be a UTC date"],
      ["/v1/usage?groupBy=bot&from=2026-02-01&to=2026-01-01", "to must be after from"],
      ["/v1/usage?groupBy=bot&from=2020-01-01&to=2026-01-01", "at most 366 days"],
      ["/v1/usage?groupBy=bot&account=acct_other", "account"],
      ["/v1/usage?groupBy=bot&groupBy=day", "given 2 times"],
    ];
    for (const [path, says] of cases) {
      const answer = await call("GET", path);
      expect(answer.status, path).toBe(400);
      expect(answer.body.error?.code, path).toBe("invalid_request");
      expect(answer.body.error?.message, path).toContain(says);
    }
  });
});

describe("GET/PUT /v1/bots/{id}/budget", () => {
  it("a budget is stored whole, shown with today's and this month's usage, and {} removes it", async () => {
    await store.recordUsage(record(alice, "a1"));
    const empty = await call<Api.BotBudgetView>("GET", `/v1/bots/${alice.botId}/budget`);
    expect(empty.body).toMatchObject({ budget: {}, parkedTurns: 0, currency: "USD" });
    expect(empty.body.today).toMatchObject({ tokens: 1500, cost: 0.0012, calls: 1 });
    const put = await call<Api.BotBudgetView>("PUT", `/v1/bots/${alice.botId}/budget`, {
      tokensPerDay: 200_000,
      costPerMonth: 20,
    });
    expect(put.status).toBe(200);
    expect(put.body.budget).toEqual({ tokensPerDay: 200_000, costPerMonth: 20 });
    // PUT replaces the whole budget: a limit left out is gone.
    const replaced = await call<Api.BotBudgetView>("PUT", `/v1/bots/${alice.botId}/budget`, {
      costPerDay: 1,
    });
    expect(replaced.body.budget).toEqual({ costPerDay: 1 });
    const cleared = await call<Api.BotBudgetView>("PUT", `/v1/bots/${alice.botId}/budget`, {});
    expect(cleared.body.budget).toEqual({});
    expect(await store.getBotBudget(alice.botId)).toBeNull();
  });

  it("USG4: a PUT lets the bot's parked turns check again", async () => {
    await store.addBudgetWait({
      id: "sign_1",
      botId: alice.botId,
      routineId: null,
      conversationId: "c",
      turnId: "t",
      createdAt: 1,
    });
    await store.addBudgetWait({
      id: "sign_2",
      botId: bob.botId,
      routineId: null,
      conversationId: "c2",
      turnId: "t2",
      createdAt: 1,
    });
    const before = await call<Api.BotBudgetView>("GET", `/v1/bots/${alice.botId}/budget`);
    expect(before.body.parkedTurns).toBe(1);
    await call("PUT", `/v1/bots/${alice.botId}/budget`, { tokensPerDay: 10 });
    expect(released).toEqual(["sign_1"]); // bob's parked turn is not touched
  });

  it("attack: another account's bot answers 404 for GET and PUT, and its budget is unchanged", async () => {
    await store.setBotBudget(bob.botId, { tokensPerDay: 5 });
    const read = await call("GET", `/v1/bots/${bob.botId}/budget`);
    expect(read.status).toBe(404);
    const write = await call("PUT", `/v1/bots/${bob.botId}/budget`, { tokensPerDay: 1_000_000 });
    expect(write.status).toBe(404);
    expect(await call("GET", "/v1/bots/bot_missing/budget")).toMatchObject({ status: 404 });
    expect(await store.getBotBudget(bob.botId)).toEqual({ tokensPerDay: 5 });
  });

  it("bad input: each bad budget is a 400 naming the limit, and the stored budget is unchanged (USEAPI2)", async () => {
    await call("PUT", `/v1/bots/${alice.botId}/budget`, { tokensPerDay: 100 });
    const cases: [unknown, string, string][] = [
      [[], "", "must be an object"],
      [{ tokensPerDay: -1 }, "tokensPerDay", "whole number of tokens"],
      [{ tokensPerDay: 1.5 }, "tokensPerDay", "whole number of tokens"],
      [{ tokensPerDay: "100" }, "tokensPerDay", "whole number of tokens"],
      [{ costPerDay: 0 }, "costPerDay", "above 0"],
      [{ costPerMonth: 1e12 }, "costPerMonth", "at most"],
      [{ tokensPerWeek: 5 }, "tokensPerWeek", "unknown limit"],
      [
        { tokensPerDay: 10, tokensPerMonth: 5 },
        "tokensPerDay",
        "lower tokensPerDay or raise tokensPerMonth",
      ],
    ];
    for (const [body, path, says] of cases) {
      const answer = await call("PUT", `/v1/bots/${alice.botId}/budget`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error?.message).toContain(says);
      expect(answer.body.error?.details?.issues?.[0]?.path).toBe(path);
    }
    expect(
      (await call("PUT", `/v1/bots/${alice.botId}/budget`, undefined, { raw: "{not json" })).status,
    ).toBe(400);
    expect(await store.getBotBudget(alice.botId)).toEqual({ tokensPerDay: 100 });
  });

  it("race: a flood of concurrent PUTs leaves exactly one of the budgets sent, whole", async () => {
    const budgets = Array.from({ length: 40 }, (_, index) => ({
      tokensPerDay: 1000 + index,
      costPerDay: 1 + index,
    }));
    const answers = await Promise.all(
      budgets.map((budget) => call("PUT", `/v1/bots/${alice.botId}/budget`, budget)),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const stored = await store.getBotBudget(alice.botId);
    expect(budgets).toContainEqual(stored);
    expect(stored!.costPerDay).toBe(stored!.tokensPerDay! - 1000 + 1);
  });
});
