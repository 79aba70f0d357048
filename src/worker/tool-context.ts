/** What every tool receives, and the one error type tools throw. */
import os from "node:os";
import path from "node:path";
import type { ToolError, ToolErrorCode } from "../protocol/index.ts";
import type { StartedRecord } from "./done-log.ts";
import type { WarmShell } from "./warm-shell.ts";

export interface ToolContext {
  callId: string;
  /** The bot the call works for (the call frame's `botId`): browser and computer use its screen. */
  botId?: string | undefined;
  /** Relative paths resolve here; commands start here. */
  workspace: string;
  /** Durable directory; jobs live in `<stateDir>/jobs`. */
  stateDir: string;
  /** Environment for commands (the worker's own, minus its secrets). */
  commandEnv: Readonly<Record<string, string>>;
  /** A shell file sourced just before each command (WorkerConfig.jobPrelude). */
  jobPrelude?: string | undefined;
  /** Job wrappers started ahead of the calls that use them (warm-shell.ts); none: every start is cold. */
  warmShell?: WarmShell | undefined;
  /** When the call's time limit ends (epoch ms), counted from its first start. */
  deadline: number;
  /** Aborted when the gateway cancels the call. */
  signal: AbortSignal;
  /** Streams output to the gateway (best effort: dropped while disconnected). */
  emit(stream: "stdout" | "stderr", data: string): void;
  /**
   * Records, durably, that side effects are about to happen. Tools with side effects call it
   * once, before the first one; `detail` is what they need to recover after a worker restart.
   */
  markStarted(detail?: unknown): Promise<void>;
  /**
   * Runs `task` once the call's outcome is in the done-log (never before: a job's files are how
   * an unrecorded call is recovered). Failures are ignored; leftovers are pruned later.
   */
  afterRecorded(task: () => Promise<unknown>): void;
  /**
   * Runs `task` right after the call's result is sent (W2: before its done record's flush ends),
   * on the worker's thread. Throws are ignored.
   */
  afterSent(task: () => void): void;
  /** Set when a previous worker process started this call and died before finishing it. */
  previous: StartedRecord | undefined;
  /** fsync written files. */
  durable: boolean;
  now(): number;
}

/** A tool's failure, returned to the model as `{ok: false, error: {code, message}}`. */
export class ToolFailure extends Error {
  override readonly name = "ToolFailure";
  readonly code: ToolErrorCode;
  constructor(code: ToolErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Maps anything a tool threw to the error in its result. */
export function toToolError(error: unknown, subject?: string): ToolError {
  const failure = toToolFailure(error, subject);
  return { code: failure.code, message: failure.message };
}

/** Turns a thrown value (usually a Node file-system error) into a ToolFailure with a helpful message. */
export function toToolFailure(error: unknown, subject?: string): ToolFailure {
  if (error instanceof ToolFailure) return error;
  const code =
    typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
  const what =
    subject ??
    (typeof error === "object" && error !== null && "path" in error ? String(error.path) : "path");
  switch (code) {
    case "ENOENT":
      return new ToolFailure(
        "not_found",
        `${what} does not exist (check the path; list the parent directory to see what is there)`,
      );
    case "EACCES":
    case "EPERM":
      return new ToolFailure("permission_denied", `permission denied for ${what}`);
    case "EISDIR":
      return new ToolFailure(
        "is_directory",
        `${what} is a directory (use list to see its entries)`,
      );
    case "ENOTDIR":
      return new ToolFailure("not_a_directory", `a component of ${what} is not a directory`);
    default:
      return new ToolFailure(
        code === undefined ? "internal" : "io_error",
        error instanceof Error ? error.message : String(error),
      );
  }
}

/** Resolves a tool path: `~` and `~/x` against the home directory, relative paths against the workspace. */
export function resolveToolPath(workspace: string, input: string): string {
  if (input === "~") return os.homedir();
  if (input.startsWith("~/")) return path.join(os.homedir(), input.slice(2));
  return path.resolve(workspace, input);
}
