/**
 * SQLite through Node's built-in `node:sqlite` (no native addon to build).
 *
 * One connection serves the process. Its calls are synchronous, but transactions span awaits,
 * so every use goes through one promise queue: nothing from another request can slip into an
 * open transaction.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { SqlDriver, SqlExecutor, SqlValue } from "./driver.ts";
import { logIndexWords } from "./log-words.ts";

/**
 * The database holds every conversation: only its owner may read it. SQLite gives the -wal and
 * -shm files the database file's mode, so creating it 0600 covers them; an install from before
 * this (0644) is tightened at every open.
 */
function restrictDatabaseFiles(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, "a", 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    try {
      chmodSync(file, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
}

export function createSqliteDriver(path: string): SqlDriver {
  if (path !== ":memory:") restrictDatabaseFiles(path);
  const database = new DatabaseSync(path);
  database.exec("PRAGMA journal_mode = WAL");
  database.exec("PRAGMA synchronous = NORMAL");
  // Short: a write that waits blocks the whole process (node:sqlite is synchronous); an outage
  // surfaces as a retryable error instead (outages.ts) and the durable step waits it out.
  database.exec("PRAGMA busy_timeout = 250");
  database.exec("PRAGMA foreign_keys = ON");
  database.function("roost_log_words", { deterministic: true }, (botId, text) =>
    logIndexWords(String(botId), String(text)),
  );

  const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = database.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };

  const direct: SqlExecutor = {
    async all<Row>(sql: string, params: readonly SqlValue[] = []) {
      return prepare(sql).all(...params) as Row[];
    },
    async run(sql: string, params: readonly SqlValue[] = []) {
      const result = prepare(sql).run(...params);
      return { changes: Number(result.changes) };
    },
  };

  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };

  return {
    kind: "sqlite",
    all: (sql, params) => exclusive(() => direct.all(sql, params)),
    run: (sql, params) => exclusive(() => direct.run(sql, params)),
    transaction: (work) =>
      exclusive(async () => {
        database.exec("BEGIN IMMEDIATE");
        try {
          const result = await work(direct);
          database.exec("COMMIT");
          return result;
        } catch (error) {
          database.exec("ROLLBACK");
          throw error;
        }
      }),
    withMigrationLock: (work) => work(),
    lockRows: "",
    isForeignKeyViolation: (error) =>
      error instanceof Error && /FOREIGN KEY constraint failed/.test(error.message),
    isUniqueViolation: (error) =>
      error instanceof Error &&
      /UNIQUE constraint failed|PRIMARY KEY constraint failed/.test(error.message),
    close: () =>
      exclusive(async () => {
        database.close();
      }),
  };
}
