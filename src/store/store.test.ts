import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "vitest";
import { createTestDatabase, postgresAvailable } from "../../test/support/postgres.ts";
import type { SqlDriver } from "./driver.ts";
import { createPostgresDriver } from "./postgres-driver.ts";
import { createSqlStore } from "./sql-store.ts";
import { createSqliteDriver } from "./sqlite-driver.ts";
import { resultsContract } from "./results.contract.ts";
import { storeContract } from "./store.contract.ts";
import { withFaults } from "./testing/faulty-driver.ts";

/** A migrated store over the real driver, which a case may tell to fail one statement. */
async function openFaultable(driver: SqlDriver) {
  const faulty = withFaults(driver);
  const store = createSqlStore(faulty);
  await store.migrate();
  return { store, faults: faulty };
}

const openSqlite = async () => {
  const dir = mkdtempSync(join(tmpdir(), "roost-store-"));
  const { store, faults } = await openFaultable(createSqliteDriver(join(dir, "roost.db")));
  return {
    store,
    faults,
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
storeContract("sqlite", openSqlite);
resultsContract("sqlite", openSqlite);

const postgres = await postgresAvailable();
if (postgres.ok) {
  const openPostgres = async () => {
    const database = await createTestDatabase();
    const { store, faults } = await openFaultable(createPostgresDriver(database.url));
    return {
      store,
      faults,
      async close() {
        await store.close();
        await database.drop();
      },
    };
  };
  storeContract("postgres", openPostgres);
  resultsContract("postgres", openPostgres);
} else {
  describe("store contract: postgres", () => {
    console.warn(`skipping the Postgres store contract: ${postgres.reason}`);
    it.skip(`needs Postgres: ${postgres.reason}`, () => undefined);
  });
}
