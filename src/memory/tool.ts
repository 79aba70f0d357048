/**
 * The `memory` server tool: how a bot writes memory during a turn (one tool for every tier). Each
 * call is journaled and keyed by its call id, so a replayed call changes nothing twice. Memory
 * writes are never sent to approvals.
 *
 * Team bots (docs/teams.md "Memory"):
 *   MEMT1 the `team` tier is written only in a turn whose route says a person asked the whole team
 *         to know (teams/routing.ts teamShouldKnowPattern); it is kept under the bot owner's account.
 *   MEMT2 every other fact is the talking person's with the bot (their private notes), and every
 *         change records that person (`byAccountId`) and where (conversation, turn).
 *   MEMT3 the post-turn pass writes nothing in a shared place (pass.ts).
 */
import { z } from "zod";
import { isRoostError } from "../errors/index.ts";
import { memoryTiers, type Store } from "../store/index.ts";
import { defineToolSource, serverTool, type ToolSource } from "../tools/index.ts";
import { memoryLimits, type MemoryService } from "./service.ts";

const input = z.strictObject({
  action: z
    .enum(["add", "replace", "remove"])
    .describe(
      "add a new fact, replace one (give its id and the new text), or remove one (give its id)",
    ),
  tier: z
    .enum(memoryTiers as ["user", "profile", "log", "note", "team"])
    .optional()
    .describe(
      "For add: user (about the user, shared with all of their bots), profile (what this bot should always know), log (a dated entry of what happened), note (a short-lived reminder), or team (a team bot's team memory: only when someone says the whole team should know). Replace and remove find the tier from the id.",
    ),
  text: z.string().max(2000).optional().describe("The fact, in one short sentence (add, replace)"),
  id: z
    .string()
    .max(100)
    .optional()
    .describe("The fact's id, as shown in your memory (replace, remove)"),
  expiresInHours: z
    .number()
    .positive()
    .max(2160)
    .optional()
    .describe("For notes: how long the note lives (default 168 hours)"),
});

const description = [
  "Remember, correct or forget a fact. Your memory is in the prompt with each fact's id.",
  `Tiers: "user" facts (at most ${memoryLimits.user.maxFacts}) are about the user and shared with all of their bots;`,
  `"profile" facts (at most ${memoryLimits.profile.maxFacts}, ${memoryLimits.profile.maxChars} characters in all) are what you should always know;`,
  `"log" entries record what happened (dated; the most relevant ones are shown);`,
  `"note"s are reminders that expire. Prefer replacing a fact to adding a near-duplicate.`,
  `A team bot also has "team" memory, read by everyone who talks to it: write it only when the person says the whole team should know; everything else stays private to the person you talk to.`,
].join(" ");

export function createMemoryTools(memory: MemoryService, store: Store): ToolSource {
  return defineToolSource("memory", [
    serverTool({
      name: "memory",
      description,
      input,
      async run(request, context) {
        const existing =
          request.id === undefined ? undefined : await store.getMemoryFact(request.id);
        const tier = request.tier ?? existing?.tier;
        if (tier === undefined)
          return {
            output:
              request.action === "add"
                ? 'Say which tier to add to: "user", "profile", "log" or "note".'
                : request.id === undefined
                  ? `Give the id of the fact to ${request.action}, as shown in your memory.`
                  : `There is no fact ${request.id} (it may have been removed); your memory in the prompt shows each fact's id.`,
            isError: true,
          };
        // MEMT1, MEMT2 (docs/teams.md "Memory"): private notes are the talking person's; the
        // team memory is the bot's, under its owner's account, and only when someone asked.
        const route = context.route;
        const person = route?.talkerAccountId ?? context.accountId;
        if (tier === "team" && route?.teamMemory !== true)
          return {
            output:
              'The team memory is written only when the person you talk to says the whole team should know (for example "the whole team should know that…"). Keep this as a profile fact or a note instead: it stays private to them.',
            isError: true,
          };
        try {
          const { fact } = await memory.change({
            accountId: tier === "team" ? route!.botOwnerAccountId : person,
            byAccountId: person,
            botId: context.botId,
            tier,
            action: request.action,
            ...(request.id === undefined ? {} : { factId: request.id }),
            ...(request.text === undefined ? {} : { text: request.text }),
            ...(request.expiresInHours === undefined
              ? {}
              : { ttlMs: request.expiresInHours * 3600_000 }),
            author: "tool",
            conversationId: context.conversationId,
            turnId: context.turnId,
            key: `tool:${context.callId}`,
          });
          const verb = { add: "Saved", replace: "Replaced", remove: "Removed" }[request.action];
          return {
            output: `${verb} ${tier} fact ${fact.id}.`,
            isError: false,
            details: { factId: fact.id, tier, action: request.action },
          };
        } catch (error) {
          // Limits, a missing fact, bad text: the model reads what to do and may try again.
          if (isRoostError(error) && error.code === "not_found")
            return {
              output: `There is no ${tier} fact ${request.id ?? ""} (it may have been removed); your memory in the prompt shows each fact's id.`,
              isError: true,
              details: { code: error.code },
            };
          if (isRoostError(error) && !error.retryable)
            return { output: error.message, isError: true, details: { code: error.code } };
          throw error;
        }
      },
    }),
  ]);
}
