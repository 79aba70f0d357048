/**
 * The routing table (ARCHITECTURE.md §9, docs/teams.md): which computer and whose credentials a
 * turn uses, from the conversation's place and its verified talking person.
 *
 *   | Conversation                  | Computer                  | Credentials                      |
 *   |-------------------------------|---------------------------|----------------------------------|
 *   | the owner's own chat          | the owner's               | the owner's and the bot's own    |
 *   | a teammate's own chat         | that teammate's           | that teammate's only             |
 *   | a shared place                | the bot's shared computer | the bot's own only               |
 *
 *   ROUTE1 the talking person is the author of the turn's first message, which the API sets from
 *          the caller's token (never from a body); a routine's turn talks as whoever set it up.
 *   ROUTE2 a teammate's user secrets never reach a shared place, and the bot's own secrets (set by
 *          its owner) never reach a teammate's computer, where the teammate could read them.
 *   ROUTE3 approvals go to the owner of the credentials the calls use: the teammate in their own
 *          chat, the bot's owner in theirs and in a shared place (the bot's own credentials).
 *   ROUTE4 the redactor of a computer covers every value that can reach it.
 */
import type { Bot, Conversation } from "../store/index.ts";
import type { TurnRoute } from "../tools/index.ts";

/**
 * MEMT1 (docs/teams.md "Memory"): what a person says when the whole team should know something.
 * Matched case-insensitively in the turn's own messages from people.
 */
export const teamShouldKnowPattern =
  /\b(?:(?:the\s+)?(?:whole|entire)\s+team|everyone(?:\s+(?:on|in)\s+the\s+team)?|the\s+team|all\s+of\s+us)\s+(?:should|needs?\s+to|must|has\s+to|have\s+to)\s+(?:know|remember)\b|\bteam\s+memory\b/i;

export function routeTurn(input: {
  bot: Pick<Bot, "accountId"> & { teamId?: string | null };
  /** MEMT1: a person's message of this turn says the whole team should know. */
  saysTeamShouldKnow?: boolean;
  conversation: Pick<Conversation, "place">;
  /** ROUTE1 */
  talkerAccountId: string;
  /** The bot's shared computer's account (needed only for a shared place). */
  sharedAccountId: string | undefined;
}): TurnRoute {
  const { bot, conversation, talkerAccountId } = input;
  const memory = {
    botOwnerAccountId: bot.accountId,
    teamMemory: (bot.teamId ?? null) !== null && input.saysTeamShouldKnow === true, // MEMT1
  };
  if (conversation.place === "shared") {
    if (input.sharedAccountId === undefined)
      throw new Error("a shared place needs the bot's shared computer's account");
    return {
      row: "shared",
      talkerAccountId,
      computerAccountId: input.sharedAccountId,
      userSecretsOf: null, // ROUTE2
      botSecrets: true,
      // ROUTE4: the shared computer's redactor covers the bot's secrets (its owner's records) and
      // every secret lent to the bot in any of its places (secrets/ SECR15).
      redactionAccountId: input.sharedAccountId,
      approverAccountId: bot.accountId, // ROUTE3
      ...memory,
    };
  }
  if (talkerAccountId === bot.accountId)
    return {
      row: "owner",
      talkerAccountId,
      computerAccountId: bot.accountId,
      userSecretsOf: bot.accountId,
      botSecrets: true,
      redactionAccountId: bot.accountId,
      approverAccountId: bot.accountId,
      ...memory,
    };
  return {
    row: "teammate",
    talkerAccountId,
    computerAccountId: talkerAccountId,
    userSecretsOf: talkerAccountId,
    botSecrets: false, // ROUTE2
    redactionAccountId: talkerAccountId,
    approverAccountId: talkerAccountId, // ROUTE3
    ...memory,
  };
}
