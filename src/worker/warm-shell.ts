/**
 * A job's wrapper started before the call that will use it (decision 0021, a third pass).
 *
 * A `shell` call's own process is most of its round trip: Node's fork and exec of bash, bash's
 * start, and the subshell's fork and move into the `user` cgroup, before the command's first
 * instruction (jobs.ts). A warm wrapper has done all that already and waits for its job on stdin:
 * the job's folder and working directory (the command itself is in the folder's `command` file,
 * written with `job.json`). It claims the job as a cold wrapper does and records its status the
 * same way, and it is the worker's own child, started detached, so the job is watched, timed out,
 * killed and recovered as a cold one is. The next one is started once the call's result is sent
 * (a spawn holds Node's event loop for its fork).
 *
 * Invariants:
 *   WS1 a command runs as under a cold start: the computer's environment and its working
 *       directory, no positional parameters, stdin from /dev/null, stdout and stderr appended to
 *       the job's files, the prelude sourced in its subshell (tested against a cold start). Two
 *       things differ, for its early status: `trap -p` shows Roost's EXIT trap, and one more
 *       descriptor (10, or the first free above it) is open, to the worker.
 *   WS2 a warm wrapper only ever runs the one job written to it; with its stdin closed before a
 *       job (the worker closed, retired it, or died) it exits without running anything.
 *   WS3 at most one waits at a time, and none once the worker has had no `shell` call for
 *       `idleMs`: an idle computer holds no extra process.
 *   WS4 its command line names its token, recorded in the job's `job.json` (`wrapper`), so a
 *       later worker recognises the job's process as a cold job's by its folder (isJobAlive).
 *   WS5 the status a job reports early is its command's, or none: the wrapper records the same
 *       one in the job's folder whether or not the worker still listens, and the worker ends the
 *       call on it only when it did not kill the job, and removes the job's folder only once the
 *       wrapper has exited.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import { claimLostStatus } from "./jobs.ts";
import { randomBytes } from "./light-crypto.ts";

/**
 * The EXIT trap of a warm job's subshell (inside double quotes, so `$roost_fd` is the number when
 * it is set): it writes the command's status to the worker the moment the command ends, ~4 ms
 * before the worker would see the wrapper exit on this machine (the subshell's own exit, the
 * wrapper's bookkeeping and its exit are what those ms are; decision 0021, a fourth pass). The
 * status is not changed by the trap (bash keeps it). It writes only while the descriptor is still
 * the wrapper's stdout (a command may have put something of its own on that number), and ignores
 * SIGPIPE first: with the worker gone the write fails instead of killing the subshell, whose
 * status the wrapper still records. A command that replaces the trap, `exec`s, or is killed
 * reports nothing this way; the worker then waits for the wrapper's exit, as before.
 */
const earlyStatusTrap = [
  "roost_exit_status=\\$?",
  "builtin trap '' PIPE",
  "if builtin [ /proc/self/fd/$roost_fd -ef /proc/\\$\\$/fd/1 ]; then builtin printf '%s\\n' \\\"\\$roost_exit_status\\\" >&$roost_fd; fi 2>/dev/null",
].join("; ");

/**
 * bash of a warm wrapper. It forks the job's subshell at once, and the subshell sources the
 * prelude then (the local provider's moves it into the computer's `user` cgroup), so that a job's
 * start is neither a fork nor a cgroup move. The worker writes the job's folder, its working
 * directory and the folder again, each ended by a NUL byte, in one write. The subshell reads the
 * first two (bash reads a pipe a byte at a time, so it takes exactly those), claims the job for
 * the wrapper (`$$` is the wrapper's pid in a subshell too) and runs the command as the cold
 * wrapper's subshell does (jobs.ts: `set --`, `eval`). The wrapper, which stays in the worker's
 * cgroup, then reads the third and records the status there, if the job's claim is its own: a
 * claim lost (status 97), a subshell killed before it claimed, or no job at all (the pipe closed
 * first: WS2) records nothing. The pipe keeps what was written when the worker dies meanwhile.
 *
 * $1: the prelude (or empty); $2: this wrapper's token (WS4: only so that its command line names it).
 */
const warmScript = [
  "(",
  '  if [ -n "$1" ]; then . "$1"; fi',
  "  IFS= read -r -d '' roost_dir || exit 0",
  "  IFS= read -r -d '' roost_cwd || exit 0",
  "  set -C",
  `  { printf '%s\\n' "$$" > "$roost_dir/pid"; } 2>/dev/null || exit ${claimLostStatus}`,
  "  set +C",
  // The wrapper's stdout (a socket to the worker) stays open on a descriptor of its own (10 or
  // more) for the EXIT trap, which reports the command's status there (earlyStatusTrap).
  '  exec {roost_fd}>&1 </dev/null >>"$roost_dir/stdout" 2>>"$roost_dir/stderr"',
  `  trap "${earlyStatusTrap}" EXIT`,
  // cd sets OLDPWD, which a cold start's shell does not have (unless it came with the variables).
  "  roost_oldpwd_set=${OLDPWD+set} roost_oldpwd=${OLDPWD-}",
  '  cd -P -- "$roost_cwd" || exit 1',
  '  if [ -n "$roost_oldpwd_set" ]; then OLDPWD=$roost_oldpwd; else unset OLDPWD; fi',
  // Read from a file, not the pipe: bash reads a pipe a byte at a time, a file in blocks. The
  // status is 1 at the end of the file, which is where the command ends.
  "  IFS= read -r -d '' roost_command < \"$roost_dir/command\"",
  '  set -- "$roost_command"',
  "  unset roost_dir roost_cwd roost_command roost_oldpwd_set roost_oldpwd roost_fd",
  '  eval "set --; $1"',
  ")",
  "status=$?",
  "IFS= read -r -d '' roost_dir || exit \"$status\"",
  "roost_claim=",
  '{ IFS= read -r roost_claim < "$roost_dir/pid"; } 2>/dev/null',
  '[ "$roost_claim" = "$$" ] || exit "$status"',
  `printf '%s\\n' "$status" > "$roost_dir/exit"`,
  'exit "$status"',
].join("\n");

export interface WarmWrapper {
  child: ChildProcess;
  /** Recorded in the job's `job.json` (WS4). */
  token: string;
  /**
   * The status the job's subshell reported as its command ended (earlyStatusTrap), before the
   * wrapper records it; undefined when it reported none (the wrapper then exits with it).
   */
  status: Promise<number | undefined>;
}

export interface WarmShell {
  /**
   * The waiting wrapper, if one is ready for `env` and `prelude` (the computer's own: a call with
   * variables of its own starts cold), and starts the next one.
   */
  take(env: Readonly<Record<string, string>>, prelude: string | undefined): WarmWrapper | undefined;
  /** Hands the job to a taken wrapper (it must be prepared: its files and `command` written). */
  start(wrapper: WarmWrapper, dir: string, cwd: string): void;
  /**
   * Starts the next one unless one waits, once no call has come for a few ms: the shell tool
   * calls it once a call's result is sent, as Node's spawn holds the event loop for its fork.
   */
  refill(): void;
  /** Ends the waiting wrapper, if any, and starts no more. */
  close(): void;
}

export interface WarmShellOptions {
  env: Readonly<Record<string, string>>;
  prelude?: string | undefined;
  /** After this long without a `shell` call no wrapper waits (WS3). @default 30000 */
  idleMs?: number;
}

const bashPath = "bash";
/** How long the worker must have had no new `shell` call before it starts the next wrapper. */
const refillDelayMs = 3;

export function createWarmShell(options: WarmShellOptions): WarmShell {
  const idleMs = options.idleMs ?? 30_000;
  let waiting: WarmWrapper | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  let closed = false;

  const retire = (wrapper: WarmWrapper | undefined) => {
    // WS2: the end of its stdin before a job is its signal to exit.
    wrapper?.child.stdin?.end();
  };
  const retireWaiting = () => {
    const idle = waiting;
    waiting = undefined;
    retire(idle);
  };
  const startOne = () => {
    if (closed || waiting !== undefined) return;
    const token = `roost-warm-${randomBytes(9).toString("base64url")}`;
    let child: ChildProcess;
    try {
      child = spawn(
        bashPath,
        ["--norc", "--noprofile", "-c", warmScript, "bash", options.prelude ?? "", token],
        { cwd: "/", env: options.env, detached: true, stdio: ["pipe", "pipe", "ignore"] },
      );
    } catch {
      return; // calls start cold meanwhile
    }
    const wrapper = { child, token, status: readEarlyStatus(child.stdout) };
    // A wrapper that could not start, or exited while waiting (killed), is simply not used.
    child.once("error", () => {
      if (waiting === wrapper) waiting = undefined;
    });
    child.once("exit", () => {
      if (waiting === wrapper) waiting = undefined;
    });
    child.stdin?.on("error", () => undefined);
    // It must not keep a closing worker alive.
    child.unref();
    waiting = wrapper;
    touch();
  };
  // A call that follows its predecessor at once (a loop of calls) starts cold rather than wait
  // for a spawn in progress: the start waits that long for quiet.
  let refillTimer: NodeJS.Timeout | undefined;
  const refill = () => {
    clearTimeout(refillTimer);
    refillTimer = setTimeout(startOne, refillDelayMs);
    refillTimer.unref();
  };
  const touch = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(retireWaiting, idleMs);
    idleTimer.unref();
  };

  return {
    take(env, prelude) {
      if (closed) return undefined;
      touch();
      clearTimeout(refillTimer);
      const taken = waiting;
      waiting = undefined;
      if (taken === undefined || taken.child.exitCode !== null || taken.child.signalCode !== null)
        return undefined;
      if (!sameEnv(env, options.env) || prelude !== options.prelude) {
        retire(taken);
        return undefined;
      }
      return taken;
    },
    start(wrapper, dir, cwd) {
      wrapper.child.ref();
      wrapper.child.stdin?.end(`${dir}\0${cwd}\0${dir}\0`);
    },
    refill,
    close() {
      closed = true;
      clearTimeout(idleTimer);
      clearTimeout(refillTimer);
      retireWaiting();
    },
  };
}

/**
 * The first line on a wrapper's stdout, if it is a status (0 to 255). The stream is closed after
 * it, or after anything else: a command's own processes hold the trap's descriptor too (it is
 * not closed on exec), and after the first line nothing they write there is read. A command
 * that writes a status line there first reports that status for itself, as `exit N` would. It
 * never keeps the worker's event loop alive.
 */
function readEarlyStatus(stream: Readable | null): Promise<number | undefined> {
  if (stream === null) return Promise.resolve(undefined);
  (stream as Socket).unref();
  return new Promise((resolve) => {
    let text = "";
    const finish = (status: number | undefined) => {
      resolve(status);
      stream.destroy();
    };
    stream.setEncoding("latin1");
    stream.on("data", (chunk: string) => {
      text += chunk;
      const end = text.indexOf("\n");
      if (end === -1 && text.length <= 4) return;
      const line = text.slice(0, Math.max(end, 0));
      finish(/^\d{1,3}$/.test(line) && Number(line) <= 255 ? Number(line) : undefined);
    });
    stream.once("end", () => finish(undefined));
    stream.once("error", () => finish(undefined));
    stream.once("close", () => finish(undefined));
  });
}

function sameEnv(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>) {
  if (a === b) return true;
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  return names.every((name) => b[name] === a[name]);
}
