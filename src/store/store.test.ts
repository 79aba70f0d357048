import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "vitest";
import { createTestDatabase, postgresAvailable } from "../../test/support/postgres.ts";
import { openStore } from "./index.ts";
import { storeContract } from "./store.contract.ts";

storeContract("sqlite", async () => {
  const dir = mkdtempSync(join(tmpdir(), "roost-store-"));
  const store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  return {
    store,
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

const postgres = await postgresAvailable();
if (postgres.ok) {
  storeContract("postgres", async () => {
    const database = await createTestDatabase();
    const store = await openStore({ kind: "postgres", url: database.url });
    return {
      store,
      async close() {
        await store.close();
        await database.drop();
      },
    };
  });
} else {
  describe("store contract: postgres", () => {
    console.warn(`skipping the Postgres store contract: ${postgres.reason}`);
    it.skip(`needs Postgres: ${postgres.reason}`, () => undefined);
  });
}
