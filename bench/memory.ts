/**
 * Memory, prompt and compaction costs (issue "Memory, skills and compaction" §6), in-process on a
 * real store (SQLite; and Postgres when ROOST_TEST_POSTGRES_URL or 127.0.0.1:5432 answers):
 *   - prompt assembly with a full profile (100 facts), 10,000 log entries and 50 skills: p50 ≤ 2 ms
 *   - log retrieval (the 30 most relevant of 10,000 entries): p50 ≤ 5 ms
 *   - the memory pass after a turn (demo pass: load, decide, apply)
 *   - compaction of a 2,000-message conversation (demo summariser)
 *   node bench/memory.ts [runs=200]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMemoryDurable } from "../src/engine/testing/index.ts";
import { silentLogger } from "../src/log/index.ts";
import {
  assembleSystemPrompt,
  compact,
  loopSections,
  type PromptSection,
} from "../src/loop/index.ts";
import {
  createLexicalRanker,
  createMemorySection,
  createMemoryService,
  runMemoryPass,
} from "../src/memory/index.ts";
import { createDemoModel } from "../src/models/index.ts";
import { openStore, type Store } from "../src/store/index.ts";
import { createTestDatabase, postgresAvailable } from "../test/support/postgres.ts";
import { summarize } from "./support.ts";

const runs = Number(process.argv[2] ?? 200);
const words = [
  "billing",
  "deploy",
  "staging",
  "certificate",
  "invoice",
  "kubernetes",
  "postgres",
  "customer",
  "renewal",
  "migration",
  "latency",
  "backup",
];
const sentence = (index: number) =>
  `Entry ${index}: worked on the ${words[index % words.length]} ${words[(index * 7) % words.length]} task with ${words[(index * 3) % words.length]} notes`;

async function seed(store: Store) {
  const accountId = (await store.createAccount({ name: "bench", isAdmin: false })).id;
  const botId = (
    await store.createBot({ accountId, name: "bench", instructions: "Be brief.", model: "demo" })
  ).id;
  const memory = createMemoryService(store);
  for (let index = 0; index < 100; index++)
    await memory.change({
      accountId,
      botId,
      tier: "profile",
      action: "add",
      text: `Profile fact number ${index} about ${words[index % words.length]}`,
      author: "user",
    });
  // 10,000 log entries: written straight through the store in batches of one transaction each.
  for (let index = 0; index < 10_000; index++)
    await store.changeMemory({
      accountId,
      botId,
      tier: "log",
      action: "add",
      text: sentence(index),
      author: "tool",
    });
  return { accountId, botId, memory };
}

const skills: PromptSection = {
  name: "skills-index",
  text: `# Skills\n${Array.from({ length: 50 }, (_, index) => `- skill-${index}: does task ${index} with ${words[index % words.length]}`).join("\n")}`,
};

async function measure(label: string, store: Store) {
  const started = performance.now();
  const { accountId, botId, memory } = await seed(store);
  console.log(
    `${label}: seeded 100 profile facts and 10,000 log entries in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const ranker = createLexicalRanker(store);
  const section = createMemorySection({ store, ranker });
  const conversationId = (await store.createConversation({ accountId, botId, title: "bench" })).id;

  const retrieval: number[] = [];
  const assembly: number[] = [];
  for (let run = 0; run < runs; run++) {
    const query = `how is the ${words[run % words.length]} ${words[(run * 5) % words.length]} going?`;
    let at = performance.now();
    await ranker.relevantLog({ accountId, botId, query, now: Date.now(), limit: 30 });
    retrieval.push(performance.now() - at);
    at = performance.now();
    const memoryText = await section.build({
      accountId,
      botId,
      conversationId,
      newMessages: [query],
      now: Date.now(),
    });
    assembleSystemPrompt([
      ...loopSections({
        bot: { name: "bench", instructions: "Be brief." },
        tools: [{ name: "shell", description: "", inputSchema: {} }],
        now: Date.now(),
        timezone: "UTC",
      }),
      skills,
      { name: "memory", text: memoryText ?? "" },
    ]);
    assembly.push(performance.now() - at);
  }
  console.log(summarize(`${label}: log retrieval (30 of 10,000)`, retrieval));
  console.log(
    summarize(`${label}: prompt assembly (full profile, 10,000 log entries, 50 skills)`, assembly),
  );

  // The memory pass after a turn, with the demo model's deterministic pass.
  const passes: number[] = [];
  for (let run = 0; run < Math.min(runs, 50); run++) {
    const { message } = await store.appendMessage({
      conversationId,
      clientMessageId: `pass-${run}`,
      authorAccountId: accountId,
      text: `My name is Bench ${run} and I like ${words[run % words.length]}`,
    });
    await store.takeInbox(conversationId, `take-${run}`);
    const reply = await store.appendStep({
      conversationId,
      id: `reply-${run}`,
      turnId: `t${run}`,
      kind: "reply",
      payload: { text: "ok", model: "demo" },
    });
    const at = performance.now();
    await runMemoryPass(
      createMemoryDurable(`pass-${run}`),
      { store, memory, ranker, resolveModel: () => createDemoModel() },
      {
        accountId,
        botId,
        conversationId,
        turnId: `t${run}`,
        fromSeq: message.seq,
        toSeq: reply.seq,
      },
    );
    passes.push(performance.now() - at);
  }
  console.log(summarize(`${label}: memory pass after a turn (demo)`, passes));

  // Compaction of a 2,000-message conversation.
  const long = (await store.createConversation({ accountId, botId, title: "long" })).id;
  for (let index = 0; index < 1000; index++) {
    await store.appendMessage({
      conversationId: long,
      clientMessageId: `m${index}`,
      authorAccountId: accountId,
      text: `question ${index}: ${sentence(index)}`,
    });
    await store.takeInbox(long, `lt${index}`);
    await store.appendStep({
      conversationId: long,
      id: `lr${index}`,
      turnId: `lt${index}`,
      kind: "reply",
      payload: { text: `answer ${index}`, model: "demo" },
    });
  }
  const at = performance.now();
  await compact(
    createMemoryDurable("compact"),
    {
      store,
      resolveModel: () => createDemoModel(),
      logger: silentLogger,
      beforeSummary: async () => undefined,
    },
    { share: 0.6, idleShare: 0.3, keepMessages: 20 },
    { accountId, botId, model: "demo", conversationId: long, turnId: "bench" },
    20_000,
  );
  console.log(
    `${label}: compaction of 2,000 messages (1,000 turns, demo summariser, pass excluded): ${(performance.now() - at).toFixed(0)} ms`,
  );
}

const dir = mkdtempSync(join(tmpdir(), "roost-bench-memory-"));
const sqlite = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
try {
  await measure("sqlite", sqlite);
} finally {
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });
}
if ((await postgresAvailable()).ok) {
  const database = await createTestDatabase();
  const postgres = await openStore({ kind: "postgres", url: database.url });
  try {
    await measure("postgres", postgres);
  } finally {
    await postgres.close();
    await database.drop();
  }
}
