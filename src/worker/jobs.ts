/**
 * A job is one shell command running detached, with everything about it in a directory on the
 * durable disk, so that a worker that restarts can find it again:
 *
 *   <stateDir>/jobs/<jobId>/job.json   what was started, when, and its deadline
 *   <stateDir>/jobs/<jobId>/pid        the wrapper's pid (= the job's process group), written by the wrapper
 *   <stateDir>/jobs/<jobId>/stdout     the command's output, written by the command itself (not through the worker)
 *   <stateDir>/jobs/<jobId>/stderr
 *   <stateDir>/jobs/<jobId>/exit       the exit status, written by the wrapper when the command ends
 *   <stateDir>/jobs/<jobId>/command    the command, for a warm wrapper (warm-shell.ts), which reads it
 *
 * A job is one process: `bash -c WRAPPER` in a new session (so the job is its own process group).
 * The wrapper claims the job by creating `pid` exclusively (noclobber): if two wrappers are ever
 * started for one job (a restart racing a start), only one runs the command. It then runs the
 * command in a subshell (a fork of itself, not a second program: no exec, no profile read; the
 * shell is not a login shell, decision 0021) and writes its exit status. The command writes
 * straight to the files, so it keeps running, and its output and exit status are kept, when the
 * worker dies.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  promises as fs,
  readSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { freeReserveIfLow, withDiskRoom } from "./disk-reserve.ts";
import { isErrno } from "./fs-atomic.ts";
import { charBoundary } from "./read-tool.ts";
import type { WarmShell, WarmWrapper } from "./warm-shell.ts";

/** The shell commands run in (a non-login bash: decision 0021). */
const bashPath = "bash";

/** Exit status of a wrapper that found the job already claimed by another wrapper. */
export const claimLostStatus = 97;

/**
 * `$1` is the command, `$2` the job's directory and `$3` the prelude (or empty). The subshell
 * sources the prelude first (the local provider's moves the subshell, and so the command, into
 * the computer's `user` cgroup, while the wrapper stays out of its limits and so can still record
 * the status of a command the OOM killer ended). The command's text is spliced into an `eval`
 * after `set --`, so it sees no positional parameters (as under `bash -c COMMAND`), and the
 * wrapper's noclobber is off again before it runs.
 */
const wrapperScript = [
  "set -C",
  `{ printf '%s\\n' "$$" > "$2/pid"; } 2>/dev/null || exit ${claimLostStatus}`,
  "set +C",
  '( if [ -n "$3" ]; then . "$3"; fi; eval "set --; $1" )',
  "status=$?",
  `printf '%s\\n' "$status" > "$2/exit"`,
  'exit "$status"',
].join("\n");

export interface JobMeta {
  jobId: string;
  callId: string;
  command: string;
  cwd: string;
  /** Epoch ms. */
  startedAt: number;
  /** Epoch ms after which the job is killed; null for background jobs. */
  deadlineAt: number | null;
  background: boolean;
  /** The token of the warm wrapper that runs it (warm-shell.ts, WS4); absent for a cold start. */
  wrapper?: string | undefined;
}

export interface JobState {
  meta: JobMeta;
  /** Undefined until the wrapper has claimed the job. */
  pid: number | undefined;
  /** Undefined while running, or when the job died without recording one. */
  exitCode: number | undefined;
  /** Epoch ms at which the exit status was recorded. */
  exitedAt: number | undefined;
}

export function jobsRoot(stateDir: string): string {
  return path.join(stateDir, "jobs");
}

export function jobPaths(dir: string) {
  return {
    meta: path.join(dir, "job.json"),
    pid: path.join(dir, "pid"),
    stdout: path.join(dir, "stdout"),
    stderr: path.join(dir, "stderr"),
    exit: path.join(dir, "exit"),
    command: path.join(dir, "command"),
  };
}

/**
 * Starts the wrapper for a job; `env` is the command's whole environment. `job.json` is written
 * in place and not fsync'd: the call's durable fact is its `started` record, and the job's own
 * files (pid, output, exit) are written by the shell without fsync anyway. A torn `job.json` (the
 * worker died while writing it, so before it started the wrapper) reads as no job: the job is
 * then started, and the claim still lets only one wrapper run it.
 */
export async function spawnJob(
  dir: string,
  meta: JobMeta,
  env: Readonly<Record<string, string>>,
  prelude?: string,
): Promise<ChildProcess> {
  const { child, output } = await spawnJobWithOutput(dir, meta, env, prelude);
  output.stdout.close();
  output.stderr.close();
  return child;
}

/** The job's output files, open for reading as well (the one who holds them closes them). */
export interface JobOutput {
  stdout: OutputFile;
  stderr: OutputFile;
}

/**
 * A job's output file, open on the worker's thread: its system calls take microseconds, where a
 * hop through libuv's pool costs a call ~0.3 ms, twice (decision 0021, a fourth pass). The files
 * were just written, so their reads come from the page cache. Reads after `close` fail, so a
 * descriptor number the kernel gave out again is never read.
 */
export interface OutputFile {
  readonly fd: number;
  size(): number;
  read(buffer: Buffer, length: number, position: number): number;
  close(): void;
}

/** Opens a job's output file (see OutputFile); `flags` as for fs.open. */
export function openOutputFile(file: string, flags: "a+" | "r"): OutputFile {
  const fd = openSync(file, flags);
  let open = true;
  const check = () => {
    if (!open) throw new Error(`${file} is closed`);
  };
  return {
    fd,
    size() {
      check();
      return fstatSync(fd).size;
    },
    read(buffer, length, position) {
      check();
      return readSync(fd, buffer, 0, length, position);
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}

/**
 * `spawnJob`, handing over the output files it opened for the command, so that whoever streams
 * the output reads them without opening them again.
 */
export async function spawnJobWithOutput(
  dir: string,
  meta: JobMeta,
  env: Readonly<Record<string, string>>,
  prelude?: string,
): Promise<{ child: ChildProcess; output: JobOutput }> {
  const output = await prepareJob(dir, meta);
  return { child: await startJob(dir, meta, env, prelude, output), output };
}

/**
 * The job's folder, `job.json` and output files, made before its wrapper starts (and before
 * the call's `started` record is durable: the shell tool does both at once, and starts the
 * wrapper only once both are done). On a full disk, the worker's reserve makes room for them
 * (disk-reserve.ts).
 */
export async function prepareJob(dir: string, meta: JobMeta): Promise<JobOutput> {
  const paths = jobPaths(dir);
  const stateDir = path.dirname(path.dirname(dir));
  // Looked at while the files are made: a write that meets a full disk frees the reserve anyway.
  const looked = freeReserveIfLow(stateDir);
  const output = await withDiskRoom(stateDir, async () => {
    // The folder, the two small files and the output files, on this thread: a few system calls
    // that each take microseconds, where hops through libuv's pool took ~0.5 ms of every call
    // (decision 0021, the third and fourth passes).
    mkdirSync(dir, { recursive: true });
    writeFileSync(paths.meta, JSON.stringify(meta));
    if (meta.wrapper !== undefined) writeFileSync(paths.command, meta.command);
    const stdout = openOutputFile(paths.stdout, "a+");
    try {
      return { stdout, stderr: openOutputFile(paths.stderr, "a+") };
    } catch (error) {
      stdout.close();
      throw error;
    }
  });
  await looked;
  return output;
}

/**
 * Starts the job's wrapper writing to `output` (closed here when the start fails), or hands the
 * job to the warm wrapper named in `meta.wrapper` (warm-shell.ts), which the caller took.
 */
export async function startJob(
  dir: string,
  meta: JobMeta,
  env: Readonly<Record<string, string>>,
  prelude: string | undefined,
  output: JobOutput,
  warm?: { wrapper: WarmWrapper; shell: WarmShell },
): Promise<ChildProcess> {
  if (warm !== undefined) {
    warm.shell.start(warm.wrapper, dir, meta.cwd);
    return warm.wrapper.child;
  }
  try {
    const child = spawn(
      bashPath,
      ["--norc", "--noprofile", "-c", wrapperScript, "bash", meta.command, dir, prelude ?? ""],
      {
        cwd: meta.cwd,
        env,
        detached: true,
        stdio: ["ignore", output.stdout.fd, output.stderr.fd],
      },
    );
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    return child;
  } catch (error) {
    output.stdout.close();
    output.stderr.close();
    throw error;
  }
}

export async function readJob(dir: string): Promise<JobState | undefined> {
  const paths = jobPaths(dir);
  let meta: JobMeta;
  try {
    meta = JSON.parse(await fs.readFile(paths.meta, "utf8")) as JobMeta;
  } catch (error) {
    if (isErrno(error, "ENOENT") || error instanceof SyntaxError) return undefined;
    throw error;
  }
  const pid = await readNumber(paths.pid);
  const exitCode = await readNumber(paths.exit);
  let exitedAt: number | undefined;
  if (exitCode !== undefined)
    exitedAt = (await fs.stat(paths.exit).catch(() => undefined))?.mtimeMs;
  return { meta, pid, exitCode, exitedAt };
}

/** Reads a file holding one integer and a newline; undefined if absent or not yet complete. */
export async function readNumber(file: string): Promise<number | undefined> {
  try {
    const text = await fs.readFile(file, "utf8");
    return /^-?\d+\n$/.test(text) ? Number.parseInt(text, 10) : undefined;
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
}

/**
 * Whether the job's wrapper still runs. On Linux the process's command line must name the job
 * directory, or the warm wrapper's token the job recorded (`meta.wrapper`), so a recycled pid is
 * not mistaken for the job.
 */
export async function isJobAlive(pid: number, dir: string, wrapper?: string): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return isErrno(error, "EPERM");
  }
  try {
    const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, "utf8");
    const args = cmdline.split("\0");
    if (!args.includes(dir) && (wrapper === undefined || !args.includes(wrapper))) return false;
    const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8");
    // A zombie (state Z) has finished; its parent just has not reaped it yet.
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    // No /proc (macOS): trust kill(pid, 0).
    return process.platform !== "linux";
  }
}

/** Signals the job's whole process group; a group that is gone already is fine. */
export function signalJob(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (error) {
    if (!isErrno(error, "ESRCH")) throw error;
  }
}

export interface StreamText {
  text: string;
  bytes: number;
  truncated: boolean;
}

/** A stream's output for a result: all of it, or its head and tail around a marker naming the file. */
export async function readStreamText(file: string, limitBytes: number): Promise<StreamText> {
  let handle;
  try {
    handle = await fs.open(file, "r");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return { text: "", bytes: 0, truncated: false };
    throw error;
  }
  try {
    const { size } = await handle.stat();
    if (size <= limitBytes) {
      const buffer = Buffer.alloc(size);
      const { bytesRead } = await handle.read(buffer, 0, size, 0);
      return {
        text: buffer.subarray(0, bytesRead).toString("utf8"),
        bytes: size,
        truncated: false,
      };
    }
    const half = Math.floor(limitBytes / 2);
    const head = Buffer.alloc(half + 4);
    const headRead = (await handle.read(head, 0, head.length, 0)).bytesRead;
    const headEnd = charBoundary(head.subarray(0, headRead), Math.min(half, headRead));
    const tail = Buffer.alloc(half + 4);
    const tailStart = size - half - 4;
    const tailRead = (await handle.read(tail, 0, tail.length, tailStart)).bytesRead;
    let from = 4;
    while (from < tailRead && ((tail[from] ?? 0) & 0xc0) === 0x80) from += 1;
    const omitted = size - headEnd - (tailRead - from);
    const marker = `\n\n[... ${omitted} bytes omitted; the full output is in ${file} ...]\n\n`;
    return {
      text:
        head.subarray(0, headEnd).toString("utf8") +
        marker +
        tail.subarray(from, tailRead).toString("utf8"),
      bytes: size,
      truncated: true,
    };
  } finally {
    await handle.close();
  }
}

/** The last `bytes` of a file, starting at a character boundary. */
export async function readTail(
  file: string,
  bytes: number,
): Promise<{ text: string; size: number }> {
  let handle;
  try {
    handle = await fs.open(file, "r");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return { text: "", size: 0 };
    throw error;
  }
  try {
    const { size } = await handle.stat();
    const start = Math.max(0, size - bytes);
    const buffer = Buffer.alloc(size - start);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
    let from = 0;
    while (start > 0 && from < bytesRead && ((buffer[from] ?? 0) & 0xc0) === 0x80) from += 1;
    return { text: buffer.subarray(from, bytesRead).toString("utf8"), size };
  } finally {
    await handle.close();
  }
}

/** Removes finished jobs started more than `maxAgeMs` ago; returns how many. */
export async function pruneJobs(stateDir: string, maxAgeMs: number, now: number): Promise<number> {
  const root = jobsRoot(stateDir);
  const names = await fs.readdir(root).catch((error: unknown) => {
    if (isErrno(error, "ENOENT")) return [];
    throw error;
  });
  let removed = 0;
  for (const name of names) {
    const dir = path.join(root, name);
    const job = await readJob(dir);
    const startedAt = job?.meta.startedAt ?? (await fs.stat(dir)).mtimeMs;
    if (now - startedAt < maxAgeMs) continue;
    if (
      job?.pid !== undefined &&
      job.exitCode === undefined &&
      (await isJobAlive(job.pid, dir, job.meta.wrapper))
    )
      continue;
    await fs.rm(dir, { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}
