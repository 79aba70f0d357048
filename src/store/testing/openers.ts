/**
 * Opens a migrated store on each database the store suites run against: SQLite in a temporary
 * folder, and Postgres in a fresh test database when Postgres is available (undefined: skip).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, postgresAvailable } from "../../../test/support/postgres.ts";
import { createPostgresDriver } from "../postgres-driver.ts";
import { createSqlStore } from "../sql-store.ts";
import { createSqliteDriver } from "../sqlite-driver.ts";
import type { Store } from "../types.ts";

export type StoreOpener = () => Promise<{ store: Store; close: () => Promise<void> }>;

export async function storeOpeners(prefix: string): Promise<[string, StoreOpener | undefined][]> {
  const postgres = await postgresAvailable();

  return [
    [
      "sqlite",
      async () => {
        const dir = mkdtempSync(join(tmpdir(), prefix));
        const store = createSqlStore(createSqliteDriver(join(dir, "roost.db")));
        await store.migrate();
        return {
          store,
          close: async () => {
            await store.close();
            rmSync(dir, { recursive: true, force: true });
          },
        };
      },
    ],
    [
      "postgres",
      postgres.ok
        ? async () => {
            const database = await createTestDatabase();
            const store = createSqlStore(createPostgresDriver(database.url));
            await store.migrate();
            return {
              store,
              close: async () => {
                await store.close();
                await database.drop();
              },
            };
          }
        : undefined,
    ],
  ];
}
