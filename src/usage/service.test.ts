/**
 * The usage service's hooks in durable code (USG1–USG7), on a real SQLite store and the
 * in-memory durable context (engine/testing), whose journal shows what was waited on and whose
 * clock the test moves. The same hooks against a real Restate: test/e2e/budget.test.ts and
 * test/faults/budget-park.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { createEventHub } from "../events/index.ts";
import type { ModelCallInfo } from "../loop/index.ts";
import type { NotificationInput } from "../notifications/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { createPriceTable } from "./prices.ts";
import { createUsageService, type UsageService } from "./service.ts";
import type { RoutineSettings } from "./types.ts";

let dir: string;
let store: Store;
let now: number;
let notified: NotificationInput[];
let released: string[];
let routines: Map<string, RoutineSettings>;
let usage: UsageService;
let call: ModelCallInfo;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-usage-service-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  now = Date.UTC(2026, 2, 10, 23, 59, 58);
  notified = [];
  released = [];
  routines = new Map();
  usage = createUsageService({
    store,
    events: createEventHub(),
    notifier: { notify: async (notification) => void notified.push(notification) },
    routines: { routineSettings: async (id) => routines.get(id) ?? null },
    prices: createPriceTable(),
    defaultSpec: () => "openai:gpt-4.1-mini",
    release: async (id) => void released.push(id),
    clock: () => now,
  });
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
    title: "c",
  });
  call = {
    accountId: account.id,
    botId: bot.id,
    conversationId: conversation.id,
    turnId: "inv_1:turn:0",
    index: 0,
    trigger: { source: { kind: "chat" }, authorAccountId: account.id },
    botModel: null,
  };
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const done = (overrides: Partial<ModelCallInfo> = {}) => ({
  ...call,
  ...overrides,
  spec: null,
  model: "gpt-4.1-mini",
  usage: { inputTokens: 1000, outputTokens: 100 },
});

describe("usage records (USG1, USG2)", () => {
  it("USG1: a replayed afterModelCall records nothing twice", async () => {
    const first = createMemoryDurable({ clock: () => now });
    await usage.afterModelCall(first, done());
    // The engine replays the journal; and even a lost journal entry rewrites the same id.
    await usage.afterModelCall(
      createMemoryDurable({ journal: first.journal, clock: () => now }),
      done(),
    );
    await usage.afterModelCall(createMemoryDurable({ clock: () => now }), done());
    const records = await store.listUsageRecords(call.conversationId);
    expect(records).toHaveLength(1);
    // Priced as the platform default (the bot names no model): 1000 × 0.4 + 100 × 1.6 per million.
    expect(records[0]).toMatchObject({ modelSpec: "openai:gpt-4.1-mini", triggerKind: "chat" });
    expect(records[0]!.cost).toBeCloseTo(0.00056, 12);
  });

  it("PRICE1: an unknown model's call is recorded with its tokens and cost null", async () => {
    await usage.afterModelCall(createMemoryDurable(), {
      ...done(),
      spec: "openai-compatible:llama-local",
    });
    const [record] = await store.listUsageRecords(call.conversationId);
    expect(record).toMatchObject({
      modelSpec: "openai-compatible:llama-local",
      inputTokens: 1000,
      cost: null,
    });
    const view = await usage.botBudget(call.botId);
    expect(view.today).toMatchObject({ tokens: 1100, cost: null, unpricedCalls: 1 });
  });

  it("USG2: a routine run's usage is billed to the routine's owner; the talking person is kept", async () => {
    routines.set("rtn_1", { ownerAccountId: "acct_owner", budget: null, triageModel: null });
    await usage.afterModelCall(
      createMemoryDurable(),
      done({
        trigger: {
          source: { kind: "routine", routineId: "rtn_1", runId: "run_1" },
          authorAccountId: call.accountId,
        },
      }),
    );
    const [record] = await store.listUsageRecords(call.conversationId);
    expect(record).toMatchObject({
      accountId: "acct_owner",
      personId: call.accountId,
      routineId: "rtn_1",
      runId: "run_1",
      triggerKind: "routine",
    });
    expect(await usage.usageOfRuns(["run_1"])).toEqual(
      new Map([["run_1", { tokens: 1100, cost: record!.cost }]]),
    );
  });
});

describe("budget checks (USG3–USG6)", () => {
  it("under every limit the call goes ahead without waiting", async () => {
    await store.setBotBudget(call.botId, { tokensPerDay: 5000 });
    const durable = createMemoryDurable({ clock: () => now });
    expect(await usage.beforeModelCall(durable, call)).toBeUndefined();
    expect(durable.journal.some((entry) => entry.type === "promise")).toBe(false);
  });

  it("a new day resumes the parked turn: the durable timer runs to 00:00 UTC and the check passes", async () => {
    await store.setBotBudget(call.botId, { tokensPerDay: 1000 });
    await usage.afterModelCall(createMemoryDurable(), done());
    now += 1000; // 23:59:59: the park's timer is the second until midnight
    const durable = createMemoryDurable({ clock: () => now, timeScale: 0.01 });
    const waiting = durable.waiting().then(() => {
      now = Date.UTC(2026, 2, 11, 0, 0, 1); // the timer fires in the new day
    });
    const chosen = await usage.beforeModelCall(durable, { ...call, index: 1 });
    await waiting;
    expect(chosen).toBeUndefined();
    expect(durable.journal.map((entry) => entry.type)).toContain("promise-timeout");
    const steps = await store.listSteps(call.conversationId);
    expect(steps.map((step) => step.kind)).toEqual(["budget_reached"]);
    expect(steps[0]!.payload).toMatchObject({
      limit: "tokensPerDay",
      allowed: 1000,
      used: 1100,
      resumesAt: "2026-03-11T00:00:00.000Z",
    });
    expect(notified).toHaveLength(1);
    expect(notified[0]).toMatchObject({ id: `budget:${steps[0]!.id}`, kind: "budget_reached" });
    expect(await store.listBudgetWaits({ botId: call.botId })).toEqual([]);
  });

  it("USG6: a replay of a park saves no second step and sends no second notification", async () => {
    await store.setBotBudget(call.botId, { tokensPerDay: 10 });
    await usage.afterModelCall(createMemoryDurable(), done());
    const first = createMemoryDurable({ clock: () => now });
    const parked = usage.beforeModelCall(first, { ...call, index: 1 });
    await first.waiting();
    // The process dies here; the engine replays the journal in a new attempt.
    const replay = createMemoryDurable({ journal: [...first.journal], clock: () => now });
    const resumed = usage.beforeModelCall(replay, { ...call, index: 1 });
    await replay.waiting();
    expect(replay.steps).toEqual([]); // every step came from the journal
    expect((await store.listSteps(call.conversationId)).length).toBe(1);
    expect(notified).toHaveLength(1);
    // Raising the budget resolves the recorded waiter (the same id in both attempts).
    await usage.setBotBudget(call.botId, { tokensPerDay: 100_000 });
    expect(released).toHaveLength(1);
    replay.resolveExternal(released[0]!, true);
    expect(await resumed).toBeUndefined();
    first.resolveExternal(released[0]!, true);
    await parked;
  });

  it("USG4: a budget raised between the check and the park lets the call go ahead (no lost wake-up)", async () => {
    let lookups = 0;
    const racing = createUsageService({
      store,
      events: createEventHub(),
      notifier: { notify: async (notification) => void notified.push(notification) },
      // The routine's budget is raised right after the first check read it.
      routines: {
        routineSettings: async () => ({
          ownerAccountId: call.accountId,
          budget: lookups++ === 0 ? { tokensPerDay: 10 } : null,
          triageModel: null,
        }),
      },
      prices: createPriceTable(),
      defaultSpec: () => "demo",
      release: async () => undefined,
      clock: () => now,
    });
    const routineCall = {
      ...call,
      trigger: {
        source: { kind: "routine" as const, routineId: "rtn_r", runId: "run_r" },
        authorAccountId: call.accountId,
      },
    };
    await racing.afterModelCall(createMemoryDurable(), { ...done(), ...routineCall });
    lookups = 0;
    const durable = createMemoryDurable({ clock: () => now });
    expect(await racing.beforeModelCall(durable, { ...routineCall, index: 1 })).toBeUndefined();
    expect(await store.listSteps(call.conversationId)).toEqual([]);
    expect(await store.listBudgetWaits({ routineId: "rtn_r" })).toEqual([]);
    expect(notified).toEqual([]);
  });

  it("USG8: a release that failed (engine down) is done by the sweep once the budget allows", async () => {
    let engineUp = false;
    const flaky = createUsageService({
      store,
      events: createEventHub(),
      notifier: { notify: async () => undefined },
      routines: { routineSettings: async () => null },
      prices: createPriceTable(),
      defaultSpec: () => "demo",
      release: async (id) => {
        if (!engineUp) throw new Error("the durable engine did not take the wake-up");
        released.push(id);
      },
      clock: () => now,
    });
    await store.setBotBudget(call.botId, { tokensPerDay: 10 });
    await flaky.afterModelCall(createMemoryDurable(), done());
    const durable = createMemoryDurable({ clock: () => now });
    const parked = flaky.beforeModelCall(durable, { ...call, index: 1 });
    await durable.waiting();
    // Still over the budget: the sweep leaves the turn parked.
    engineUp = true;
    expect(await flaky.sweepParked()).toBe(0);
    engineUp = false;
    await flaky.setBotBudget(call.botId, { tokensPerDay: 100_000 }); // its release fails
    expect(released).toEqual([]);
    expect(await store.listBudgetWaits({ botId: call.botId })).toHaveLength(1);
    engineUp = true;
    expect(await flaky.sweepParked()).toBe(1);
    expect(await store.listBudgetWaits({ botId: call.botId })).toEqual([]);
    durable.resolveExternal(released[0]!, true);
    expect(await parked).toBeUndefined();
  });

  it("monthly limits are reported before daily ones (raising the daily one would not help)", async () => {
    await store.setBotBudget(call.botId, { tokensPerDay: 10, tokensPerMonth: 20 });
    await usage.afterModelCall(createMemoryDurable(), done());
    const durable = createMemoryDurable({ clock: () => now });
    const parked = usage.beforeModelCall(durable, { ...call, index: 1 });
    await durable.waiting();
    const [step] = await store.listSteps(call.conversationId);
    expect(step!.payload).toMatchObject({
      limit: "tokensPerMonth",
      resumesAt: "2026-04-01T00:00:00.000Z",
    });
    expect(String(step!.payload.message)).toContain("monthly token limit");
    await usage.setBotBudget(call.botId, {});
    durable.resolveExternal(released[0]!, true);
    expect(await parked).toBeUndefined();
  });
});

describe("triage (USG7)", () => {
  const routineTrigger = {
    source: { kind: "routine" as const, routineId: "rtn_t", runId: "run_t" },
    authorAccountId: "acct_x",
  };

  it("a routine run uses its triage model until the turn has an escalate call", async () => {
    routines.set("rtn_t", {
      ownerAccountId: "acct_x",
      budget: null,
      triageModel: "openai:gpt-4.1-nano",
    });
    const routineCall = { ...call, trigger: routineTrigger };
    expect(await usage.beforeModelCall(createMemoryDurable(), routineCall)).toEqual({
      model: "openai:gpt-4.1-nano",
    });
    // A second call without an escalation stays on the triage model.
    expect(
      await usage.beforeModelCall(createMemoryDurable(), { ...routineCall, index: 1 }),
    ).toEqual({
      model: "openai:gpt-4.1-nano",
    });
    await store.appendStep({
      conversationId: call.conversationId,
      id: "esc:result",
      turnId: call.turnId,
      kind: "tool",
      payload: { name: "escalate", output: "Escalated" },
    });
    expect(
      await usage.beforeModelCall(createMemoryDurable(), { ...routineCall, index: 2 }),
    ).toBeUndefined();
    // A chat turn, or a routine without a triage model, never gets one.
    expect(await usage.beforeModelCall(createMemoryDurable(), call)).toBeUndefined();
    routines.set("rtn_t", { ownerAccountId: "acct_x", budget: null, triageModel: null });
    expect(await usage.beforeModelCall(createMemoryDurable(), routineCall)).toBeUndefined();
  });
});
