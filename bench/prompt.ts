/**
 * Prompt assembly (issue "Memory, skills and compaction" §6): what load-context does for the
 * system prompt of a turn, over a real store — the skills index of 50 skills, the memory section
 * of a full profile (100 facts, 4,000 characters), user facts and 10,000 log entries (the 30 most
 * relevant ranked through full-text search), the loop's own sections, and the assembly with its
 * hashes. Prints p50/p95 of the whole and of the skills index alone.
 * Run: `node bench/prompt.ts [iterations=300] [postgresUrl]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assembleSystemPrompt, loopSections, type PromptSection } from "../src/loop/index.ts";
import {
  createLexicalRanker,
  createMemorySection,
  createMemoryService,
  memoryLimits,
} from "../src/memory/index.ts";
import { createSkillService, createSkillsSection } from "../src/skills/index.ts";
import { openStore } from "../src/store/index.ts";
import { summarize } from "./support.ts";

const iterations = Number(process.argv[2] ?? 300);
const postgresUrl = process.argv[3];
const dir = mkdtempSync(join(tmpdir(), "roost-bench-prompt-"));
const store = await openStore(
  postgresUrl === undefined
    ? { kind: "sqlite", path: join(dir, "roost.db") }
    : { kind: "postgres", url: postgresUrl },
);
const words = ["invoice", "deploy", "garden", "report", "meeting", "backup", "travel", "budget"];
try {
  const account = await store.createAccount({ name: `bench-${Date.now()}`, isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "bench",
    instructions: "Help with everything.",
    model: null,
  });
  const memory = createMemoryService(store);
  const skills = createSkillService(store);
  const started = performance.now();
  for (let index = 0; index < 50; index++)
    await skills.create(
      { accountId: account.id, actorAccountId: account.id },
      {
        name: `skill-${index}`,
        description: `Handles ${words[index % words.length]} tasks of kind ${index} for the team`,
        body: `# Skill ${index}\n${"Step by step instructions. ".repeat(40)}`,
      },
    );
  const add = (tier: "user" | "profile" | "log", text: string) =>
    memory.change({
      accountId: account.id,
      botId: bot.id,
      tier,
      action: "add",
      text,
      author: "pass",
    });
  const perProfileFact = Math.floor(memoryLimits.profile.maxChars / memoryLimits.profile.maxFacts);
  for (let index = 0; index < memoryLimits.profile.maxFacts; index++)
    await add("profile", `Profile fact ${index} `.padEnd(perProfileFact, "x"));
  for (let index = 0; index < 20; index++)
    await add("user", `The user likes ${words[index % 8]} ${index}`);
  for (let index = 0; index < 10_000; index++)
    await add(
      "log",
      `Day ${index}: worked on the ${words[index % words.length]} with ${words[(index * 7) % words.length]} notes`,
    );
  console.log(
    `filled ${store.kind}: 50 skills, 100 profile facts, 20 user facts, 10,000 log entries in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );

  const sources = [
    createSkillsSection({ store, skills }),
    createMemorySection({ store, ranker: createLexicalRanker(store) }),
  ];
  const totals: number[] = [];
  const skillsOnly: number[] = [];
  let system = "";
  for (let index = 0; index < iterations; index++) {
    const input = {
      accountId: account.id,
      botId: bot.id,
      conversationId: "conv_bench",
      newMessages: [`Can you check the ${words[index % words.length]} from last week?`],
      now: Date.now(),
    };
    const begin = performance.now();
    const contributed = await Promise.all(
      sources.map(async (source): Promise<PromptSection | undefined> => {
        const text = await source.build(input);
        return text === undefined ? undefined : { name: source.section, text };
      }),
    );
    const sections = [
      ...loopSections({
        bot,
        tools: [{ name: "shell", description: "", inputSchema: {} }],
        now: input.now,
        timezone: "UTC",
      }),
      ...contributed.filter((section): section is PromptSection => section !== undefined),
    ];
    system = assembleSystemPrompt(sections).system;
    totals.push(performance.now() - begin);
    const skillsBegin = performance.now();
    await sources[0]!.build(input);
    skillsOnly.push(performance.now() - skillsBegin);
  }
  console.log(
    summarize(
      `prompt assembly (${store.kind}, 50 skills, full profile, 10,000 log entries)`,
      totals,
    ),
  );
  console.log(summarize(`skills index alone (${store.kind}, 50 skills)`, skillsOnly));
  console.log(`system prompt: ${system.length} characters`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
