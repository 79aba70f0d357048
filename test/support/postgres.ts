/**
 * A throwaway Postgres database for one test file. In CI (CI=true) Postgres is required; elsewhere
 * a missing server skips the Postgres runs with a printed reason.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const postgresAdminUrl =
  process.env.ROOST_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export async function postgresAvailable(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const client = new pg.Client({
    connectionString: postgresAdminUrl,
    connectionTimeoutMillis: 2000,
  });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return { ok: true };
  } catch (error) {
    const reason = `Postgres at ${postgresAdminUrl} is not reachable (${(error as Error).message})`;
    if (process.env.CI === "true") throw new Error(`${reason}; CI requires it`, { cause: error });
    return { ok: false, reason };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Creates a fresh database; returns its URL and a drop function. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `roost_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}
