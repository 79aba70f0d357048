/** What the turn's route (types.ts TurnRoute) means for the secrets a computer tool uses. */
import type { ToolTurnContext } from "./types.ts";

/** ROUTE4 (teams/routing.ts): the account whose secrets the turn's redactor covers. */
export const redactionAccountOf = (context: ToolTurnContext): string =>
  context.route?.redactionAccountId ?? context.accountId;

/** ROUTE2: whose user secrets, and whether the bot's own, reach the turn's shell. */
export const secretsOwnersOf = (
  context: ToolTurnContext,
): { userAccountId: string | null; botId: string | null; consentedIn?: string } =>
  context.route === undefined
    ? { userAccountId: context.accountId, botId: context.botId }
    : {
        userAccountId: context.route.userSecretsOf,
        botId: context.route.botSecrets ? context.botId : null,
        // TEAM7: in a shared place, the secrets people lent the bot there come along.
        ...(context.route.row === "shared" ? { consentedIn: context.conversationId } : {}),
      };
