/**
 * The model providers part of the store (provider-types.ts, MPST1–MPST2) and the accounts list,
 * on SQLite and on Postgres: the same cases against both real databases, racing writers included.
 */
import { describe, expect, it } from "vitest";
import { storeOpeners } from "./testing/openers.ts";
import type { ModelProviderRecord, Store } from "./types.ts";

const openers = await storeOpeners("roost-providers-");

const server = (
  actorAccountId: string,
  fields: Partial<ModelProviderRecord> = {},
): Omit<ModelProviderRecord, "createdAt" | "updatedAt"> & { actorAccountId: string } => ({
  id: "ollama",
  kind: "openai-compatible",
  label: "Ollama",
  baseUrl: "http://127.0.0.1:11434/v1",
  sealedKey: null,
  keyHint: null,
  actorAccountId,
  ...fields,
});

async function adminOf(store: Store): Promise<string> {
  return (await store.ensureAdminAccount("admin")).account.id;
}

describe.each(openers)("model providers on %s", (_name, open) => {
  it.skipIf(open === undefined)(
    "MPST1: a put of an existing id replaces it; MPST2: puts and deletes audited without the key",
    async () => {
      const { store, close } = await open!();
      try {
        const admin = await adminOf(store);
        expect((await store.putModelProvider(server(admin))).outcome).toBe("created");
        const replaced = await store.putModelProvider(
          server(admin, { label: "GPU box", sealedKey: "v1:sealed-bytes", keyHint: "WXYZ" }),
        );
        expect(replaced.outcome).toBe("replaced");
        const listed = await store.listModelProviders();
        expect(listed).toEqual([
          expect.objectContaining({
            id: "ollama",
            label: "GPU box",
            sealedKey: "v1:sealed-bytes",
            keyHint: "WXYZ",
            createdAt: replaced.record.createdAt,
          }),
        ]);
        expect(await store.deleteModelProvider({ id: "ollama", actorAccountId: admin })).toBe(true);
        expect(await store.deleteModelProvider({ id: "ollama", actorAccountId: admin })).toBe(
          false,
        );
        expect(await store.listModelProviders()).toEqual([]);
        const audit = await store.listAudit({ accountId: admin });
        expect(audit.map((entry) => entry.action).sort()).toEqual([
          "model_provider.delete",
          "model_provider.put",
          "model_provider.put",
        ]);
        expect(JSON.stringify(audit)).not.toContain("sealed-bytes");
      } finally {
        await close();
      }
    },
  );

  it.skipIf(open === undefined)(
    "MPST1 under racing writers: ten puts of one id leave one row",
    async () => {
      const { store, close } = await open!();
      try {
        const admin = await adminOf(store);
        const outcomes = await Promise.all(
          Array.from({ length: 10 }, (_, index) =>
            store
              .putModelProvider(server(admin, { label: `writer ${index}` }))
              .then((result) => result.outcome)
              .catch((error: unknown) => (error as Error).message),
          ),
        );
        const listed = await store.listModelProviders();
        expect(listed).toHaveLength(1);
        expect(outcomes.filter((outcome) => outcome === "created")).toHaveLength(1);
        expect(outcomes.filter((outcome) => outcome === "replaced")).toHaveLength(9); // none failed
      } finally {
        await close();
      }
    },
  );

  it.skipIf(open === undefined)("the accounts list: every account, oldest first", async () => {
    const { store, close } = await open!();
    try {
      await adminOf(store);
      await store.createAccount({ name: "uma", isAdmin: false });
      await store.createAccount({ name: "nia", isAdmin: false });
      expect((await store.listAccounts()).map((account) => account.name)).toEqual([
        "admin",
        "uma",
        "nia",
      ]);
    } finally {
      await close();
    }
  });
});
