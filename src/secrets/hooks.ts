/**
 * The secrets module's part in a turn: the tool router's redaction hooks (TOOL3) and the
 * `request_secret` tool.
 *
 * Invariants:
 *   SECR11 redaction fails closed: `redact` for an account whose redactor `prepare` has not loaded
 *          throws (the call fails and is retried) rather than let a result through unredacted.
 *   SECR12 `request_secret` never takes or returns a value: it notifies the owner once per (bot,
 *          name) (the notification's id; a flood of requests is one card) and tells the model the
 *          value will be in `$NAME`; the owner's value goes straight to the store through the API.
 */
import { z } from "zod";
import type { Notifier } from "../notifications/index.ts";
import type { Store } from "../store/index.ts";
import {
  defineToolSource,
  type OutputRedaction,
  type RedactionHook,
  type ToolSource,
  redactionAccountOf,
  type ToolTurnContext,
} from "../tools/index.ts";
import { createStreamRedactor, type Redactor } from "./redactor.ts";
import { secretNameProblem, type SecretsService } from "./service.ts";

export interface SecretRedaction {
  prepareRedaction(context: ToolTurnContext): Promise<void>;
  redact: RedactionHook;
  redactStream(context: ToolTurnContext): OutputRedaction;
}

export function createSecretRedaction(
  secrets: Pick<SecretsService, "redactorFor">,
): SecretRedaction {
  const loaded = new Map<string, Redactor>();
  const current = (accountId: string): Redactor => {
    const redactor = loaded.get(accountId);
    if (redactor === undefined)
      throw new Error(`secrets: no redactor loaded for account ${accountId} (prepare runs first)`); // SECR11
    return redactor;
  };
  return {
    async prepareRedaction(context) {
      const accountId = redactionAccountOf(context); // ROUTE4
      loaded.set(accountId, await secrets.redactorFor(accountId));
    },
    redact: (value, context) => current(redactionAccountOf(context)).value(value),
    redactStream: (context) => createStreamRedactor(current(redactionAccountOf(context))),
  };
}

export const requestSecretToolName = "request_secret";

const description = [
  "Ask the owner for a secret you need but do not have (an API key, a token, a password).",
  "Never ask for a secret in chat and never write one yourself: the owner enters it in Roost, and it then is the environment variable $NAME of your shell commands.",
  "You never see its value; outputs show it as [REDACTED].",
].join(" ");

export function createRequestSecretTool(deps: {
  store: Store;
  secrets: Pick<SecretsService, "list">;
  notifier: Notifier;
}): ToolSource {
  return defineToolSource("secrets", [
    {
      name: requestSecretToolName,
      description,
      input: z.strictObject({
        name: z.string().describe("The variable's name, e.g. OPENAI_API_KEY"),
        reason: z.string().min(1).max(500).describe("What you need it for, in one line"),
      }),
      async run(input, context) {
        const { name, reason } = input as { name: string; reason: string };
        const problem = secretNameProblem(name);
        if (problem !== undefined) return { output: `Not requested: ${problem}.`, isError: true };
        const have = [
          ...(await deps.secrets.list("bot", context.botId)),
          ...(await deps.secrets.list("user", context.accountId)),
        ].some((secret) => secret.name === name);
        if (have)
          return {
            output: `${name} is already set: use $${name} in your shell commands.`,
            isError: false,
            details: { secret: name, provided: true },
          };
        const bot = await deps.store.getBot(context.botId);
        await deps.notifier.notify({
          id: `secret_request:${context.botId}:${name}`, // SECR12
          accountId: context.accountId,
          kind: "secret_request",
          title: `${bot?.name ?? "A bot"} asks for the secret ${name}`,
          body: `${reason}\nSet it for this bot: PUT /v1/bots/${context.botId}/secrets/${name} {"value": "…"}, or for all of your bots under /v1/me/secrets.`,
          botId: context.botId,
          conversationId: context.conversationId,
          subjectId: name,
        });
        return {
          output: `Asked the owner for ${name}. Once they provide it, it is $${name} in your shell commands (you will not see its value). Carry on with what you can do without it, or end your turn and say what you are waiting for.`,
          isError: false,
          details: { secret: name, requested: true },
        };
      },
    },
  ]);
}
