/**
 * `shell` and `shell_status`. A foreground command is a job (jobs.ts) the call waits for; a
 * background command is a job the call only starts.
 *
 * After a worker restart (the call's `started` record exists but no `done` record), a repeated
 * call never starts the command a second time: it attaches to the job if it still runs, reports
 * its recorded exit status and output if it finished meanwhile, and fails with `interrupted` if
 * the job vanished without an exit status (the computer itself restarted). Only a job whose
 * wrapper never claimed it (the worker died between recording `started` and the wrapper's first
 * instruction) is started then, and the claim makes sure only one wrapper runs the command.
 */
import { StringDecoder } from "node:string_decoder";
import type { ChildProcess } from "node:child_process";
import { promises as fs, statSync, type Stats } from "node:fs";
import path from "node:path";
import { toolLimits } from "../protocol/index.ts";
import type {
  ShellInput,
  ShellOutput,
  ShellStatusInput,
  ShellStatusOutput,
} from "../protocol/index.ts";
import { callKey } from "./done-log.ts";
import { resolveToolPath, toToolFailure, ToolFailure } from "./tool-context.ts";
import type { ToolContext } from "./tool-context.ts";
import {
  claimLostStatus,
  isJobAlive,
  jobPaths,
  jobsRoot,
  openOutputFile,
  readJob,
  readNumber,
  readStreamText,
  readTail,
  signalJob,
  prepareJob,
  startJob,
  type JobOutput,
  type StreamText,
} from "./jobs.ts";
import type { JobMeta } from "./jobs.ts";
import type { WarmWrapper } from "./warm-shell.ts";

export interface ShellOptions {
  /** How often output files are read for streaming, and a vanished job is looked for. @default 50 */
  pollMs?: number;
  /** Between SIGTERM and SIGKILL of a job's process group on timeout or cancel. @default 2000 */
  killGraceMs?: number;
}

/** Job ids are derived from the call id, so a repeated call finds the job its first attempt started. */
export function jobIdFor(callId: string, background: boolean): string {
  return `${background ? "job" : "call"}_${callKey(callId).slice(0, 24)}`;
}

export async function shellTool(
  input: ShellInput,
  context: ToolContext,
  options: ShellOptions = {},
): Promise<ShellOutput> {
  const background = input.background === true;
  const jobId = jobIdFor(context.callId, background);
  const dir = path.join(jobsRoot(context.stateDir), jobId);
  const paths = jobPaths(dir);

  let child: ChildProcess | undefined;
  /** The warm wrapper that runs it (fresh start only). */
  let wrapper: WarmWrapper | undefined;
  /** The output files our own child writes, already open (fresh foreground start only). */
  let output: JobOutput | undefined;
  let meta: JobMeta;
  const existing = context.previous === undefined ? undefined : await readJob(dir);
  const recovered = existing?.pid !== undefined;
  if (existing !== undefined && recovered) {
    meta = existing.meta;
  } else {
    const cwd = resolveToolPath(context.workspace, input.cwd ?? ".");
    // On this thread: one system call, where a hop through libuv's pool costs a call ~0.2 ms.
    let cwdStat: Stats;
    try {
      cwdStat = statSync(cwd);
    } catch (error) {
      throw toToolFailure(error, cwd);
    }
    if (!cwdStat.isDirectory())
      throw new ToolFailure("not_a_directory", `cwd ${cwd} is not a directory`);
    const env =
      input.env === undefined || Object.keys(input.env).length === 0
        ? context.commandEnv
        : { ...context.commandEnv, ...input.env };
    // A wrapper started ahead (warm-shell.ts) when one waits; a NUL byte, which no command line
    // can hold, is left to the cold start's error.
    wrapper = input.command.includes("\0")
      ? undefined
      : context.warmShell?.take(env, context.jobPrelude);
    meta = {
      jobId,
      callId: context.callId,
      command: input.command,
      cwd,
      startedAt: existing?.meta.startedAt ?? context.now(),
      deadlineAt: background ? null : context.deadline,
      background,
      ...(wrapper === undefined ? {} : { wrapper: wrapper.token }),
    };
    // The `started` record's flush and the job's files at once; the command starts only once
    // both are done (W3: the record is durable before any side effect of the command).
    const [marked, prepared] = await Promise.allSettled([
      context.previous === undefined ? context.markStarted() : undefined,
      prepareJob(dir, meta),
    ]);
    if (marked.status === "rejected" || prepared.status === "rejected") {
      wrapper?.child.stdin?.end(); // WS2: it exits without a job
      if (prepared.status === "fulfilled") {
        prepared.value.stdout.close();
        prepared.value.stderr.close();
      }
      if (marked.status === "rejected") throw marked.reason;
      throw toToolFailure((prepared as PromiseRejectedResult).reason, `bash in ${cwd}`);
    }
    const started = prepared.value;
    child = await startJob(
      dir,
      meta,
      env,
      context.jobPrelude,
      started,
      wrapper === undefined || context.warmShell === undefined
        ? undefined
        : { wrapper, shell: context.warmShell },
    ).catch((error: unknown) => {
      throw toToolFailure(error, `bash in ${cwd}`);
    });
    // The next call's wrapper is started once this call's result is sent: Node's spawn holds its
    // event loop for the fork, which would otherwise delay this job's end (warm-shell.ts).
    const warmShell = context.warmShell;
    // Right after the send, not after the record's flush: by then the next call of a loop may
    // have come, and a wrapper spawned during it would slow it down.
    if (warmShell !== undefined) context.afterSent(() => warmShell.refill());
    if (background) {
      started.stdout.close();
      started.stderr.close();
    } else output = started;
  }

  if (background) {
    child?.unref();
    const pid = await waitForClaim(paths.pid, () => context.now());
    return { kind: "started", jobId, pid, stdoutPath: paths.stdout, stderrPath: paths.stderr };
  }
  const end = await superviseJob({
    dir,
    meta,
    child,
    earlyStatus: recovered ? undefined : wrapper?.status,
    output,
    context,
    options,
    fromStart: !recovered,
  });
  return finishForeground(dir, meta, end, recovered, context);
}

export async function shellStatusTool(
  input: ShellStatusInput,
  context: ToolContext,
): Promise<ShellStatusOutput> {
  const dir = path.join(jobsRoot(context.stateDir), input.jobId);
  let job = await readJob(dir);
  if (job === undefined) {
    throw new ToolFailure(
      "not_found",
      `no job ${input.jobId} on this computer (job ids come from shell with background: true)`,
    );
  }
  const paths = jobPaths(dir);
  const now = context.now();
  let state: ShellStatusOutput["state"];
  if (job.exitCode !== undefined) state = "exited";
  else if (job.pid !== undefined) {
    if (await isJobAlive(job.pid, dir, job.meta.wrapper)) state = "running";
    else {
      // It may have recorded its status between the read above and its exit.
      job = (await readJob(dir)) ?? job;
      state = job.exitCode === undefined ? "lost" : "exited";
    }
  } else state = now - job.meta.startedAt < 5000 ? "running" : "lost"; // not yet claimed, or never will be
  const tailBytes = input.tailBytes ?? toolLimits.shellStatusTailBytes;
  const stdout = await readTail(paths.stdout, tailBytes);
  const stderr = await readTail(paths.stderr, tailBytes);
  const endedAt = job.exitedAt;
  const output: ShellStatusOutput = {
    jobId: input.jobId,
    command: job.meta.command,
    state,
    pid: job.pid ?? null,
    exitCode: job.exitCode ?? null,
    startedAt: new Date(job.meta.startedAt).toISOString(),
    durationMs: Math.max(0, (endedAt ?? now) - job.meta.startedAt),
    stdoutTail: stdout.text,
    stderrTail: stderr.text,
    stdoutBytes: stdout.size,
    stderrBytes: stderr.size,
    stdoutPath: paths.stdout,
    stderrPath: paths.stderr,
  };
  if (endedAt !== undefined) output.endedAt = new Date(endedAt).toISOString();
  return output;
}

async function waitForClaim(pidFile: string, now: () => number): Promise<number> {
  const giveUpAt = now() + 5000;
  for (;;) {
    const pid = await readNumber(pidFile);
    if (pid !== undefined) return pid;
    if (now() > giveUpAt)
      throw new ToolFailure("internal", "the background job did not start within 5 s");
    await sleep(5);
  }
}

/**
 * The pid that claimed a job. The claimant creates the file exclusively and then writes it, so
 * a wrapper that lost the claim may exit before the number is there: wait for it.
 */
async function readClaim(pidFile: string, context: ToolContext): Promise<number | undefined> {
  const giveUpAt = context.now() + 2000;
  for (;;) {
    const pid = await readNumber(pidFile);
    if (pid !== undefined || context.now() > giveUpAt) return pid;
    await sleep(5);
  }
}

interface JobEnd {
  exitCode: number | null;
  killedFor: "timeout" | "cancelled" | undefined;
  /** The job vanished without an exit status. */
  lost: boolean;
  endedAt: number;
  /** Each stream's whole output when the pump read all of it and it fits a result (else read from its file). */
  output: Partial<Record<"stdout" | "stderr", StreamText>>;
  /**
   * Settles once our own wrapper has exited: with an early status (warm-shell.ts) the job ends
   * while its wrapper still records the status in the job's folder.
   */
  wrapperExited: Promise<unknown>;
}

interface SuperviseOptions {
  dir: string;
  meta: JobMeta;
  /** The output files, open, when `child` is ours (the pump reads and closes them). */
  output: JobOutput | undefined;
  /** Our own child (fresh start); undefined when attaching to a job a previous worker started. */
  child: ChildProcess | undefined;
  /** The status a warm wrapper's job reports as it ends (WarmWrapper.status), if it is one. */
  earlyStatus?: Promise<number | undefined> | undefined;
  context: ToolContext;
  options: ShellOptions;
  /** Stream output from the beginning (fresh start) or only what is new (attach). */
  fromStart: boolean;
}

/** Waits for a job to end, streaming its output and enforcing its deadline and cancellation. */
async function superviseJob(supervise: SuperviseOptions): Promise<JobEnd> {
  const { dir, meta, context } = supervise;
  const pollMs = supervise.options.pollMs ?? 50;
  const killGraceMs = supervise.options.killGraceMs ?? 2000;
  const paths = jobPaths(dir);
  const pump = await createStreamPump(paths, context, supervise.fromStart, supervise.output);
  /** Filled in `finally`, after the last pump: the returned object is this one. */
  const output: JobEnd["output"] = {};

  let child = supervise.child;
  let childExited: Promise<number | null> | undefined;
  const watchChild = (process: ChildProcess) =>
    process.exitCode !== null || process.signalCode !== null
      ? Promise.resolve(process.exitCode)
      : new Promise<number | null>((resolve) => process.once("exit", (code) => resolve(code)));
  let wrapperExited: Promise<unknown> = Promise.resolve();
  let killedFor: JobEnd["killedFor"];
  if (child !== undefined) {
    const exited = watchChild(child);
    wrapperExited = exited;
    const early = supervise.earlyStatus;
    // The early status ends the job unless the job is being killed: its status is then the
    // wrapper's, as for a cold start.
    childExited =
      early === undefined
        ? exited
        : Promise.race([
            exited,
            early.then((status) =>
              status === undefined || killedFor !== undefined ? exited : status,
            ),
          ]);
  }

  let pid = child?.pid ?? (await readJob(dir))?.pid;
  const kill = (reason: "timeout" | "cancelled") => {
    if (killedFor !== undefined || pid === undefined) return;
    killedFor = reason;
    const group = pid;
    signalJob(group, "SIGTERM");
    // Not cleared when the wrapper exits: children that ignore SIGTERM keep the group (and so
    // its id, which the kernel does not reuse while a member lives) until this SIGKILL.
    setTimeout(() => signalJob(group, "SIGKILL"), killGraceMs).unref();
  };
  const onAbort = () => kill("cancelled");
  context.signal.addEventListener("abort", onAbort);
  if (context.signal.aborted) onAbort();
  const deadlineTimer =
    meta.deadlineAt === null
      ? undefined
      : setTimeout(() => kill("timeout"), Math.max(0, meta.deadlineAt - context.now()));

  try {
    for (;;) {
      if (childExited !== undefined && child !== undefined) {
        const code = await Promise.race([
          childExited,
          sleep(pollMs).then(() => "running" as const),
        ]);
        if (code === "running") {
          await pump.pump();
          continue;
        }
        // Ended: its last output is read once, in `finally`.
        const claimedBy =
          code === claimLostStatus ? await readClaim(paths.pid, context) : undefined;
        if (claimedBy !== undefined && claimedBy !== child.pid) {
          // Another wrapper (started by the previous worker) runs this job: watch that one instead.
          child = undefined;
          childExited = undefined;
          pid = claimedBy;
          continue;
        }
        // The wrapper exits with the status it recorded; the file is read only when it did not
        // get that far (killed), or the status is the claim's.
        const recorded =
          typeof code === "number" && killedFor === undefined ? code : await readNumber(paths.exit);
        return {
          exitCode: recorded ?? (killedFor === undefined ? code : null),
          killedFor,
          lost: false,
          endedAt: context.now(),
          output,
          wrapperExited,
        };
      }
      // Attached to a job this process did not start: look for its exit status.
      await sleep(pollMs);
      await pump.pump();
      const job = await readJob(dir);
      pid ??= job?.pid;
      if (job?.exitCode !== undefined) {
        return {
          exitCode: job.exitCode,
          killedFor,
          lost: false,
          endedAt: job.exitedAt ?? context.now(),
          output,
          wrapperExited,
        };
      }
      if (pid !== undefined && !(await isJobAlive(pid, dir, meta.wrapper))) {
        const exitCode = await readNumber(paths.exit); // it may have written its status just before exiting
        if (exitCode !== undefined)
          return {
            exitCode,
            killedFor,
            lost: false,
            endedAt: context.now(),
            output,
            wrapperExited,
          };
        return {
          exitCode: null,
          killedFor,
          lost: killedFor === undefined,
          endedAt: context.now(),
          output,
          wrapperExited,
        };
      }
      if (pid === undefined && context.now() - meta.startedAt > 5000) {
        return {
          exitCode: null,
          killedFor,
          lost: true,
          endedAt: context.now(),
          output,
          wrapperExited,
        };
      }
    }
  } finally {
    context.signal.removeEventListener("abort", onAbort);
    clearTimeout(deadlineTimer);
    await pump.pump();
    for (const name of ["stdout", "stderr"] as const) {
      const whole = pump.whole(name);
      if (whole !== undefined) output[name] = whole;
    }
    await pump.close();
  }
}

async function finishForeground(
  dir: string,
  meta: JobMeta,
  end: JobEnd,
  recovered: boolean,
  context: ToolContext,
): Promise<ShellOutput> {
  const paths = jobPaths(dir);
  if (end.killedFor === "cancelled") {
    throw new ToolFailure(
      "cancelled",
      `the command was cancelled and its process group killed; partial output is in ${dir}`,
    );
  }
  if (end.lost) {
    throw new ToolFailure(
      "interrupted",
      `the command stopped before it finished and left no exit status (the computer restarted while it ran); it was not run again. Partial output is in ${paths.stdout} and ${paths.stderr}`,
    );
  }
  const stdout =
    end.output.stdout ?? (await readStreamText(paths.stdout, toolLimits.shellOutputBytes));
  const stderr =
    end.output.stderr ?? (await readStreamText(paths.stderr, toolLimits.shellOutputBytes));
  const output: ShellOutput = {
    kind: "completed",
    exitCode: end.exitCode,
    timedOut: end.killedFor === "timeout",
    durationMs: Math.max(0, Math.round(end.endedAt - meta.startedAt)),
    stdout: stdout.text,
    stderr: stderr.text,
    stdoutBytes: stdout.bytes,
    stderrBytes: stderr.bytes,
    stdoutTruncated: stdout.truncated,
    stderrTruncated: stderr.truncated,
  };
  if (stdout.truncated) output.stdoutPath = paths.stdout;
  if (stderr.truncated) output.stderrPath = paths.stderr;
  const notes: string[] = [];
  if (end.killedFor === "timeout") {
    notes.push(
      `timed out after ${Math.round(((meta.deadlineAt ?? end.endedAt) - meta.startedAt) / 1000)} s; its process group was killed`,
    );
  }
  if (recovered)
    notes.push("the worker restarted while this command ran; it was not started again");
  if (notes.length > 0) output.note = notes.join("; ");
  // Keep the job directory only when a result names a file in it.
  // Once its wrapper has exited: it may still be writing the status there (an early status).
  if (!stdout.truncated && !stderr.truncated)
    context.afterRecorded(async () => {
      await end.wrapperExited;
      await fs.rm(dir, { recursive: true, force: true });
    });
  return output;
}

interface StreamPump {
  pump(): Promise<void>;
  /**
   * The stream's whole output, when it was read from its first byte to the size last seen and
   * fits a result: the result then needs no second read of the file.
   */
  whole(name: "stdout" | "stderr"): StreamText | undefined;
  close(): Promise<void>;
}

/** Reads what the job appended to its output files since the last look and streams it as chunks. */
async function createStreamPump(
  paths: ReturnType<typeof jobPaths>,
  context: ToolContext,
  fromStart: boolean,
  open?: JobOutput,
): Promise<StreamPump> {
  let budget = toolLimits.streamMaxBytes;
  const streams = await Promise.all(
    (["stdout", "stderr"] as const).map(async (name) => {
      const file = paths[name];
      const offset = fromStart ? 0 : ((await fs.stat(file).catch(() => undefined))?.size ?? 0);
      return {
        name,
        file,
        offset,
        decoder: new StringDecoder("utf8"),
        handle: open?.[name],
        /** What was read, while it still fits a result; undefined after that. */
        kept: fromStart ? ([] as Buffer[]) : undefined,
        size: 0,
      };
    }),
  );
  let busy: Promise<void> = Promise.resolve();
  const pumpOnce = async () => {
    if (budget <= 0) return;
    // Both files' sizes, then the reads, in order, within the budget; on this thread
    // (OutputFile), at most 256 KiB a read.
    for (const stream of streams) {
      if (stream.handle === undefined) {
        try {
          stream.handle = openOutputFile(stream.file, "r");
        } catch {
          continue; // not there yet
        }
      }
      stream.size = stream.handle.size();
    }
    for (const stream of streams) {
      if (budget <= 0) return;
      if (stream.handle === undefined) continue;
      const size = stream.size;
      const length = Math.min(size - stream.offset, budget, 256 * 1024);
      if (length <= 0) continue;
      const buffer = Buffer.alloc(length);
      const bytesRead = stream.handle.read(buffer, length, stream.offset);
      stream.offset += bytesRead;
      budget -= bytesRead;
      if (stream.kept !== undefined && stream.offset <= toolLimits.shellOutputBytes)
        stream.kept.push(buffer.subarray(0, bytesRead));
      else stream.kept = undefined;
      const text = stream.decoder.write(buffer.subarray(0, bytesRead));
      if (text.length > 0) context.emit(stream.name, text);
    }
  };
  return {
    pump() {
      busy = busy.then(pumpOnce, pumpOnce);
      return busy;
    },
    whole(name) {
      const stream = streams.find((candidate) => candidate.name === name);
      if (stream?.handle === undefined || stream.kept === undefined) return undefined;
      if (stream.offset !== stream.size) return undefined;
      return {
        text: Buffer.concat(stream.kept).toString("utf8"),
        bytes: stream.offset,
        truncated: false,
      };
    },
    async close() {
      await busy.catch(() => undefined);
      for (const stream of streams) stream.handle?.close();
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
