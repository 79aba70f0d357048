/**
 * Small host helpers for the local provider: running the system tools it drives (bwrap, nsenter,
 * setpriv, socat), finding them, and telling a live process from a recycled pid or a zombie.
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, readFile } from "node:fs/promises";
import path from "node:path";

/** The system tools the local provider drives, by name. */
export const hostToolNames = ["bwrap", "nsenter", "setpriv", "socat"] as const;
export type HostToolName = (typeof hostToolNames)[number];
export type HostTools = Record<HostToolName, string>;

/** The Debian package that ships each tool, for messages that say how to fix a missing one. */
export const hostToolPackages: Record<HostToolName, string> = {
  bwrap: "bubblewrap",
  nsenter: "util-linux",
  setpriv: "util-linux",
  socat: "socat",
};

/** sbin folders are searched too: a server started without them on PATH still finds its tools. */
const fallbackSearchPath = [
  "/usr/local/sbin",
  "/usr/local/bin",
  "/usr/sbin",
  "/usr/bin",
  "/sbin",
  "/bin",
];

/**
 * The absolute path of an executable in the folders of `searchPath` (PATH-style; relative folders
 * are skipped), or undefined. Without a `searchPath`, the usual sbin and bin folders are searched.
 * A given `searchPath` replaces them (ROOST_TOOLS_PATH): an operator who names where the tools are
 * gets exactly those, and a test can make a tool appear missing.
 */
export async function findExecutable(
  name: string,
  searchPath: string | undefined,
): Promise<string | undefined> {
  const folders =
    searchPath === undefined
      ? fallbackSearchPath
      : searchPath.split(":").filter((folder) => folder !== "");
  for (const folder of folders) {
    if (!path.isAbsolute(folder)) continue;
    const candidate = path.join(folder, name);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface CommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Written to the command's stdin. */
  input?: string;
  /** @default 30 s */
  timeoutMs?: number;
}

/** Runs a command to completion without a shell; never throws for a non-zero exit (see {@link runChecked}). */
export function runCommand(
  file: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      [...args],
      {
        timeout: options.timeoutMs ?? 30_000,
        killSignal: "SIGKILL",
        maxBuffer: 16 * 1024 * 1024,
        encoding: "utf8",
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
      },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number" && error.signal == null) {
          reject(new Error(`${path.basename(file)}: ${error.message}`, { cause: error }));
          return;
        }
        resolve({
          exitCode: error === null ? 0 : typeof error.code === "number" ? error.code : null,
          signal: error?.signal ?? null,
          stdout,
          stderr,
        });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/** Thrown when a host tool fails; the message names the command and its stderr. */
export class HostCommandError extends Error {
  override readonly name = "HostCommandError";
  readonly result: CommandResult;
  constructor(file: string, args: readonly string[], result: CommandResult) {
    const status = result.signal === null ? `exit ${result.exitCode}` : `signal ${result.signal}`;
    super(
      `${path.basename(file)} ${args.join(" ")} failed (${status}): ${result.stderr.trim() || result.stdout.trim()}`,
    );
    this.result = result;
  }
}

/** Runs a command and throws {@link HostCommandError} unless it exits 0. */
export async function runChecked(
  file: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<string> {
  const result = await runCommand(file, args, options);
  if (result.exitCode !== 0) throw new HostCommandError(file, args, result);
  return result.stdout;
}

export function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** State (field 3) and start time in clock ticks (field 22) of /proc/PID/stat; undefined if gone. */
async function readProcessStat(pid: number): Promise<{ state: string; start: string } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: split after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0] ?? "", start: fields[19] ?? "" };
  } catch (error) {
    if (isErrno(error, "ENOENT") || isErrno(error, "ESRCH")) return undefined;
    throw error;
  }
}

/**
 * A process's start time in clock ticks since boot, which together with the pid names one
 * process: a recycled pid has a different start time. Undefined if gone.
 */
export async function processStartTicks(pid: number): Promise<string | undefined> {
  return (await readProcessStat(pid))?.start;
}

/**
 * Whether the process named by pid and start ticks still runs. A zombie (state Z, or X) does
 * not: a SIGKILLed server stays one until its parent reaps it, which can take a while, and its
 * slots and locks are free the moment it was killed.
 */
export async function isSameProcessAlive(pid: number, startTicks: string): Promise<boolean> {
  const stat = await readProcessStat(pid);
  return (
    stat !== undefined && stat.start === startTicks && stat.state !== "Z" && stat.state !== "X"
  );
}

/** Sends a signal, ignoring a process that is already gone. */
export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if (!isErrno(error, "ESRCH")) throw error;
  }
}
