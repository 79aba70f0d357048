/**
 * Runs calls, once each per call id, whatever the gateway sends and however often.
 *
 * Invariants:
 *   W1 At most one execution per call id per worker process: a call id that is running is
 *      attached to (the running execution's result answers it), never started again. The
 *      `running` entry is created synchronously on receipt, before any await.
 *   W2 A finished call's outcome is written to the done-log before its result is sent, and a
 *      repeated call id is answered from the done-log without running anything. The result goes
 *      as soon as the record is in the file (a killed worker process leaves it there for the
 *      next); the record's flush to the disk follows, off the call's path, and the call's
 *      `afterRecorded` tasks (removing a job's folder, which recovery reads) wait for that flush.
 *   W3 Side effects are preceded by a durable `started` record; after a worker restart, a call
 *      with `started` but no `done` is recovered by its tool (shell attaches to the job it started,
 *      edit checks the file's hash), never blindly re-run.
 *   W4 Results stay in memory until the gateway acks them and are re-sent after a reconnect;
 *      chunks and progress are best effort (dropped while disconnected).
 *   W5 File operations (`files.*`, the files API's), the skill operations (`skills.*`,
 *      skill-operations.ts, SKW4), `ports.list` (the port previews') and `screens.*` (screens.ts)
 *      bypass the done-log: they are not tool calls a replay could repeat wrongly, and each is
 *      idempotent by design (file-operations.ts, FOP1; ports.list and screens.list are reads,
 *      screens.control sets a value, screens.snapshot reads the page). W1 and W4 still hold for them.
 *   W6 `mcp.tools` bypasses the done-log too (a listing); `mcp.call` goes through it: a repeated
 *      call id is answered from it (W2), and one a previous worker process started but did not
 *      finish answers `interrupted` (the MCP server may or may not have acted; never re-run).
 */
import {
  encodeFrame,
  frameBytes,
  isFileOperationName,
  isSkillOperationName,
  isPortOperationName,
  isScreenOperationName,
  screensControlInputSchema,
  screensListInputSchema,
  screensSnapshotInputSchema,
  isMcpOperationName,
  isToolName,
  mcpCallInputSchema,
  mcpToolsInputSchema,
  MAX_FRAME_BYTES,
  toolInputSchemas,
} from "../protocol/index.ts";
import type {
  CallFrame,
  ResultFrame,
  ScreensControlInput,
  ToolName,
  WorkerFrame,
} from "../protocol/index.ts";
import type { CallOutcome, DoneLog, StartedRecord } from "./done-log.ts";
import { editTool } from "./edit-tool.ts";
import { createFileOperations } from "./file-operations.ts";
import type { FileOperations } from "./file-operations.ts";
import { globTool, listTool } from "./list-tool.ts";
import type { SkillOperations } from "./skill-operations.ts";
import { listListeningPorts } from "./ports.ts";
import { browserTool } from "./browser-tool.ts";
import { desktopTool } from "./browser-desktop.ts";
import type { ScreenManager } from "./screens.ts";
import { ToolFailure } from "./tool-context.ts";
import type { McpServers } from "./mcp-servers.ts";
import { readTool } from "./read-tool.ts";
import { jobIdFor, shellStatusTool, shellTool } from "./shell-tool.ts";
import type { ShellOptions } from "./shell-tool.ts";
import { toToolError } from "./tool-context.ts";
import type { ToolContext } from "./tool-context.ts";
import type { WarmShell } from "./warm-shell.ts";
import { writeTool } from "./write-tool.ts";
import { jobsRoot, readJob } from "./jobs.ts";
import path from "node:path";

export interface CallRunnerOptions {
  workspace: string;
  stateDir: string;
  doneLog: DoneLog;
  /** Environment for commands. */
  commandEnv: Readonly<Record<string, string>>;
  /** Sourced by each command's shell just before the command (WorkerConfig.jobPrelude). */
  jobPrelude?: string | undefined;
  /** Job wrappers started ahead (warm-shell.ts); none: every `shell` call starts its own. */
  warmShell?: WarmShell | undefined;
  /** Sends a frame if connected; returns false when it could not. */
  send(frame: WorkerFrame): boolean;
  /** The largest frame the gateway accepts. @default () => MAX_FRAME_BYTES */
  maxFrameBytes?: () => number;
  /** @default true */
  fsync?: boolean;
  /** How often a `progress` frame is sent for each running call. @default 5000 */
  progressIntervalMs?: number;
  /** Results kept in memory until acked; older ones are answered from the done-log. @default 100 */
  maxUnackedResults?: number;
  shell?: ShellOptions;
  /** The files API's operations. @default created from `workspace` and `stateDir` */
  files?: FileOperations;
  /** The skill operations (`~/skills`); without them `skills.*` answers unknown_tool. */
  skills?: SkillOperations;
  /** The screens of the browser and computer tools; without them those tools answer `unavailable`. */
  screens?: ScreenManager;
  /** The computer's command MCP servers (mcp-servers.ts); without them `mcp.*` answers unknown_tool. */
  mcp?: McpServers;
  now?: () => number;
  log?: (line: string) => void;
  /** Each call answered once (not its re-sends): the worker's call metrics. */
  onAnswered?: (tool: string, ok: boolean) => void;
}

export interface CallRunner {
  handleCall(frame: CallFrame): void;
  handleAck(callId: string): void;
  handleCancel(callId: string): void;
  /** Call ids running now (the hello's `inflight`). */
  inflight(): string[];
  /** Re-sends results the gateway has not acked (after a reconnect). */
  resendUnacked(): void;
  /** Attaches to commands a previous worker process started and did not finish (W3). */
  recoverUnfinished(): Promise<void>;
  /** Resolves when nothing is running (for tests and orderly shutdown). */
  idle(): Promise<void>;
  close(): void;
}

type ToolRunner = (input: unknown, context: ToolContext) => Promise<unknown>;

interface Running {
  controller: AbortController;
  startedAt: number;
  done: Promise<void>;
  /** Set once the result went out (the entry lives on while cleanups run). */
  result: ResultFrame | undefined;
}

export function createCallRunner(options: CallRunnerOptions): CallRunner {
  const now = options.now ?? Date.now;
  const log = options.log ?? (() => undefined);
  const maxFrameBytes = options.maxFrameBytes ?? (() => MAX_FRAME_BYTES);
  const maxUnacked = options.maxUnackedResults ?? 100;
  const durable = options.fsync ?? true;
  const running = new Map<string, Running>();
  const unacked = new Map<string, ResultFrame>();
  const files =
    options.files ??
    createFileOperations({
      workspace: options.workspace,
      stateDir: options.stateDir,
      fsync: durable,
      now,
      log,
    });

  const tools: Record<ToolName, ToolRunner> = {
    shell: (input, context) =>
      shellTool(toolInputSchemas.shell.parse(input), context, options.shell),
    shell_status: (input, context) =>
      shellStatusTool(toolInputSchemas.shell_status.parse(input), context),
    read: (input, context) => readTool(toolInputSchemas.read.parse(input), context),
    write: (input, context) => writeTool(toolInputSchemas.write.parse(input), context),
    edit: (input, context) => editTool(toolInputSchemas.edit.parse(input), context),
    list: (input, context) => listTool(toolInputSchemas.list.parse(input), context),
    glob: (input, context) => globTool(toolInputSchemas.glob.parse(input), context),
    browser: (input, context) =>
      browserTool(toolInputSchemas.browser.parse(input), context, screensOrFail()),
    computer: (input, context) =>
      desktopTool(toolInputSchemas.computer.parse(input), context, screensOrFail()),
  };

  function screensOrFail(): ScreenManager {
    if (options.screens === undefined)
      throw new ToolFailure(
        "unavailable",
        "this worker has no screens (the browser is not set up here)",
      );
    return options.screens;
  }

  async function screenOperation(tool: string, input: unknown): Promise<unknown> {
    const parsed = (
      tool === "screens.control"
        ? screensControlInputSchema
        : tool === "screens.snapshot"
          ? screensSnapshotInputSchema
          : screensListInputSchema
    ).safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ToolFailure(
        "invalid_input",
        `invalid ${tool} input${issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`}: ${issue?.message ?? "schema mismatch"}`,
      );
    }
    const screens = screensOrFail();
    const data = parsed.data as Record<string, unknown>;
    switch (tool) {
      case "screens.control": {
        const control = data as ScreensControlInput;
        screens.control(control.screenId, control.controller);
        return { ok: true };
      }
      case "screens.snapshot":
        return screens.snapshot(String(data.screenId));
      default:
        return { screens: screens.list() };
    }
  }

  const progressTimer = setInterval(() => {
    const at = now();
    for (const [callId, entry] of running) {
      if (entry.result === undefined)
        options.send({ type: "progress", callId, elapsedMs: Math.max(0, at - entry.startedAt) });
    }
  }, options.progressIntervalMs ?? 5000);
  progressTimer.unref();

  function sendResult(tool: string, callId: string, outcome: CallOutcome): ResultFrame {
    options.onAnswered?.(tool, outcome.ok);
    const frame: ResultFrame = outcome.ok
      ? { type: "result", callId, ok: true, output: outcome.output }
      : { type: "result", callId, ok: false, error: outcome.error };
    unacked.delete(callId);
    unacked.set(callId, frame);
    if (unacked.size > maxUnacked) {
      const oldest = unacked.keys().next().value;
      if (oldest !== undefined) unacked.delete(oldest);
    }
    options.send(frame);
    return frame;
  }

  /** The outcome, or `output_too_large` when its result frame would not fit. */
  function fitted(callId: string, outcome: CallOutcome): CallOutcome {
    const size = frameBytes(encodeFrame({ type: "result", callId, ...outcome }));
    if (size <= maxFrameBytes()) return outcome;
    return {
      ok: false,
      error: {
        code: "output_too_large",
        message: `the result is ${size} bytes, over the ${maxFrameBytes()}-byte frame limit; ask for less (a line range, a smaller limit)`,
      },
    };
  }

  async function execute(frame: CallFrame, entry: Running): Promise<void> {
    const { callId } = frame;
    if (isFileOperationName(frame.tool)) {
      const outcome = await files.run({
        callId,
        tool: frame.tool,
        input: frame.input,
        signal: entry.controller.signal,
      }); // W5: no done-log
      entry.result = sendResult(frame.tool, callId, fitted(callId, outcome));
      return;
    }
    if (isSkillOperationName(frame.tool) && options.skills !== undefined) {
      const outcome = await options.skills.run({
        callId,
        tool: frame.tool,
        input: frame.input,
        signal: entry.controller.signal,
      }); // W5: no done-log
      entry.result = sendResult(frame.tool, callId, fitted(callId, outcome));
      return;
    }
    if (isPortOperationName(frame.tool)) {
      let outcome: CallOutcome;
      try {
        outcome = { ok: true, output: await listListeningPorts() }; // W5: a read, no done-log
      } catch (error) {
        outcome = { ok: false, error: toToolError(error) };
      }
      entry.result = sendResult(frame.tool, callId, fitted(callId, outcome));
      return;
    }
    if (isScreenOperationName(frame.tool)) {
      let outcome: CallOutcome;
      try {
        outcome = { ok: true, output: await screenOperation(frame.tool, frame.input) }; // W5: no done-log
      } catch (error) {
        outcome = { ok: false, error: toToolError(error) };
      }
      entry.result = sendResult(frame.tool, callId, fitted(callId, outcome));
      return;
    }
    if (isMcpOperationName(frame.tool) && options.mcp !== undefined) {
      await runMcp(frame, entry, options.mcp);
      return;
    }
    const record = await options.doneLog.get(callId);
    if (record?.state === "done") {
      sendResult(frame.tool, callId, record.outcome); // W2
      return;
    }
    if (!isToolName(frame.tool)) {
      sendResult(frame.tool, callId, {
        ok: false,
        error: {
          code: "unknown_tool",
          message: `this worker has no tool ${JSON.stringify(frame.tool)}`,
        },
      });
      return;
    }
    const schema = toolInputSchemas[frame.tool];
    const parsed = schema.safeParse(frame.input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where =
        issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
      sendResult(frame.tool, callId, {
        ok: false,
        error: {
          code: "invalid_input",
          message: `invalid ${frame.tool} input${where}: ${issue?.message ?? "schema mismatch"}`,
        },
      });
      return;
    }
    const previous = record?.state === "started" ? record : undefined;
    const afterRecorded: (() => Promise<unknown>)[] = [];
    const afterSent: (() => void)[] = [];
    const startedAt = previous === undefined ? now() : Date.parse(previous.startedAt);
    let marked = previous !== undefined;
    const context: ToolContext = {
      callId,
      botId: frame.botId,
      workspace: options.workspace,
      stateDir: options.stateDir,
      commandEnv: options.commandEnv,
      jobPrelude: options.jobPrelude,
      warmShell: options.warmShell,
      deadline: startedAt + frame.timeoutMs,
      signal: entry.controller.signal,
      emit: (stream, data) => {
        options.send({ type: "chunk", callId, stream, data });
      },
      markStarted: async (detail) => {
        if (marked) return;
        marked = true;
        await options.doneLog.markStarted(callId, frame.tool, {
          timeoutMs: frame.timeoutMs,
          tool: detail,
        }); // W3
      },
      afterRecorded: (task) => afterRecorded.push(task),
      afterSent: (task) => afterSent.push(task),
      previous:
        previous === undefined
          ? undefined
          : { ...previous, detail: (previous.detail as { tool?: unknown } | undefined)?.tool },
      durable,
      now,
    };

    let outcome: CallOutcome;
    try {
      outcome = { ok: true, output: await tools[frame.tool](parsed.data, context) };
    } catch (error) {
      outcome = { ok: false, error: toToolError(error) };
    }
    const recorded = await recordAndSend(frame, entry, fitted(callId, outcome), afterSent);
    if (recorded) for (const task of afterRecorded) await task().catch(() => undefined);
  }

  async function runMcp(frame: CallFrame, entry: Running, mcp: McpServers): Promise<void> {
    const { callId } = frame;
    const deadline = now() + frame.timeoutMs;
    const invalid = (message: string): CallOutcome => ({
      ok: false,
      error: { code: "invalid_input", message },
    });
    if (frame.tool === "mcp.tools") {
      const parsed = mcpToolsInputSchema.safeParse(frame.input);
      const outcome: CallOutcome = parsed.success
        ? {
            ok: true,
            output: await mcp.tools(parsed.data.servers, deadline, entry.controller.signal),
          }
        : invalid(`invalid mcp.tools input: ${parsed.error.issues[0]?.message ?? "schema"}`);
      entry.result = sendResult(frame.tool, callId, fitted(callId, outcome)); // W6: no done-log
      return;
    }
    const record = await options.doneLog.get(callId);
    if (record?.state === "done") {
      sendResult(frame.tool, callId, record.outcome); // W2
      return;
    }
    let outcome: CallOutcome;
    if (record?.state === "started") {
      outcome = {
        ok: false,
        error: {
          code: "interrupted",
          message:
            "the computer's worker restarted while this MCP call ran; it may or may not have taken effect (check before calling again)",
        },
      }; // W6
    } else {
      const parsed = mcpCallInputSchema.safeParse(frame.input);
      if (!parsed.success) {
        sendResult(
          frame.tool,
          callId,
          invalid(`invalid mcp.call input: ${parsed.error.issues[0]?.message ?? "schema"}`),
        );
        return;
      }
      await options.doneLog.markStarted(callId, frame.tool, { timeoutMs: frame.timeoutMs }); // W3
      try {
        outcome = {
          ok: true,
          output: await mcp.call(parsed.data, deadline, entry.controller.signal),
        };
      } catch (error) {
        outcome = { ok: false, error: toToolError(error) };
      }
    }
    await recordAndSend(frame, entry, fitted(callId, outcome));
  }

  /**
   * W2: the done record, and the result sent once it is in the file (its flush follows); the
   * result also goes when the record cannot be written. True once the record is durable.
   */
  async function recordAndSend(
    frame: CallFrame,
    entry: Running,
    outcome: CallOutcome,
    afterSent: readonly (() => void)[] = [],
  ): Promise<boolean> {
    const { callId } = frame;
    let sent = false;
    const send = () => {
      if (sent) return;
      sent = true;
      entry.result = sendResult(frame.tool, callId, outcome);
      for (const task of afterSent) {
        try {
          task();
        } catch {
          // ToolContext.afterSent: ignored
        }
      }
    };
    try {
      await options.doneLog.markDone(callId, frame.tool, outcome, send);
      return true;
    } catch (error) {
      log(`worker: could not record call ${callId} in the done-log: ${(error as Error).message}`);
      return false;
    } finally {
      send();
    }
  }

  function start(frame: CallFrame): void {
    const controller = new AbortController();
    const entry: Running = {
      controller,
      startedAt: now(),
      done: Promise.resolve(),
      result: undefined,
    };
    running.set(frame.callId, entry); // W1: synchronously, before any await
    entry.done = execute(frame, entry)
      .catch((error: unknown) => {
        // Only the done-log read or a bug gets here; the gateway will ask again.
        log(
          `worker: call ${frame.callId} failed inside the worker: ${(error as Error).stack ?? String(error)}`,
        );
        sendResult(frame.tool, frame.callId, {
          ok: false,
          error: { code: "internal", message: (error as Error).message },
        });
      })
      .finally(() => running.delete(frame.callId));
  }

  return {
    handleCall(frame) {
      options.send({ type: "ack", callId: frame.callId });
      const cached = unacked.get(frame.callId) ?? running.get(frame.callId)?.result;
      if (cached !== undefined) {
        options.send(cached);
        return;
      }
      if (running.has(frame.callId)) return; // W1: attach; its result goes out when it ends
      start(frame);
    },
    handleAck(callId) {
      unacked.delete(callId);
    },
    handleCancel(callId) {
      running.get(callId)?.controller.abort();
    },
    inflight() {
      return [...running]
        .filter(([, entry]) => entry.result === undefined)
        .map(([callId]) => callId);
    },
    resendUnacked() {
      for (const frame of unacked.values()) options.send(frame); // W4
    },
    async recoverUnfinished() {
      for (const record of await options.doneLog.listUnfinished()) {
        if (running.has(record.callId)) continue;
        const frame = await recoveryFrame(record);
        if (frame === undefined) continue; // recovered when the gateway repeats the call
        log(
          `worker: attaching to call ${record.callId} (${record.tool}) started before this worker restarted`,
        );
        start(frame);
      }
    },
    async idle() {
      while (running.size > 0) await Promise.all([...running.values()].map((entry) => entry.done));
    },
    close() {
      clearInterval(progressTimer);
    },
  };

  /** A foreground shell call whose job exists can be finished without the gateway's copy of the call. */
  async function recoveryFrame(record: StartedRecord): Promise<CallFrame | undefined> {
    if (record.tool !== "shell") return undefined;
    const job = await readJob(
      path.join(jobsRoot(options.stateDir), jobIdFor(record.callId, false)),
    );
    // Without a pid the wrapper may not have claimed the job yet; the shell tool starts another
    // wrapper and the claim lets only one of them run the command.
    if (job === undefined) return undefined;
    const timeoutMs = (record.detail as { timeoutMs?: number } | undefined)?.timeoutMs ?? 1;
    return {
      type: "call",
      callId: record.callId,
      tool: "shell",
      input: { command: job.meta.command, cwd: job.meta.cwd },
      timeoutMs,
    };
  }
}
