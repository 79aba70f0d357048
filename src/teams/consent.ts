/**
 * Consent cards (docs/teams.md "Consent"): a person's credential is used in a shared place only
 * after they said yes there. Wraps the tool policy's hooks (TOOL2).
 *
 *   CONS1 in a shared place, a shell call that names (`$NAME`, `${NAME}`) a user secret of the
 *         talking person which is not the bot's own and not yet lent to the bot there waits for a
 *         consent card that only that person can answer (an approval whose approver is them).
 *   CONS2 a yes is remembered per bot, place, credential kind and name (TEAM7) and the call then
 *         goes through the bot's own policy as any other; a no, or no answer, runs nothing.
 *   CONS3 until a consent is given the value never reaches the shared computer; after a revoke
 *         (DELETE /v1/me/consents) the next call asks again.
 */
import type { Store } from "../store/index.ts";
import type { AskHook, PolicyHook, ToolTurnContext } from "../tools/index.ts";

/** A consent's kind for a secret; MCP servers and connected accounts will add theirs. */
export const secretConsentKind = "secret";

const referencedNames = (command: string) =>
  new Set([...command.matchAll(/\$\{?([A-Z][A-Z0-9_]*)/g)].map((match) => match[1]!));

/** CONS1: the talking person's secrets this call would need lent. */
async function missingConsents(
  store: Store,
  call: { name: string; input: unknown },
  context: ToolTurnContext,
): Promise<string[]> {
  const route = context.route;
  if (route?.row !== "shared" || call.name !== "shell") return [];
  const command = (call.input as { command?: unknown } | null)?.command;
  if (typeof command !== "string") return [];
  const named = referencedNames(command);
  if (named.size === 0) return [];
  const [theirs, bots, lent] = await Promise.all([
    store.listSecrets("user", route.talkerAccountId),
    store.listSecrets("bot", context.botId),
    store.listConsents({ botId: context.botId, placeId: context.conversationId }),
  ]);
  const own = new Set(bots.map((record) => record.name));
  const given = new Set(
    lent
      .filter(
        (consent) =>
          consent.ownerAccountId === route.talkerAccountId && consent.kind === secretConsentKind,
      )
      .map((consent) => consent.name),
  );
  return theirs
    .map((record) => record.name)
    .filter((name) => named.has(name) && !own.has(name) && !given.has(name));
}

export function createConsentHooks(deps: { store: Store; policy: PolicyHook; ask: AskHook }): {
  policy: PolicyHook;
  ask: AskHook;
} {
  const { store } = deps;
  const reasonFor = async (names: string[], context: ToolTurnContext) => {
    const person = (await store.getAccount(context.route!.talkerAccountId))?.name ?? "someone";
    const list = names.join(", ");
    return `consent: this command uses ${person}'s secret${names.length > 1 ? "s" : ""} ${list} in a shared conversation; only ${person} can allow it, and a yes is remembered for this bot in this conversation (revoke with DELETE /v1/me/consents)`;
  };
  return {
    async policy(call, context) {
      const missing = await missingConsents(store, call, context);
      if (missing.length > 0) return { decision: "ask", reason: await reasonFor(missing, context) }; // CONS1
      return deps.policy(call, context);
    },

    async ask(call, context) {
      const missing = await context.durable.step("consent:missing", () =>
        missingConsents(store, call, context),
      );
      if (missing.length === 0) return deps.ask(call, context);
      const talker = context.route!.talkerAccountId;
      const answer = await deps.ask({ ...call, approverAccountId: talker }, context); // CONS1
      if (answer.decision !== "allow") return answer;
      await context.durable.step("consent:grant", async () => {
        for (const name of missing)
          await store.grantConsent({
            botId: context.botId,
            placeId: context.conversationId,
            ownerAccountId: talker,
            kind: secretConsentKind,
            name,
          }); // CONS2
      });
      // CONS2: consent lends the credential; the bot's own policy still judges the call.
      const after = await context.durable.step("consent:policy", () => deps.policy(call, context));
      if (after.decision !== "ask") return after;
      return deps.ask(
        { ...call, reason: after.reason, review: after.review ?? null },
        { ...context, callId: `${context.callId}:after-consent` },
      );
    },
  };
}
