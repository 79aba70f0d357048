/**
 * Test support for store/: a real driver that can be told to fail one statement, to prove that a
 * write of several rows is all or nothing (STORE4, STORE7). Never imported by production code.
 */
import type { SqlDriver, SqlExecutor } from "../driver.ts";

export interface FaultyDriver extends SqlDriver {
  /** The next statement matching `pattern` throws instead of running (once). */
  failNext(pattern: RegExp): void;
}

export const injectedFault = "injected fault: the database failed this statement";

export function withFaults(driver: SqlDriver): FaultyDriver {
  let pending: RegExp | undefined;
  const check = (sql: string) => {
    if (pending?.test(sql) !== true) return;
    pending = undefined;
    throw new Error(`${injectedFault} (${sql.slice(0, 60)})`);
  };
  const guarded = (executor: SqlExecutor): SqlExecutor => ({
    all: async (sql, params) => {
      check(sql);
      return executor.all(sql, params);
    },
    run: async (sql, params) => {
      check(sql);
      return executor.run(sql, params);
    },
  });
  const direct = guarded(driver);
  return {
    kind: driver.kind,
    lockRows: driver.lockRows,
    all: (sql, params) => direct.all(sql, params),
    run: (sql, params) => direct.run(sql, params),
    transaction: (work) => driver.transaction((tx) => work(guarded(tx))),
    withMigrationLock: (work) => driver.withMigrationLock(work),
    isUniqueViolation: (error) => driver.isUniqueViolation(error),
    isForeignKeyViolation: (error) => driver.isForeignKeyViolation(error),
    close: () => driver.close(),
    failNext(pattern) {
      pending = pattern;
    },
  };
}
