/**
 * The small SQL surface both databases share. Queries are written once with `?` placeholders;
 * the Postgres driver numbers them. Everything above this file is database-neutral.
 */

/** Uint8Array: binary columns (BLOB on SQLite, BYTEA on Postgres). */
export type SqlValue = string | number | null | Uint8Array;

export interface SqlExecutor {
  all<Row>(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
  run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
}

export interface SqlDriver extends SqlExecutor {
  readonly kind: "sqlite" | "postgres";
  /** Runs `work` in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Runs `work` while holding a lock that keeps other processes from migrating at once. */
  withMigrationLock<T>(work: () => Promise<T>): Promise<T>;
  /**
   * Appended to a `SELECT` inside a transaction to lock the rows it reads until the transaction
   * ends: ` FOR UPDATE` on Postgres; empty on SQLite, whose write transactions already hold the
   * whole database.
   */
  readonly lockRows: string;
  isUniqueViolation(error: unknown): boolean;
  isForeignKeyViolation(error: unknown): boolean;
  close(): Promise<void>;
}
