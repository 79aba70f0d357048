import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { createTestDatabase, postgresAvailable } from "../../test/support/postgres.ts";
import type { SqlDriver } from "./driver.ts";
import { createPostgresDriver } from "./postgres-driver.ts";
import { createSqlStore } from "./sql-store.ts";
import { createSqliteDriver } from "./sqlite-driver.ts";
import { routineStoreContract } from "./routine.contract.ts";
import { resultsContract } from "./results.contract.ts";
import { approvalsContract } from "./approvals.contract.ts";
import { attachmentsContract } from "./attachments.contract.ts";
import { screenLeasesContract } from "./screen-leases.contract.ts";
import { searchContract } from "./search.contract.ts";
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
routineStoreContract("sqlite", openSqlite);
approvalsContract("sqlite", openSqlite);
attachmentsContract("sqlite", openSqlite);
screenLeasesContract("sqlite", openSqlite);
searchContract("sqlite", openSqlite);

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
  routineStoreContract("postgres", openPostgres);
  approvalsContract("postgres", openPostgres);
  attachmentsContract("postgres", openPostgres);
  screenLeasesContract("postgres", openPostgres);
  searchContract("postgres", openPostgres);
} else {
  describe("store contract: postgres", () => {
    console.warn(`skipping the Postgres store contract: ${postgres.reason}`);
    it.skip(`needs Postgres: ${postgres.reason}`, () => undefined);
  });
}

describe("store migrations: sqlite", () => {
  it("migration 17 moves a log indexed before MEM5 into the per-bot index, and search finds it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-store-"));
    const path = join(dir, "roost.db");
    try {
      const store = createSqlStore(createSqliteDriver(path));
      await store.migrate();
      const account = await store.createAccount({ name: "a", isAdmin: false });
      const bot = await store.createBot({
        accountId: account.id,
        name: "b",
        instructions: "",
        model: null,
      });
      await store.changeMemory({
        accountId: account.id,
        botId: bot.id,
        tier: "log",
        action: "add",
        text: "Renewed the staging certificate",
        author: "tool",
      });
      await store.close();
      // Back to the index as migration 9 built it: the entry in memory_log_search only.
      const db = new DatabaseSync(path);
      db.exec(`CREATE VIRTUAL TABLE memory_log_search USING fts5(fact_id UNINDEXED, text);
        INSERT INTO memory_log_search (fact_id, text) SELECT id, text FROM memory_facts WHERE tier = 'log';
        DROP TABLE memory_log_words; DELETE FROM schema_migrations WHERE version = 17;`);
      db.close();
      const migrated = createSqlStore(createSqliteDriver(path));
      await migrated.migrate();
      const hits = await migrated.searchMemoryLog({
        accountId: account.id,
        botId: bot.id,
        text: "certificate",
        limit: 5,
      });
      expect(hits.map((hit) => hit.text)).toEqual(["Renewed the staging certificate"]);
      await migrated.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Two admins, as nodes racing on a fresh database made them before migration 22. */
async function twoAdminsThenMigrate(driver: () => SqlDriver) {
  const store = createSqlStore(driver());
  await store.migrate();
  const raw = driver();
  await raw.run("DROP INDEX accounts_one_admin");
  await raw.run("DELETE FROM schema_migrations WHERE version = 22");
  const first = await store.createAccount({ name: "admin", isAdmin: true });
  await new Promise((resolve) => setTimeout(resolve, 5));
  const second = await store.createAccount({ name: "admin", isAdmin: true });
  await store.migrate();
  const admins = await raw.all<{ id: string }>("SELECT id FROM accounts WHERE is_admin = 1");
  await raw.close();
  await store.close();
  return { first, second, admins };
}

describe("store migrations: one admin (STORE-ADMIN1)", () => {
  it("migration 22 keeps the older of two admins on SQLite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-store-"));
    try {
      const { first, admins } = await twoAdminsThenMigrate(() =>
        createSqliteDriver(join(dir, "roost.db")),
      );
      expect(admins.map((admin) => admin.id)).toEqual([first.id]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(postgres.ok)("migration 22 keeps the older of two admins on Postgres", async () => {
    const database = await createTestDatabase();
    try {
      const { first, admins } = await twoAdminsThenMigrate(() =>
        createPostgresDriver(database.url),
      );
      expect(admins.map((admin) => admin.id)).toEqual([first.id]);
    } finally {
      await database.drop();
    }
  });
});
