/**
 * What the spend caps cost per model call, over a real SQLite store (or Postgres with a URL):
 * the budget check before a call (the bot's day and month sums) and the usage record after it,
 * with a bot that already made N calls this month; and `GET /v1/usage?groupBy=day` over them.
 * Run: `node bench/usage.ts [callsThisMonth=100000] [postgresUrl]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEventHub } from "../src/events/index.ts";
import { createMemoryDurable } from "../src/engine/testing/index.ts";
import { openStore, type UsageRecord } from "../src/store/index.ts";
import { createPriceTable, createUsageService } from "../src/usage/index.ts";
import { summarize } from "./support.ts";

const calls = Number(process.argv[2] ?? 100_000);
const postgresUrl = process.argv[3];
const dir = mkdtempSync(join(tmpdir(), "roost-bench-usage-"));
const store = await openStore(
  postgresUrl === undefined
    ? { kind: "sqlite", path: join(dir, "roost.db") }
    : { kind: "postgres", url: postgresUrl },
);
try {
  const account = await store.createAccount({ name: `bench-${Date.now()}`, isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "busy",
    instructions: "",
    model: null,
  });
  const conversation = await store.createConversation({
    accountId: account.id,
    botId: bot.id,
    title: "c",
  });
  const now = Date.now();
  const monthStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1);
  const filled = performance.now();
  for (let index = 0; index < calls; index++) {
    const record: UsageRecord = {
      id: `bench:${index}`,
      accountId: account.id,
      botId: bot.id,
      conversationId: conversation.id,
      turnId: `turn:${Math.floor(index / 5)}`,
      callIndex: index % 5,
      triggerKind: index % 3 === 0 ? "routine" : "chat",
      routineId: index % 3 === 0 ? "rtn_bench" : null,
      runId: index % 3 === 0 ? `run:${index}` : null,
      personId: account.id,
      modelSpec: "openai:gpt-4.1-mini",
      model: "gpt-4.1-mini",
      inputTokens: 1000,
      outputTokens: 100,
      cachedTokens: null,
      cost: 0.00056,
      createdAt: monthStart + Math.floor(((now - monthStart) * index) / calls),
    };
    await store.recordUsage(record);
  }
  console.log(
    `filled ${calls} usage records (${store.kind}) in ${((performance.now() - filled) / 1000).toFixed(1)} s`,
  );

  await store.setBotBudget(bot.id, { tokensPerDay: 1e12, tokensPerMonth: 1e12, costPerMonth: 1e9 });
  const usage = createUsageService({
    store,
    events: createEventHub(),
    notifier: { notify: async () => undefined },
    routines: { routineSettings: async () => null },
    prices: createPriceTable(),
    defaultSpec: () => "openai:gpt-4.1-mini",
    release: async () => undefined,
  });
  const call = {
    accountId: account.id,
    botId: bot.id,
    conversationId: conversation.id,
    turnId: "bench-turn",
    index: 0,
    trigger: { source: { kind: "chat" as const }, authorAccountId: account.id },
    botModel: null,
  };
  const checks: number[] = [];
  const records: number[] = [];
  for (let index = 0; index < 200; index++) {
    const durable = createMemoryDurable();
    let started = performance.now();
    await usage.beforeModelCall(durable, { ...call, index });
    checks.push(performance.now() - started);
    started = performance.now();
    await usage.afterModelCall(durable, {
      ...call,
      index,
      spec: null,
      model: "gpt-4.1-mini",
      usage: { inputTokens: 1000, outputTokens: 100 },
    });
    records.push(performance.now() - started);
  }
  console.log(summarize(`budget check before a call (bot with ${calls} calls this month)`, checks));
  console.log(summarize("usage record after a call", records));
  const reports: number[] = [];
  for (let index = 0; index < 20; index++) {
    const started = performance.now();
    await usage.report(account.id, "day", monthStart, now + 1);
    reports.push(performance.now() - started);
  }
  console.log(summarize(`usage report groupBy=day over ${calls} records`, reports));
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
