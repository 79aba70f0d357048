/** Postgres through `pg`'s pool. BIGINT columns come back as numbers (all ours fit in 2^53). */
import pg from "pg";
import type { SqlDriver, SqlExecutor, SqlValue } from "./driver.ts";

const int8Oid = 20;

/** `?` placeholders → `$1, $2…` (our queries never contain a literal `?`). */
function numberPlaceholders(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}

function executorFor(client: pg.Pool | pg.PoolClient): SqlExecutor {
  return {
    async all<Row>(sql: string, params: readonly SqlValue[] = []) {
      const result = await client.query(numberPlaceholders(sql), params as SqlValue[]);
      return result.rows as Row[];
    },
    async run(sql: string, params: readonly SqlValue[] = []) {
      const result = await client.query(numberPlaceholders(sql), params as SqlValue[]);
      return { changes: result.rowCount ?? 0 };
    },
  };
}

function sqlState(error: unknown): unknown {
  return typeof error === "object" && error !== null
    ? (error as { code?: unknown }).code
    : undefined;
}

export function createPostgresDriver(connectionString: string): SqlDriver {
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    // A database that does not answer fails the operation (retryable, outages.ts) instead of hanging.
    connectionTimeoutMillis: 5000,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary"): unknown =>
        oid === int8Oid
          ? (value: string) => Number(value)
          : (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(
              oid,
              format,
            )) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that errors (server restart) must not crash the process; the pool replaces it.
  pool.on("error", () => undefined);
  const direct = executorFor(pool);

  return {
    kind: "postgres",
    all: (sql, params) => direct.all(sql, params),
    run: (sql, params) => direct.run(sql, params),
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await work(executorFor(client));
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async withMigrationLock(work) {
      const client = await pool.connect();
      try {
        await client.query("SELECT pg_advisory_lock(7700701)");
        return await work();
      } finally {
        await client.query("SELECT pg_advisory_unlock(7700701)").catch(() => undefined);
        client.release();
      }
    },
    lockRows: " FOR UPDATE",
    isUniqueViolation: (error) => sqlState(error) === "23505",
    isForeignKeyViolation: (error) => sqlState(error) === "23503",
    close: () => pool.end(),
  };
}
