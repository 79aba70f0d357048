/**
 * A Postgres server of a test's own (initdb in a temp dir, on a free port), so a fault test can
 * stop and start it without touching the shared server other tests use. Uses Debian's binaries;
 * as root it runs them as the `postgres` user (Postgres refuses to run as root).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { chown } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { findFreePort } from "../../src/engine/index.ts";

const run = promisify(execFile);

export interface PrivatePostgres {
  readonly url: string;
  /** Stops the server at once (`pg_ctl stop -m immediate`): every connection drops. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** Why a private Postgres cannot run here, or undefined when it can. */
export function privatePostgresUnavailable(): string | undefined {
  return binDir() === undefined
    ? "no Postgres server binaries under /usr/lib/postgresql"
    : undefined;
}

function binDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const version = readdirSync(root).sort().at(-1);
  return version === undefined ? undefined : join(root, version, "bin");
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir();
  if (bin === undefined) throw new Error("no Postgres server binaries under /usr/lib/postgresql");
  const dir = mkdtempSync(join(tmpdir(), "roost-pg-"));
  const data = join(dir, "data");
  const port = await findFreePort();
  const asRoot = userInfo().uid === 0;
  const command = async (file: string, args: string[]) => {
    const [program, argv] = asRoot
      ? ["runuser", ["-u", "postgres", "--", join(bin, file), ...args]]
      : [join(bin, file), args];
    await run(program, argv, { timeout: 60_000 });
  };
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  await command("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const start = () =>
    command("pg_ctl", [
      "-D",
      data,
      "-w",
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "-l",
      join(dir, "log"),
      "start",
    ]);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => command("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]),
    start,
    async close() {
      await command("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
