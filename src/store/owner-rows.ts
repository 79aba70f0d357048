/**
 * Rows kept per owner, a bot (scope `bot`) or an account (scope `user`): the secrets and the MCP
 * servers. Both list an owner's rows by name, and both write under a lock on the owner's own row,
 * so writers of one owner's rows take turns and a count against a limit holds (Postgres; SQLite's
 * write transaction holds the whole database already).
 */
import type { SqlDriver, SqlExecutor } from "./driver.ts";

export type OwnerScope = "bot" | "user";
type OwnerTable = "secrets" | "mcp_servers";

/** The owner's rows of `table`, by name. */
export function listOwnerRows<Row>(
  executor: SqlExecutor,
  table: OwnerTable,
  scope: OwnerScope,
  ownerId: string,
): Promise<Row[]> {
  return executor.all<Row>(
    `SELECT * FROM ${table} WHERE scope = ? AND owner_id = ? ORDER BY name`,
    [scope, ownerId],
  );
}

/** Locks the owner's row for the transaction, then answers its rows of `table`. */
export async function lockOwnerRows<Row>(
  driver: SqlDriver,
  tx: SqlExecutor,
  table: OwnerTable,
  scope: OwnerScope,
  ownerId: string,
): Promise<Row[]> {
  await tx.all(
    scope === "bot"
      ? `SELECT id FROM bots WHERE id = ?${driver.lockRows}`
      : `SELECT id FROM accounts WHERE id = ?${driver.lockRows}`,
    [ownerId],
  );
  return listOwnerRows<Row>(tx, table, scope, ownerId);
}
