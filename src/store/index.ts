import type { StoreConfig } from "../config/index.ts";
import { classifyOutages } from "./outages.ts";
import { createPostgresDriver } from "./postgres-driver.ts";
import { createSqlStore, type SqlStoreOptions } from "./sql-store.ts";
import { createSqliteDriver } from "./sqlite-driver.ts";
import type { Store } from "./types.ts";

export type * from "./types.ts";
export { stepKinds } from "./types.ts";
export { memoryTiers } from "./memory-types.ts";
export { isStoreOutage } from "./outages.ts";

/** Open the configured store and bring its schema up to date. */
export async function openStore(
  config: StoreConfig,
  options: SqlStoreOptions = {},
): Promise<Store> {
  const driver = classifyOutages(
    config.kind === "sqlite" ? createSqliteDriver(config.path) : createPostgresDriver(config.url),
  );
  const store = createSqlStore(driver, options);
  try {
    await store.migrate();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}
