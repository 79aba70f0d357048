/**
 * The secrets part of the store (secret-types.ts, SST1–SST3) on SQLite and on Postgres: the same
 * cases run against both real databases, racing writers included.
 */
import { describe, expect, it } from "vitest";
import { storeOpeners } from "./testing/openers.ts";
import type { PutSecretInput, Store } from "./types.ts";

const openers = await storeOpeners("roost-secrets-");

async function owners(store: Store) {
  const account = await store.createAccount({ name: "a", isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "b",
    instructions: "",
    model: null,
  });
  return { accountId: account.id, botId: bot.id };
}

const put = (
  input: Omit<PutSecretInput, "sealed" | "brokerHosts" | "limit" | "actorAccountId"> &
    Partial<PutSecretInput>,
): PutSecretInput => ({
  sealed: "v1:sealed",
  brokerHosts: null,
  limit: 25,
  actorAccountId: input.accountId,
  ...input,
});

describe.each(openers)("secrets on %s", (_name, open) => {
  it.skipIf(open === undefined)(
    "SST1: a PUT of an existing name replaces it; SST3: both audited",
    async () => {
      const { store, close } = await open!();
      try {
        const { accountId, botId } = await owners(store);
        const first = await store.putSecret(
          put({ scope: "bot", ownerId: botId, accountId, name: "A_KEY" }),
        );
        expect(first.outcome).toBe("created");
        const second = await store.putSecret(
          put({
            scope: "bot",
            ownerId: botId,
            accountId,
            name: "A_KEY",
            sealed: "v1:other",
            brokerHosts: ["api.example.com"],
          }),
        );
        expect(second.outcome).toBe("replaced");
        const listed = await store.listSecrets("bot", botId);
        expect(listed).toHaveLength(1);
        expect(listed[0]).toMatchObject({ sealed: "v1:other", brokerHosts: ["api.example.com"] });
        await store.putSecret(put({ scope: "user", ownerId: accountId, accountId, name: "A_KEY" }));
        expect(await store.listAccountSecrets(accountId)).toHaveLength(2);
        expect(
          await store.deleteSecret({
            scope: "user",
            ownerId: accountId,
            name: "A_KEY",
            actorAccountId: accountId,
          }),
        ).toBe(true);
        expect(
          await store.deleteSecret({
            scope: "user",
            ownerId: accountId,
            name: "A_KEY",
            actorAccountId: accountId,
          }),
        ).toBe(false);
        const actions = (await store.listAudit({ accountId })).map((entry) => entry.action);
        expect(actions.filter((action) => action === "secret.put")).toHaveLength(3);
        expect(actions).toContain("secret.delete");
      } finally {
        await close();
      }
    },
  );

  it.skipIf(open === undefined)(
    "SST2: 30 racing new names under a limit of 25 store exactly 25",
    async () => {
      const { store, close } = await open!();
      try {
        const { accountId, botId } = await owners(store);
        for (const [scope, ownerId] of [
          ["bot", botId],
          ["user", accountId],
        ] as const) {
          const outcomes = await Promise.all(
            Array.from({ length: 30 }, (_, index) =>
              store.putSecret(put({ scope, ownerId, accountId, name: `K_${index}` })),
            ),
          );
          expect(
            outcomes.filter((outcome) => outcome.outcome === "created"),
            scope,
          ).toHaveLength(25);
          expect(
            outcomes.filter((outcome) => outcome.outcome === "limited"),
            scope,
          ).toHaveLength(5);
          expect(await store.listSecrets(scope, ownerId)).toHaveLength(25);
        }
      } finally {
        await close();
      }
    },
  );

  it.skipIf(open === undefined)("a deleted bot's secrets go with it; the user's stay", async () => {
    const { store, close } = await open!();
    try {
      const { accountId, botId } = await owners(store);
      await store.putSecret(put({ scope: "bot", ownerId: botId, accountId, name: "BOT_KEY" }));
      await store.putSecret(
        put({ scope: "user", ownerId: accountId, accountId, name: "USER_KEY" }),
      );
      await store.deleteBot({ id: botId, actorAccountId: accountId });
      expect((await store.listAccountSecrets(accountId)).map((record) => record.name)).toEqual([
        "USER_KEY",
      ]);
    } finally {
      await close();
    }
  });
});
