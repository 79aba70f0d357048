/**
 * Secrets (docs/api.md "Secrets", docs/secrets.md): a bot's own and the caller's (shared by all of
 * their bots). Values go in; only names and metadata come out.
 *
 * Invariants:
 *   SECAPI1 every route reads and writes the caller's own bots and secrets only: another account's
 *           bot answers 404 exactly like a missing one.
 *   SECAPI2 no response, error or audit row holds a value (SECR8): `PUT` answers the secret's view.
 *   SECAPI3 a bad body, name or value is a 400 that says how to fix it, and stores nothing.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { NotFoundError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import { maxSecretsPerOwner, type SecretsService } from "../secrets/index.ts";
import type { Account, Bot, SecretScope, Store } from "../store/index.ts";
import { ownBotOf } from "./ownership.ts";
import { readJson } from "./validation.ts";

const putBody = z.strictObject({
  value: z.string({ error: 'send {"value": "..."}: the secret\'s value as a string' }),
  broker: z
    .strictObject({
      hosts: z.array(z.string(), { error: "broker.hosts is a list of host names" }),
    })
    .optional(),
});

type SecretsApp = Hono<{ Variables: { account: Account } }>;
type SecretsContext = Context<{ Variables: { account: Account } }>;

export function registerSecretRoutes(
  app: SecretsApp,
  deps: { store: Store; secrets: SecretsService },
): void {
  const { store, secrets } = deps;
  // SECAPI1
  const ownBot = (context: SecretsContext): Promise<Bot> =>
    ownBotOf(store, context.get("account").id, context.req.param("id") ?? "");
  const owner = async (
    context: SecretsContext,
    scope: SecretScope,
  ): Promise<{ ownerId: string; accountId: string }> => {
    const accountId = context.get("account").id;
    return scope === "bot"
      ? { ownerId: (await ownBot(context)).id, accountId }
      : { ownerId: accountId, accountId };
  };

  for (const [scope, base] of [
    ["bot", "/v1/bots/:id/secrets"],
    ["user", "/v1/me/secrets"],
  ] as const) {
    app.get(base, async (context) => {
      const { ownerId } = await owner(context, scope);
      return context.json({
        secrets: await secrets.list(scope, ownerId),
        limit: maxSecretsPerOwner,
      } satisfies Api.SecretList);
    });

    app.put(`${base}/:name`, async (context) => {
      const { ownerId, accountId } = await owner(context, scope);
      const body = await readJson(context, putBody); // SECAPI3
      const { created, secret } = await secrets.put({
        scope,
        ownerId,
        accountId,
        name: context.req.param("name"),
        value: body.value,
        broker: body.broker,
        actorAccountId: accountId,
      });
      return context.json(secret, created ? 201 : 200); // SECAPI2
    });

    app.delete(`${base}/:name`, async (context) => {
      const { ownerId, accountId } = await owner(context, scope);
      const name = context.req.param("name");
      const deleted = await secrets.delete({ scope, ownerId, name, actorAccountId: accountId });
      if (!deleted) throw new NotFoundError("secret", name);
      return context.body(null, 204);
    });
  }
}
