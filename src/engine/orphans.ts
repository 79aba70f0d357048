/**
 * Finding and ending a restate-server left behind by a previous Roost process that died without
 * stopping it (SIGKILL, OOM kill, power-cut of the parent only). Such a server still holds the
 * RocksDB lock and the ports, so a new one in the same data dir cannot start.
 *
 * Invariants:
 *   O1 a process is only ever signalled when its command line is a restate-server started with
 *      exactly our config file (`--config-file <path>`): a pid from a stale pidfile that the
 *      kernel has since given to another program is left alone.
 *   O2 candidates come from the pidfile and from a scan of /proc, so a parent killed between
 *      spawning the server and writing the pidfile leaves nothing behind either.
 *   O3 on systems without /proc (macOS) nothing is found; the new server then fails to start
 *      with restate's own lock error, which the start error quotes.
 */
import { existsSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename } from "node:path";

/** Binary name the orphan check requires (O1). */
export const restateBinaryName = "restate-server";

/** Reads `/proc/<pid>/cmdline` as argv, or undefined when the process does not exist (or no /proc). */
export async function readProcessArgv(pid: number): Promise<string[] | undefined> {
  try {
    const raw = await readFile(`/proc/${pid}/cmdline`, "utf8");
    if (raw.length === 0) return undefined; // zombie or kernel thread
    return raw.replace(/\0$/, "").split("\0");
  } catch {
    return undefined;
  }
}

/** True when argv is a restate-server started with `--config-file <configPath>` (O1). */
export function isOurRestateServer(argv: readonly string[], configPath: string): boolean {
  const [executable, ...args] = argv;
  if (executable === undefined || basename(executable) !== restateBinaryName) return false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (arg === `--config-file=${configPath}`) return true;
    if ((arg === "--config-file" || arg === "-c") && args[index + 1] === configPath) return true;
  }
  return false;
}

/** True while the process exists and is not a zombie. */
export async function isProcessAlive(pid: number): Promise<boolean> {
  if (!hasProcFs()) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return error instanceof Error && "code" in error && error.code === "EPERM";
    }
  }
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The state is the field after the parenthesised command name (which may contain spaces).
    const state = stat.charAt(stat.lastIndexOf(")") + 2);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

let procFs: boolean | undefined;
function hasProcFs(): boolean {
  procFs ??= existsSync("/proc/self/stat");
  return procFs;
}

/** Pids of live restate-servers using our config file: the pidfile's and any found in /proc (O2). */
export async function findOrphanedServers(pidFile: string, configPath: string): Promise<number[]> {
  const candidates = new Set<number>();
  const fromFile = await readPidFile(pidFile);
  if (fromFile !== undefined) candidates.add(fromFile);
  let entries: string[] = [];
  try {
    entries = await readdir("/proc");
  } catch {
    // O3
  }
  for (const entry of entries) {
    if (/^\d+$/.test(entry)) candidates.add(Number(entry));
  }
  candidates.delete(process.pid);
  const found: number[] = [];
  for (const pid of candidates) {
    const argv = await readProcessArgv(pid);
    if (argv !== undefined && isOurRestateServer(argv, configPath)) found.push(pid); // O1
  }
  return found;
}

/** What {@link terminateOrphans} did to one process. */
export interface OrphanTermination {
  pid: number;
  /** The last signal that was needed. */
  signal: "SIGTERM" | "SIGKILL";
}

/**
 * Ends every orphaned server for this config: SIGTERM, then SIGKILL after `graceMs`, waiting until
 * each is gone. Returns what was done, for events and logs.
 */
export async function terminateOrphans(
  pidFile: string,
  configPath: string,
  graceMs: number,
): Promise<OrphanTermination[]> {
  const pids = await findOrphanedServers(pidFile, configPath);
  const results = await Promise.all(pids.map((pid) => terminateProcess(pid, graceMs)));
  await rm(pidFile, { force: true });
  return results;
}

async function terminateProcess(pid: number, graceMs: number): Promise<OrphanTermination> {
  signalQuietly(pid, "SIGTERM");
  if (await waitForProcessExit(pid, graceMs)) return { pid, signal: "SIGTERM" };
  signalQuietly(pid, "SIGKILL");
  // SIGKILL cannot be ignored; the wait only covers the kernel tearing the process down.
  await waitForProcessExit(pid, 10_000);
  return { pid, signal: "SIGKILL" };
}

/** Polls until the (not necessarily child) process is gone; false when `timeoutMs` passed first. */
export async function waitForProcessExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let delayMs = 5;
  while (await isProcessAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await delay(delayMs);
    delayMs = Math.min(delayMs * 2, 100);
  }
  return true;
}

/** Writes the pidfile (plain decimal pid and a newline). */
export async function writePidFile(pidFile: string, pid: number): Promise<void> {
  await writeFile(pidFile, `${pid}\n`, { encoding: "utf8", mode: 0o600 });
}

async function readPidFile(pidFile: string): Promise<number | undefined> {
  try {
    const text = (await readFile(pidFile, "utf8")).trim();
    const pid = Number(text);
    return Number.isSafeInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
