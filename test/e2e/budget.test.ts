/**
 * Spend caps end to end (issue 11 §4, §5 "a budget pause resumes without repeating a tool call"):
 * the real platform in-process with its embedded Restate and SQLite, a scripted model, and a
 * server tool that counts how often it really ran. The park is a Restate awakeable; raising the
 * budget resolves it and the same turn goes on.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { issueApiToken } from "../../src/auth/index.ts";
import { resolveConfig } from "../../src/config/index.ts";
import { findFreePort } from "../../src/engine/index.ts";
import { queryAdmin } from "../../src/engine/testing/index.ts";
import { createMemoryLogger } from "../../src/log/testing/index.ts";
import { createDemoModel, type ModelClient } from "../../src/models/index.ts";
import { createScriptedModel, type Script } from "../../src/models/testing/index.ts";
import type { NotificationInput } from "../../src/notifications/index.ts";
import { startPlatform, type Platform } from "../../src/platform/index.ts";
import type { Api } from "../../src/protocol/index.ts";
import { defineToolSource, serverTool } from "../../src/tools/index.ts";
import type { RoutineSettings } from "../../src/usage/index.ts";
import { apiClient, type TestStep } from "../support/api-client.ts";
import { createTestDatabase, postgresAvailable } from "../support/postgres.ts";
import { waitFor } from "../support/wait.ts";

interface Started {
  platform: Platform;
  api: ReturnType<typeof apiClient>;
  notified: NotificationInput[];
  routines: Map<string, RoutineSettings>;
  counter: { runs: number };
  specs: (string | null)[];
  close(): Promise<void>;
}

let started: Started | undefined;
let database: { url: string; drop(): Promise<void> } | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
  await database?.drop(); // after the platform that used it
  database = undefined;
});

async function start(
  model: (spec: string | null) => ModelClient,
  env: Record<string, string> = {},
) {
  const dataDir = mkdtempSync(join(tmpdir(), "roost-budget-"));
  const ingress = await findFreePort();
  const admin = await findFreePort([ingress]);
  const node = await findFreePort([ingress, admin]);
  const config = resolveConfig(
    {
      "data-dir": dataDir,
      port: "0",
      "service-port": "0",
      "restate-ingress-port": String(ingress),
      "restate-admin-port": String(admin),
      "restate-node-port": String(node),
    },
    {
      ROOST_FOLLOW_UP_WINDOW_MS: "100",
      ROOST_MEMORY_PASS: "off",
      ROOST_MODEL_TITLES: "off", // nor the title request after the first reply
      ROOST_COMPUTER_PROVIDER: "process",
      ...env,
    },
  );
  const notified: NotificationInput[] = [];
  const routines = new Map<string, RoutineSettings>();
  const counter = { runs: 0 };
  const specs: (string | null)[] = [];
  const platform = await startPlatform(config, {
    logger: createMemoryLogger(),
    sweepIntervalMs: 200,
    resolveModel: (spec) => {
      specs.push(spec);
      return model(spec);
    },
    notifier: { notify: async (notification) => void notified.push(notification) },
    routineLookup: { routineSettings: async (routineId) => routines.get(routineId) ?? null },
    toolSources: [
      defineToolSource("test", [
        serverTool({
          name: "count",
          description: "Counts its runs.",
          input: z.strictObject({}),
          run: async () => {
            counter.runs++; // really ran (a journaled replay does not come here)
            return { output: `run ${counter.runs}`, isError: false };
          },
        }),
      ]),
    ],
  });
  const token = readFileSync(platform.adminTokenFile, "utf8").trim();
  const api = apiClient(platform.url, () => token);
  started = {
    platform,
    api,
    notified,
    routines,
    counter,
    specs,
    async close() {
      await platform.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return started;
}

const kinds = (steps: TestStep[]) => steps.map((step) => step.kind);

/** Calls the count tool once, then answers; each call reports 100 + 10 tokens. */
const countThenAnswer: Script = [
  {
    toolCalls: [{ id: "c1", name: "count", input: {} }],
    usage: { inputTokens: 100, outputTokens: 10 },
  },
  { text: "counted", usage: { inputTokens: 100, outputTokens: 10 } },
];

const postgres = await postgresAvailable();

describe("budgets: park and resume (real Restate)", () => {
  it("a budget pause resumes without repeating a tool call: raising the budget continues the same turn", () =>
    parkAndRaise({}));

  // In CI (CI=true) postgresAvailable() fails loudly instead of skipping.
  it.runIf(postgres.ok)("the same on Postgres", async () => {
    database = await createTestDatabase();
    await parkAndRaise({ ROOST_STORE: "postgres", ROOST_DATABASE_URL: database.url });
  });

  async function parkAndRaise(env: Record<string, string>) {
    const model = createScriptedModel(countThenAnswer);
    const { api, notified, counter } = await start(() => model, env);
    const bot = await api.createBot("capped");
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 50 });
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "count once");

    // The first call (0 tokens used before it) runs the tool; the second is over 110 ≥ 50: parked.
    const parked = await api.waitForSteps(conversation.id, "budget_reached");
    expect(kinds(parked)).toEqual(["message", "model", "tool", "budget_reached"]);
    const reached = parked[3]!.payload as unknown as Api.BudgetReachedPayload;
    expect(reached).toMatchObject({
      scope: "bot",
      scopeId: bot.id,
      limit: "tokensPerDay",
      allowed: 50,
      used: 110,
    });
    expect(reached.message).toContain(`PUT /v1/bots/${bot.id}/budget`);
    // The notification is stored and streamed first, then reaches the test's recorder.
    await waitFor(() => notified.length > 0, { what: "the owner notified" });
    expect(notified).toEqual([
      expect.objectContaining({
        id: `budget:${parked[3]!.id}`,
        kind: "budget_reached",
        botId: bot.id,
        conversationId: conversation.id,
      }),
    ]);
    const view = await api.call<Api.BotBudgetView>("GET", `/v1/bots/${bot.id}/budget`);
    expect(view).toMatchObject({ parkedTurns: 1, budget: { tokensPerDay: 50 } });
    expect(view.today.tokens).toBe(110);
    expect(model.requests).toHaveLength(1);

    // Raising the budget lets the parked turn go on: same turn, no tool call repeated.
    const raised = await api.call<Api.BotBudgetView>("PUT", `/v1/bots/${bot.id}/budget`, {
      tokensPerDay: 10_000,
    });
    expect(raised.parkedTurns).toBe(0);
    const steps = await api.waitForSteps(conversation.id, "reply");
    expect(kinds(steps)).toEqual(["message", "model", "tool", "budget_reached", "reply"]);
    expect(new Set(steps.slice(1).map((step) => step.turnId)).size).toBe(1);
    expect(counter.runs).toBe(1);
    expect(model.requests).toHaveLength(2);
    // The resumed call saw the tool's result from before the park.
    expect(model.requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", output: "run 1" });
    expect(notified).toHaveLength(1);

    const usage = await api.call<Api.UsageReport>("GET", "/v1/usage?groupBy=bot");
    expect(usage.groups).toEqual([expect.objectContaining({ key: bot.id, calls: 2, tokens: 220 })]);
  }

  it("a raise that is still too low parks the turn again, with a second step and notification", async () => {
    const model = createScriptedModel(countThenAnswer);
    const { api, notified, counter } = await start(() => model);
    const bot = await api.createBot("capped");
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 50 });
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "count once");
    await api.waitForSteps(conversation.id, "budget_reached");
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 100 });
    await api.waitForSteps(conversation.id, "budget_reached", 2);
    expect(notified.map((notification) => notification.id)).toHaveLength(2);
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, {});
    const steps = await api.waitForSteps(conversation.id, "reply");
    expect(kinds(steps)).toEqual([
      "message",
      "model",
      "tool",
      "budget_reached",
      "budget_reached",
      "reply",
    ]);
    expect(counter.runs).toBe(1);
  });

  it("USG9: the owner's stop ends a parked turn as interrupted, without the model call it waited for", async () => {
    const model = createScriptedModel(countThenAnswer);
    const { api, counter } = await start(() => model);
    const bot = await api.createBot("capped");
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 50 });
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "count once");
    await api.waitForSteps(conversation.id, "budget_reached");
    const stopped = await api.call<{ interrupted: boolean }>(
      "POST",
      `/v1/conversations/${conversation.id}/interrupt`,
    );
    expect(stopped.interrupted).toBe(true);
    const steps = await api.waitForSteps(conversation.id, "interrupted");
    expect(kinds(steps)).toEqual(["message", "model", "tool", "budget_reached", "interrupted"]);
    expect(steps.at(-1)!.payload).toEqual({ reason: "owner", stopped: [] });
    expect(model.requests).toHaveLength(1);
    expect(counter.runs).toBe(1);
    const view = await api.call<Api.BotBudgetView>("GET", `/v1/bots/${bot.id}/budget`);
    expect(view.parkedTurns).toBe(0);
  });

  it("a conversation deleted while its turn is parked: the sweep lets the turn go, and it ends quietly (USG8, LOOP8)", async () => {
    const model = createScriptedModel(countThenAnswer);
    const { api, platform } = await start(() => model);
    const bot = await api.createBot("capped");
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { tokensPerDay: 50 });
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "count once");
    await api.waitForSteps(conversation.id, "budget_reached");
    const response = await fetch(`${platform.url}/v1/conversations/${conversation.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${readFileSync(platform.adminTokenFile, "utf8").trim()}` },
    });
    expect(response.status).toBe(204);
    await waitFor(
      async () =>
        (await api.call<Api.BotBudgetView>("GET", `/v1/bots/${bot.id}/budget`)).parkedTurns === 0,
      { what: "the parked turn to be let go" },
    );
    // The turn found its conversation gone: its invocation ends, with no model call, parking
    // nothing again.
    await waitFor(
      async () => {
        const rows = await queryAdmin<{ status: string }>(
          platform.engine.adminUrl,
          `SELECT status FROM sys_invocation WHERE target_service_key = '${conversation.id}' AND status <> 'completed'`,
        );
        return rows.length === 0;
      },
      { what: "the conversation's invocations to complete" },
    );
    expect(model.requests).toHaveLength(1);
    expect(await platform.store.listAllBudgetWaits(10)).toEqual([]);
  });

  it("a cost limit counts priced calls only: with a price for the model, costPerDay parks the turn", async () => {
    const model = createScriptedModel(countThenAnswer);
    // 1,000 per million tokens: 110 tokens cost 0.1 (100 × 1000 + 10 × 1000) / 1e6 = 0.11.
    const { api } = await start(() => model, {
      ROOST_PRICES: JSON.stringify({ models: { demo: { input: 1000, output: 1000 } } }),
    });
    const bot = await api.createBot("priced");
    await api.call("PUT", `/v1/bots/${bot.id}/budget`, { costPerDay: 0.1 });
    const conversation = await api.createConversation(bot.id);
    await api.send(conversation.id, "count once");
    const steps = await api.waitForSteps(conversation.id, "budget_reached");
    expect(steps.at(-1)!.payload).toMatchObject({ limit: "costPerDay", allowed: 0.1 });
    const view = await api.call<Api.BotBudgetView>("GET", `/v1/bots/${bot.id}/budget`);
    expect(view.today.cost).toBeCloseTo(0.11, 10);
  });
});

describe("routines: usage to the owner, the routine's budget, the triage model", () => {
  async function routineRun(
    platform: Platform,
    botId: string,
    routineId: string,
    runId: string,
    text: string,
  ) {
    const bot = (await platform.store.getBot(botId))!;
    const conversation = await platform.store.createConversation({
      accountId: bot.accountId,
      botId,
      title: `run ${runId}`,
    });
    // As routines will: a message with the routine's source; the sweep hands it to its loop.
    await platform.store.appendMessage({
      conversationId: conversation.id,
      clientMessageId: runId,
      authorAccountId: bot.accountId,
      text,
      source: { kind: "routine", routineId, runId },
    });
    return conversation.id;
  }

  it("triage: the demo model escalates with `escalate`, and only then does the bot's model answer", async () => {
    const { platform, api, routines, specs } = await start(() => createDemoModel());
    const owner = await platform.store.createAccount({ name: "routine owner", isAdmin: false });
    routines.set("rtn_1", {
      ownerAccountId: owner.id,
      budget: null,
      triageModel: "openai:gpt-4.1-nano",
    });
    const bot = await api.createBot("watcher");

    const quiet = await routineRun(
      platform,
      bot.id,
      "rtn_1",
      "run_quiet",
      "check the disk; all quiet",
    );
    const quietSteps = await api.waitForSteps(quiet, "reply");
    expect(kinds(quietSteps)).toEqual(["message", "reply"]);
    const escalated = await routineRun(
      platform,
      bot.id,
      "rtn_1",
      "run_loud",
      "check the disk\nescalate the disk is full",
    );
    const loudSteps = await api.waitForSteps(escalated, "reply");
    expect(kinds(loudSteps)).toEqual(["message", "model", "tool", "reply"]);
    expect(loudSteps[2]!.payload).toMatchObject({ name: "escalate", isError: false });
    expect(specs).toContain("openai:gpt-4.1-nano");

    // Usage: the quiet run used only the triage model; the loud one the triage, then the bot's.
    const ownerToken = await issueApiToken(platform.store, owner.id, "test");
    const ownerApi = apiClient(platform.url, () => ownerToken.token);
    const byRoutine = await ownerApi.call<Api.UsageReport>("GET", "/v1/usage?groupBy=routine");
    expect(byRoutine.groups).toEqual([expect.objectContaining({ key: "rtn_1", calls: 3 })]);
    const runs = await platform.usage.usageOfRuns(["run_quiet", "run_loud", "run_none"]);
    expect([...runs.keys()].sort()).toEqual(["run_loud", "run_quiet"]);
    // The triage model has a default price; the demo none needed (it is free): both runs priced.
    expect(runs.get("run_quiet")!.cost).not.toBeNull();
    const calls = await usageRows(platform, escalated);
    expect(calls).toEqual([
      { index: 0, spec: "openai:gpt-4.1-nano" },
      { index: 1, spec: "demo" },
    ]);
    expect(await usageRows(platform, quiet)).toEqual([{ index: 0, spec: "openai:gpt-4.1-nano" }]);
    // USG2: the routine's usage went to its owner, not to the bot's account.
    const adminUsage = await api.call<Api.UsageReport>("GET", "/v1/usage?groupBy=trigger");
    expect(adminUsage.groups).toEqual([]);
    const ownerByTrigger = await ownerApi.call<Api.UsageReport>("GET", "/v1/usage?groupBy=trigger");
    expect(ownerByTrigger.groups).toEqual([expect.objectContaining({ key: "routine", calls: 3 })]);
  });

  it("a routine's budget parks its run; after the routine's budget is raised it goes on", async () => {
    const model = createScriptedModel(countThenAnswer);
    const { platform, api, routines, counter, notified } = await start(() => model);
    const bot = await api.createBot("routine bot");
    routines.set("rtn_b", {
      ownerAccountId: (await platform.store.getBot(bot.id))!.accountId,
      budget: { tokensPerDay: 20 },
      triageModel: null,
    });
    const conversationId = await routineRun(platform, bot.id, "rtn_b", "run_b", "count");
    const parked = await api.waitForSteps(conversationId, "budget_reached");
    expect(parked.at(-1)!.payload).toMatchObject({
      scope: "routine",
      scopeId: "rtn_b",
      limit: "tokensPerDay",
    });
    expect(String(parked.at(-1)!.payload.message)).toContain("PATCH /v1/routines/rtn_b");
    expect(notified).toHaveLength(1);
    routines.set("rtn_b", { ...routines.get("rtn_b")!, budget: null });
    await platform.usage.routineBudgetChanged("rtn_b");
    const steps = await api.waitForSteps(conversationId, "reply");
    expect(kinds(steps)).toEqual(["message", "model", "tool", "budget_reached", "reply"]);
    expect(counter.runs).toBe(1);
  });
});

/** The conversation's usage records: each call's index and the spec it used. */
async function usageRows(platform: Platform, conversationId: string) {
  const records = await platform.store.listUsageRecords(conversationId);
  return records.map((record) => ({ index: record.callIndex, spec: record.modelSpec }));
}
