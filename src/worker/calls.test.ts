import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ResultFrame, WorkerFrame } from "../protocol/index.ts";
import { createCallRunner } from "./calls.ts";
import type { CallRunner } from "./calls.ts";
import { openDoneLog, type DoneLog } from "./done-log.ts";
import { jobsRoot, spawnJob } from "./jobs.ts";
import { jobIdFor } from "./shell-tool.ts";

let root: string;
let workspace: string;
let stateDir: string;
const runners: CallRunner[] = [];

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "roost-calls-"));
  workspace = path.join(root, "workspace");
  stateDir = path.join(root, "state");
  mkdirSync(workspace, { recursive: true });
  mkdirSync(stateDir, { recursive: true });
});

afterEach(async () => {
  for (const runner of runners.splice(0)) {
    await runner.idle();
    runner.close();
  }
  rmSync(root, { recursive: true, force: true });
});

async function startRunner(
  options: { maxFrameBytes?: number; wrapLog?: (log: DoneLog) => DoneLog } = {},
) {
  const sent: WorkerFrame[] = [];
  const doneLog = await openDoneLog(stateDir, { fsync: false });
  const runner = createCallRunner({
    workspace,
    stateDir,
    doneLog: options.wrapLog?.(doneLog) ?? doneLog,
    commandEnv: { PATH: "/usr/bin:/bin", HOME: root },
    fsync: false,
    send: (frame) => {
      sent.push(frame);
      return true;
    },
    ...(options.maxFrameBytes === undefined ? {} : { maxFrameBytes: () => options.maxFrameBytes! }),
    shell: { pollMs: 20 },
  });
  runners.push(runner);
  const results = (callId: string) =>
    sent.filter(
      (frame): frame is ResultFrame => frame.type === "result" && frame.callId === callId,
    );
  const result = async (callId: string) => {
    while (results(callId).length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    return results(callId)[0]!;
  };
  return { runner, sent, results, result, doneLog };
}

const shellCall = (callId: string, command: string, timeoutMs = 30_000) =>
  ({ type: "call", callId, tool: "shell", input: { command }, timeoutMs }) as const;

const runs = () => readFileSync(path.join(workspace, "runs"), "utf8").trim().split("\n").length;

describe("call runner", () => {
  it("screens: a worker without screens answers unavailable; a bad screens.control is invalid_input", async () => {
    const { runner, result } = await startRunner();
    runner.handleCall({
      type: "call",
      callId: "s1",
      tool: "screens.list",
      input: {},
      timeoutMs: 1000,
    });
    expect(await result("s1")).toMatchObject({ ok: false, error: { code: "unavailable" } });
    runner.handleCall({
      type: "call",
      callId: "s2",
      tool: "screens.control",
      input: { screenId: "../../etc", controller: null },
      timeoutMs: 1000,
    });
    expect(await result("s2")).toMatchObject({
      ok: false,
      error: { code: "invalid_input", message: expect.stringMatching(/at screenId/) },
    });
    runner.handleCall({
      type: "call",
      callId: "s3",
      tool: "browser",
      input: { action: "snapshot" },
      timeoutMs: 1000,
      botId: "bot_1",
    });
    expect(await result("s3")).toMatchObject({ ok: false, error: { code: "unavailable" } });
  });

  it("attaches a repeated call id that is still running instead of starting it again", async () => {
    const { runner, result, results } = await startRunner();
    runner.handleCall(shellCall("c1", "echo run >> runs; sleep 0.3; echo ok"));
    runner.handleCall(shellCall("c1", "echo run >> runs; sleep 0.3; echo ok"));
    expect(runner.inflight()).toEqual(["c1"]);
    const frame = await result("c1");
    expect(frame).toMatchObject({ ok: true, output: { stdout: "ok\n" } });
    await runner.idle();
    expect(results("c1")).toHaveLength(1);
    expect(runs()).toBe(1);
  });

  it("answers a finished call id from the done-log, also in a new worker process", async () => {
    const first = await startRunner();
    first.runner.handleCall(shellCall("c1", "echo run >> runs; date +%N"));
    const original = await first.result("c1");
    await first.runner.idle();
    first.runner.handleAck("c1");

    first.runner.handleCall(shellCall("c1", "echo run >> runs; date +%N"));
    expect(await first.result("c1")).toEqual(original);

    const restarted = await startRunner();
    restarted.runner.handleCall(shellCall("c1", "echo run >> runs; date +%N"));
    expect(await restarted.result("c1")).toEqual(original);
    expect(runs()).toBe(1);
  });

  it("re-sends an unacked result without touching the done-log", async () => {
    const { runner, result, sent } = await startRunner();
    runner.handleCall({ type: "call", callId: "r1", tool: "list", input: {}, timeoutMs: 1000 });
    await result("r1");
    await runner.idle();
    sent.length = 0;
    runner.resendUnacked();
    expect(sent).toMatchObject([{ type: "result", callId: "r1", ok: true }]);
    runner.handleAck("r1");
    sent.length = 0;
    runner.resendUnacked();
    expect(sent).toEqual([]);
  });

  it("attaches at start-up to a command a previous worker started, and records its result", async () => {
    // The previous worker: recorded `started`, spawned the job, then died.
    const previous = await startRunner();
    await previous.doneLog.markStarted("c1", "shell", { timeoutMs: 30_000 });
    const dir = path.join(jobsRoot(stateDir), jobIdFor("c1", false));
    const child = await spawnJob(
      dir,
      {
        jobId: jobIdFor("c1", false),
        callId: "c1",
        command: "echo run >> runs; sleep 0.3; echo finished",
        cwd: workspace,
        startedAt: Date.now(),
        deadlineAt: Date.now() + 30_000,
        background: false,
      },
      { PATH: "/usr/bin:/bin" },
    );
    child.unref();

    const restarted = await startRunner();
    await restarted.runner.recoverUnfinished();
    expect(restarted.runner.inflight()).toEqual(["c1"]);
    const frame = await restarted.result("c1");
    expect(frame).toMatchObject({ ok: true, output: { exitCode: 0, stdout: "finished\n" } });
    expect((await restarted.doneLog.get("c1"))?.state).toBe("done");
    expect(runs()).toBe(1);
  });

  it("two wrappers started for one job run the command once (the pid file is claimed exclusively)", async () => {
    const dir = path.join(jobsRoot(stateDir), "job_race");
    const meta = {
      jobId: "job_race",
      callId: "c",
      command: "echo run >> runs",
      cwd: workspace,
      startedAt: Date.now(),
      deadlineAt: null,
      background: false,
    };
    const children = await Promise.all([
      spawnJob(dir, meta, { PATH: "/usr/bin:/bin" }),
      spawnJob(dir, meta, { PATH: "/usr/bin:/bin" }),
    ]);
    const codes = await Promise.all(
      children.map((child) =>
        child.exitCode !== null
          ? Promise.resolve(child.exitCode)
          : new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code))),
      ),
    );
    expect(codes.sort()).toEqual([0, 97]);
    expect(runs()).toBe(1);
  });

  it("reports interrupted, and does not re-run, when the command vanished without an exit status", async () => {
    const { runner, result, doneLog } = await startRunner();
    await doneLog.markStarted("c1", "shell", { timeoutMs: 30_000 });
    const dir = path.join(jobsRoot(stateDir), jobIdFor("c1", false));
    mkdirSync(dir, { recursive: true });
    const gone = spawn("true");
    await new Promise((resolve) => gone.once("exit", resolve));
    writeFileSync(
      path.join(dir, "job.json"),
      JSON.stringify({
        jobId: "x",
        callId: "c1",
        command: "echo run >> runs",
        cwd: workspace,
        startedAt: Date.now(),
        deadlineAt: Date.now() + 30_000,
        background: false,
      }),
    );
    writeFileSync(path.join(dir, "pid"), `${gone.pid}\n`);
    runner.handleCall(shellCall("c1", "echo run >> runs"));
    const frame = await result("c1");
    expect(frame).toMatchObject({ ok: false, error: { code: "interrupted" } });
    expect(() => runs()).toThrow(); // never ran
  });

  it("a slow disk: the command starts only once its started record is written, though its files are made meanwhile (W3)", async () => {
    let preparedWhileMarking = false;
    const { runner, sent } = await startRunner({
      wrapLog: (doneLog) => ({
        ...doneLog,
        markStarted: async (...args) => {
          await new Promise((resolve) => setTimeout(resolve, 300)); // a flush that takes its time
          preparedWhileMarking = readdirSync(jobsRoot(stateDir)).length === 1;
          return doneLog.markStarted(...args);
        },
      }),
    });
    const journal = path.join(stateDir, "calls", "journal.jsonl");
    runner.handleCall(shellCall("c-order", `grep -c '"callId":"c-order"' ${journal}`));
    while (!sent.some((frame) => frame.type === "result"))
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sent.find((frame) => frame.type === "result")).toMatchObject({
      ok: true,
      output: { exitCode: 0, stdout: "1\n" }, // its own started record, and nothing else yet
    });
    expect(preparedWhileMarking).toBe(true);
  });

  it("a slow flush of the done record: the result is sent once the record is written, and the job's folder stays until the flush is done (W2)", async () => {
    let finishFlush: () => void = () => undefined;
    let flushing = false;
    const { runner, sent, doneLog } = await startRunner({
      wrapLog: (log) => ({
        ...log,
        markDone: async (callId, tool, outcome, written) => {
          await log.markDone(callId, tool, outcome, written);
          flushing = true;
          await new Promise<void>((resolve) => (finishFlush = resolve)); // a flush that takes its time
        },
      }),
    });
    runner.handleCall(shellCall("c-flush", "echo hi"));
    while (!flushing) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sent.find((frame) => frame.type === "result")).toMatchObject({
      callId: "c-flush",
      ok: true,
      output: { exitCode: 0, stdout: "hi\n" },
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readdirSync(jobsRoot(stateDir))).toHaveLength(1); // recovery's files, until the flush
    finishFlush();
    await runner.idle();
    expect(readdirSync(jobsRoot(stateDir))).toHaveLength(0);
    expect(await doneLog.get("c-flush")).toMatchObject({ state: "done" });
  });

  it("a write repeated after a restart reports what the first attempt replaced, not its own bytes", async () => {
    const file = path.join(workspace, "notes.md");
    const writeCall = (callId: string, content: string) =>
      ({
        type: "call",
        callId,
        tool: "write",
        input: { path: "notes.md", content },
        timeoutMs: 30_000,
      }) as const;
    writeFileSync(file, "first\n");
    const first = await startRunner();
    first.runner.handleCall(writeCall("w1", "second\n"));
    const original = await first.result("w1");
    expect(original).toMatchObject({ ok: true, output: { created: false, previous: "first\n" } });
    await first.runner.idle();
    // A new process answers the finished call from the done-log; the file already holds "second".
    const restarted = await startRunner();
    restarted.runner.handleCall(writeCall("w1", "second\n"));
    expect(await restarted.result("w1")).toEqual(original);
    // A worker that died after the rename, before recording `done`: its started record answers.
    await restarted.doneLog.markStarted("w2", "write", {
      timeoutMs: 30_000,
      tool: { created: false, previous: "second\n" },
    });
    writeFileSync(file, "third\n");
    restarted.runner.handleCall(writeCall("w2", "third\n"));
    expect(await restarted.result("w2")).toMatchObject({
      ok: true,
      output: { created: false, previous: "second\n" },
    });
    expect(readFileSync(file, "utf8")).toBe("third\n");
  });

  it("starts a command whose previous attempt recorded `started` but never spawned it", async () => {
    const { runner, result, doneLog } = await startRunner();
    await doneLog.markStarted("c1", "shell", { timeoutMs: 30_000 });
    runner.handleCall(shellCall("c1", "echo run >> runs; echo ran"));
    expect(await result("c1")).toMatchObject({ ok: true, output: { stdout: "ran\n" } });
    expect(runs()).toBe(1);
  });

  it("refuses unknown tools and invalid input with a clear error", async () => {
    const { runner, result } = await startRunner();
    runner.handleCall({ type: "call", callId: "u1", tool: "teleport", input: {}, timeoutMs: 1000 });
    runner.handleCall({
      type: "call",
      callId: "u2",
      tool: "read",
      input: { path: 42 },
      timeoutMs: 1000,
    });
    expect(await result("u1")).toMatchObject({ ok: false, error: { code: "unknown_tool" } });
    expect(await result("u2")).toMatchObject({
      ok: false,
      error: {
        code: "invalid_input",
        message: expect.stringMatching(/^invalid read input at path/),
      },
    });
  });

  it("turns a result over the frame limit into output_too_large", async () => {
    const { runner, result } = await startRunner({ maxFrameBytes: 10_000 });
    writeFileSync(path.join(workspace, "big.txt"), "y".repeat(50_000));
    runner.handleCall({
      type: "call",
      callId: "b1",
      tool: "read",
      input: { path: "big.txt" },
      timeoutMs: 1000,
    });
    expect(await result("b1")).toMatchObject({ ok: false, error: { code: "output_too_large" } });
  });

  it("cancels a running command", async () => {
    const { runner, result, sent } = await startRunner();
    runner.handleCall(shellCall("k1", "echo started; sleep 30"));
    while (!sent.some((frame) => frame.type === "chunk"))
      await new Promise((resolve) => setTimeout(resolve, 10));
    runner.handleCancel("k1");
    expect(await result("k1")).toMatchObject({ ok: false, error: { code: "cancelled" } });
  });

  it("acks every call it receives", async () => {
    const { runner, sent, result } = await startRunner();
    runner.handleCall({ type: "call", callId: "a1", tool: "list", input: {}, timeoutMs: 1000 });
    await result("a1");
    expect(sent[0]).toEqual({ type: "ack", callId: "a1" });
  });
});
