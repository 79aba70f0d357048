/**
 * The memory section of the prompt (loop/prompt.ts order: … skills index → memory → summary …):
 * the user facts, the bot's profile and notes, and the most relevant log entries, each with its
 * id so the memory tool can replace or remove it. Built once per turn.
 */
import type { PromptSectionSource } from "../loop/index.ts";
import type { MemoryFact, Store } from "../store/index.ts";
import type { MemoryRanker } from "./ranker.ts";
import { promptLogEntries } from "./service.ts";

const day = (at: number) => new Date(at).toISOString().slice(0, 10);
const line = (fact: MemoryFact) => `- [${fact.id}] ${fact.text}`;

export function createMemorySection(deps: {
  store: Store;
  ranker: MemoryRanker;
}): PromptSectionSource {
  return {
    section: "memory",
    async build({ accountId: computerAccountId, route, botId, newMessages, now }) {
      // MEMT2: the person's own (private) memory with this bot, and a team bot's team memory.
      const accountId = route?.talkerAccountId ?? computerAccountId;
      const bot = await deps.store.getBot(botId);
      const team =
        bot === undefined || bot.teamId === null
          ? []
          : await deps.store.listMemoryFacts({
              accountId: bot.accountId,
              botId,
              tiers: ["team"],
              now,
            });
      const [user, own, log] = await Promise.all([
        deps.store.listMemoryFacts({ accountId, botId: null, tiers: ["user"], now }),
        deps.store.listMemoryFacts({ accountId, botId, tiers: ["profile", "note"], now }),
        deps.ranker.relevantLog({
          accountId,
          botId,
          query: newMessages.join("\n"),
          now,
          limit: promptLogEntries,
        }),
      ]);
      const profile = own.filter((fact) => fact.tier === "profile");
      const notes = own.filter((fact) => fact.tier === "note");
      const parts: string[] = [];
      if (team.length > 0)
        parts.push(
          `Team memory (tier "team"; everyone who talks to you reads it):\n${team.map(line).join("\n")}`,
        );
      if (user.length > 0)
        parts.push(
          `About the user (shared by all of their bots; tier "user"):\n${user.map(line).join("\n")}`,
        );
      if (profile.length > 0)
        parts.push(`Your profile (tier "profile"):\n${profile.map(line).join("\n")}`);
      if (notes.length > 0)
        parts.push(
          `Notes (tier "note"; they expire):\n${notes.map((fact) => `${line(fact)} (until ${day(fact.expiresAt ?? now)})`).join("\n")}`,
        );
      if (log.length > 0)
        parts.push(
          `From your log (tier "log"; the entries most related to this conversation):\n${log.map((fact) => `- [${fact.id}] ${day(fact.createdAt)}: ${fact.text}`).join("\n")}`,
        );
      const files =
        "Keep anything longer than a fact in files under memory/ in your computer's working directory, and read them when they matter.";
      if (parts.length === 0)
        return `# Memory\nYou remember nothing yet. Use the memory tool to keep facts worth keeping. ${files}`;
      return `# Memory\n${parts.join("\n\n")}\n\n${files}`;
    },
  };
}
