/**
 * Store outages as errors the rest of Roost can act on. A database that is unreachable,
 * restarting, locked by another writer or out of connections fails the current operation with a
 * retryable `unavailable` RoostError; durable steps wait such errors out (engine DUR1) and the API
 * answers 503 with retry-after. Every other error (a bug, a constraint) passes through unchanged.
 *
 * Invariants:
 *   OUT1 only errors that repeating later can cure are retryable: connection failures, server
 *        shutdowns and restarts, too many connections, serialization failures, deadlocks, and
 *        SQLite's "database is locked".
 */
import { RoostError } from "../errors/index.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";

const networkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

/** SQLSTATEs (Postgres) that a later attempt can get past (OUT1). */
function isTransientSqlState(code: string): boolean {
  return (
    code.startsWith("08") || // connection exception
    ["57P01", "57P02", "57P03", "53300", "53400", "40001", "40P01", "55P03"].includes(code)
  );
}

/** OUT1: whether `error` is the database being unavailable rather than the operation being wrong. */
export function isStoreOutage(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, errcode, message } = error as {
    code?: unknown;
    errcode?: unknown;
    message?: unknown;
  };
  if (typeof code === "string" && (networkCodes.has(code) || isTransientSqlState(code)))
    return true;
  // node:sqlite: SQLITE_BUSY (5) and SQLITE_LOCKED (6), with their extended codes.
  if (typeof errcode === "number" && [5, 6].includes(errcode & 0xff)) return true;
  if (typeof message !== "string") return false;
  return /database is locked|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down)|terminating connection/i.test(
    message,
  );
}

function classify(kind: string, error: unknown): Error {
  if (!isStoreOutage(error)) return error instanceof Error ? error : new Error(String(error));
  const reason = error instanceof Error ? error.message : String(error);
  return new RoostError(
    "unavailable",
    `the ${kind} store is unavailable (${reason}); try again shortly`,
    { retryAfterMs: 1000, cause: error },
  );
}

/** Runs `work`, turning an outage it meets into a retryable error (OUT1). */
async function guarded<T>(kind: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw classify(kind, error);
  }
}

function wrapExecutor(kind: string, executor: SqlExecutor): SqlExecutor {
  return {
    all: (sql, params) => guarded(kind, () => executor.all(sql, params)),
    run: (sql, params) => guarded(kind, () => executor.run(sql, params)),
  };
}

/** The same driver, with outages turned into retryable `unavailable` errors (OUT1). */
export function classifyOutages(driver: SqlDriver): SqlDriver {
  const direct = wrapExecutor(driver.kind, driver);
  return {
    kind: driver.kind,
    all: (sql, params) => direct.all(sql, params),
    run: (sql, params) => direct.run(sql, params),
    transaction: (work) =>
      guarded(driver.kind, () => driver.transaction((tx) => work(wrapExecutor(driver.kind, tx)))),
    withMigrationLock: (work) => driver.withMigrationLock(work),
    lockRows: driver.lockRows,
    isUniqueViolation: (error) =>
      driver.isUniqueViolation(error instanceof RoostError ? error.cause : error),
    isForeignKeyViolation: (error) =>
      driver.isForeignKeyViolation(error instanceof RoostError ? error.cause : error),
    close: () => driver.close(),
  };
}
